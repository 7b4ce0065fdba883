"""The Intel MPI Benchmarks as an outside reference (``hnow bench imb``, ``hm.imb_compare``): the wheel's IMB-MPI1
runs with the algorithm hnow pins, under Intel MPI and under MPICH (whose libmpi.so.12 it loads: same ABI), and its
rows stand beside hnow's measured and predicted ones.

The runs are functional (2 ranks, one host, tiny sizes): they assert the structure, never a time. Skipped, with the
reason, where the Intel MPI environment (``hnow setup-intelmpi``, which brings IMB-MPI1) is missing."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hnowmodel import ops, paper_profile
from hnowmodel.errors import InputError
from hnowmodel.jobs.imb_job import IMB_BENCHMARKS, _no_burst, imb_arguments, imb_default_ops, imb_program
from hnowmodel.jobs.mpienv import intelmpi_missing, intelmpi_venv
from hnowmodel.trees import make_tree
from tests.helpers import one_error_line

MISSING = intelmpi_missing()
needs_impi = pytest.mark.skipif(bool(MISSING), reason=f"no Intel MPI environment here: {MISSING}")


def test_imb_runs_each_size_as_often_as_asked_at_root_0_with_a_barrier_between_calls():
    args = imb_arguments(["bcast", "gather"], 6, "f.txt", 30, True)
    assert args[:3] == ["Bcast", "Gather", "PingPong"]
    pairs = dict(zip(args[3::2], args[4::2], strict=True))
    assert pairs == {
        "-npmin": "6",
        "-msglen": "f.txt",
        "-iter": "30",
        "-iter_policy": "off",  # no fewer repetitions for large messages
        "-time": "600",
        "-root_shift": "off",  # root 0 every time, as hnow's root
        "-sync": "on",
    }
    assert "-red_data_type" not in args  # no reduction: IMB's datatypes as they were
    assert set(IMB_BENCHMARKS) == set(ops.names())  # IMB-MPI1 has a benchmark of every registered operation


def test_imb_sums_hnows_doubles_and_runs_the_registrys_benchmarks():
    """A reduction among the operations makes IMB sum doubles (MPI_SUM is IMB's op either way), as hnow's
    reductions do; each operation runs the benchmark its registry entry names."""
    args = imb_arguments(["allreduce", "reduce", "allgather", "reduce_scatter", "alltoall"], 2, "f.txt", 5, False)
    assert args[:5] == ["Allreduce", "Reduce", "Allgather", "Reduce_scatter_block", "Alltoall"]
    assert args[args.index("-red_data_type") + 1] == "double"
    assert "-red_data_type" not in imb_arguments(["allgather", "alltoall"], 2, "f.txt", 5, False)
    # by default the operations the tree spec names an algorithm of under the library
    assert imb_default_ops("native", "Intel MPI") == tuple(ops.names())
    assert imb_default_ops("native:ring", "Intel MPI") == ("allreduce", "allgather")
    assert imb_default_ops("native", "MPICH") == tuple(ops.names())


def test_imbs_rows_join_hnows_by_the_registrys_m():
    """IMB's real output (MPICH, 2 ranks) joined with hnow's rows by operation and m: every benchmark IMB ran for an
    operation of the comparison, not IMB's other benchmark of it (Reduce_scatter, whose #bytes is the whole
    vector)."""
    from types import SimpleNamespace

    from hnowmodel.jobs.imb_job import ImbSettings, _join

    text = (Path(__file__).resolve().parents[1] / "data" / "outside" / "imb_mpich_collectives_2ranks.txt").read_text()
    s = ImbSettings(ops=("allreduce", "reduce_scatter"), sizes=(1024, 2048), pingpong=False)

    def ours(op: str, m: int):
        return SimpleNamespace(tree="native", op=op, size=m, measured_us=5.0, predicted_us=None, variant="paper",
                               method="fig2", extra={"sync_median_us": 4.0}, model_tree="")  # fmt: skip

    cmp = SimpleNamespace(rows=[ours(op, m) for op in s.ops for m in s.sizes])
    rows, pp = _join(text, cmp, paper_profile(), ["fast", "fast"], s, "MPICH")
    assert pp == ()
    got = {(r.op, r.size): r.imb_t_max_us for r in rows}
    assert got == {
        ("allreduce", 1024): 1.10,
        ("allreduce", 2048): 1.46,
        ("reduce_scatter", 1024): 31.10,  # Reduce_scatter_block's #bytes 1024, not Reduce_scatter's 2048
        ("reduce_scatter", 2048): 2.99,
    }
    assert all(r.measured_other_us == 4.0 and r.loop_effect_pct == pytest.approx(25.0) for r in rows)


def test_open_mpi_and_a_testbed_are_refused_in_one_line(hnow):
    with pytest.raises(InputError, match="libmpi.so.12, MPICH's ABI"):
        imb_program("openmpi")
    p = hnow("bench", "imb", "--np", "2", "--profile", "paper", "--testbed", "paper")
    assert p.returncode == 2 and one_error_line(p.stderr) and "not on --testbed" in p.stderr, p.stderr
    p = hnow("bench", "imb", "--np", "2")
    assert p.returncode == 2 and "--profile is required" in p.stderr, p.stderr


def test_empty_buckets_cost_what_the_burst_term_says():
    """IMB's back-to-back loop finds the token buckets empty: the prediction without the burst is slower by what the
    burst lets through at once, and a profile without a burst is unchanged."""
    prof = paper_profile()
    assert _no_burst(prof) is prof
    ext = {**dict(prof.extensions or {}), "network": {"burst_bytes": 8192}}
    bursty = replace(prof, extensions=ext)
    empty = _no_burst(bursty)
    assert empty.extensions["network"]["burst_bytes"] == 0 and bursty.extensions["network"]["burst_bytes"] == 8192
    lay, tree = ["fast", "slow", "slow"], make_tree("binomial", 3)
    full = ops.predict("bcast", bursty, lay, tree, [65536], variant="flow")
    none = ops.predict("bcast", empty, lay, tree, [65536], variant="flow")
    assert float(none[0]) > float(full[0])


@needs_impi
def test_under_mpich_imb_loads_mpichs_libmpi():
    """IMB-MPI1 carries no run path: the libmpi.so.12 it loads is the one LD_LIBRARY_PATH names - MPICH's under
    MPICH, the Intel wheel's under Intel MPI (the dynamic loader says so)."""
    for lib in ("mpich", "intelmpi"):
        imb, libdir = imb_program(lib)
        assert imb == intelmpi_venv() / "bin" / "IMB-MPI1" and (libdir / "libmpi.so.12").is_file()
        out = subprocess.run(
            ["ldd", str(imb)], capture_output=True, text=True, env={**os.environ, "LD_LIBRARY_PATH": str(libdir)}
        ).stdout
        line = next(ln for ln in out.splitlines() if "libmpi.so.12" in ln)
        assert str(libdir / "libmpi.so.12") in line, out
    assert imb_program("mpich")[1] != imb_program("intelmpi")[1]


@pytest.mark.mpi
@needs_impi
@pytest.mark.parametrize("mpi", ["intelmpi", "mpich"])
def test_hnow_bench_imb_puts_imb_beside_hnow_on_two_ranks(hnow, mpi, tmp_path):
    out = tmp_path / "imb"
    p = hnow(
        *("bench", "imb", "--np", "2", "--mpi", mpi, "--profile", "paper", "--layout", "fast,fast"),
        *("--sizes", "1K,4K", "--iters", "3", "--reps", "2", "--tree", "native:binomial", "-o", str(out), "--json"),
        *("--ops", "bcast,scatter,gather"),  # MPICH's binomial reduce too by default: the tree operations here
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["library"] == {"intelmpi": "Intel MPI", "mpich": "MPICH"}[mpi] and doc["tree"] == "native:binomial"
    got = {(r["op"], r["size"]) for r in doc["rows"]}
    assert got == {(op, m) for op in ("bcast", "scatter", "gather") for m in (1024, 4096)}
    for r in doc["rows"]:
        assert r["np"] == 2 and r["imb_t_max_us"] > 0 and r["predicted_us"] > 0, r
        assert r["imb_repetitions"] == 3 and r["model_tree"].startswith("binomial"), r
        # hnow timed IMB's loop (fig2, the default) and its own single calls (sync) beside it
        assert r["method"] == "fig2" and r["other_method"] == "sync" and r["measured_other_us"] > 0, r
        want = 100 * (r["measured_us"] - r["imb_t_max_us"]) / r["imb_t_max_us"]
        assert np.isclose(r["measured_vs_imb_pct"], want), r
    assert [c["size"] for c in doc["pingpong"]] == [1024, 4096]
    assert "-npmin" in doc["command"] and doc["command"][0] == "IMB-MPI1"
    assert sorted(os.listdir(out)) == ["imb.txt", "imb_compare.csv", "imb_compare.md"]
    assert "Benchmarking Bcast" in (out / "imb.txt").read_text()


def test_the_prediction_meets_imb_only_where_imbs_loop_changes_the_time_little():
    from hnowmodel.jobs import LOOP_NEGLIGIBLE_PCT, ImbRow

    def row(loop_us: float, method: str = "fig2") -> ImbRow:
        single = 100.0
        meas, other = (loop_us, single) if method == "fig2" else (single, loop_us)
        return ImbRow(
            "bcast", 65536, 6, 104.0, None, None, 20, meas, 103.0, 120.0,
            method=method, other_method="fig2" if method == "sync" else "sync", measured_other_us=other,
        )  # fmt: skip

    near = row(100.0 + LOOP_NEGLIGIBLE_PCT * 0.9)
    assert near.loop_effect_pct == pytest.approx(LOOP_NEGLIGIBLE_PCT * 0.9)
    assert near.predicted_vs_imb_pct == pytest.approx(100.0 * (103.0 - 104.0) / 104.0)  # the single-call prediction
    far = row(109.0)  # IMB's loop 9 % slower than single calls (a linear scatter at 64 KiB): not compared
    assert far.loop_effect_pct == pytest.approx(9.0) and far.predicted_vs_imb_pct is None
    assert row(109.0, "sync").loop_effect_pct == pytest.approx(9.0)  # whichever method is the row's own
    alone = ImbRow("bcast", 65536, 6, 104.0, None, None, 20, 100.0, 103.0, 120.0, method="fig2")
    assert alone.loop_effect_pct is None and alone.predicted_vs_imb_pct is None  # without sync: nothing to tell


@pytest.mark.mpi
@needs_impi
def test_hnow_bench_imb_runs_imbs_allreduce_on_hnows_doubles(hnow):
    """IMB's Allreduce under MPICH, on doubles, beside hnow's measurement of MPICH's own allreduce at the same m
    (the paper profile has no reduction cost: no prediction, and the row says so by None)."""
    p = hnow(
        *("bench", "imb", "--ops", "allreduce", "--np", "2", "--sizes", "16K,64K", "--mpi", "mpich"),
        *("--profile", "paper", "--layout", "fast,fast", "--iters", "3", "--reps", "2", "--no-pingpong", "--json"),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["command"][1] == "Allreduce" and doc["command"][-2:] == ["-red_data_type", "double"]
    assert [(r["op"], r["size"]) for r in doc["rows"]] == [("allreduce", 16384), ("allreduce", 65536)]
    for r in doc["rows"]:  # at 16 KiB and more the allreduce outlasts the barrier fig2 subtracts (1 KiB did not)
        assert r["imb_t_max_us"] > 0 and r["measured_us"] > 0 and r["imb_repetitions"] == 3, r
        assert r["predicted_us"] is None and r["predicted_vs_imb_pct"] is None, r
