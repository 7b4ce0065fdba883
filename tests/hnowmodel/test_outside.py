"""``hnow import imb|osu FILE``: outside benchmarks' output read into rows, ping-pong rows checked against a profile.

The IMB fixture is real output of the Intel MPI wheel's IMB-MPI1 (2 ranks, small sizes; the command that made it is
its first line); the OSU fixture is written by hand in the format OSU's documentation and programs print (its
numbers are illustrative): tests/data/outside/README.md. No MPI here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.outside import load_outside, parse_imb, parse_osu
from hnowmodel.params import paper_profile
from hnowmodel.trees import make_tree

DATA = Path(__file__).resolve().parents[1] / "data" / "outside"
IMB = DATA / "imb_2ranks.txt"
OSU = DATA / "osu_format.txt"


def test_imb_output_becomes_one_row_per_benchmark_and_size():
    rows, header = parse_imb(IMB.read_text())
    by = {}
    for r in rows:
        by.setdefault(r.benchmark, []).append(r)
    assert set(by) == {"PingPong", "Bcast", "Scatter", "Gather"}
    assert "Intel(R) MPI Benchmarks" in header["suite"]
    pp = by["PingPong"]
    assert [r.size for r in pp] == [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    assert all(r.op == "pingpong" and r.np == 2 and r.t_us > 0 and r.repetitions for r in pp)
    for name, op in (("Bcast", "bcast"), ("Scatter", "scatter"), ("Gather", "gather")):
        coll = by[name]
        assert all(r.op == op and r.np == 2 for r in coll)
        # the headline of a collective is t_max; t_min <= t_avg <= t_max as IMB computes them
        assert all(r.t_us == r.t_max_us and r.t_min_us <= r.t_avg_us <= r.t_max_us for r in coll if r.size)


def test_osu_output_from_the_documented_format():
    rows, header = parse_osu(OSU.read_text(), np=2)
    assert header["version"] == "v7.3"
    lat = [r for r in rows if r.op == "pingpong"]
    assert [(r.size, r.t_us) for r in lat] == [(0, 0.21), (1, 0.22), (1024, 0.61), (65536, 9.87)]
    assert not [r for r in rows if "Bandwidth" in r.benchmark]  # bandwidth tables carry no latency: skipped
    bc = [r for r in rows if r.op == "bcast"]
    assert [(r.size, r.t_us, r.np) for r in bc] == [(1, 1.58, 2), (1024, 2.4, 2), (65536, 21.07, 2)]
    g = [r for r in rows if r.op == "gather"]
    assert (g[1].t_min_us, g[1].t_max_us, g[1].repetitions) == (30.0, 60.2, 100)


def test_pingpong_rows_are_checked_against_the_profile():
    """Predicted one-way time = the model's 2-rank bcast between the pair's node types; error_pct as hnow's."""
    prof = paper_profile()
    res = load_outside("osu", OSU, profile=prof, layout="fast,slow")
    assert [c.size for c in res.checks] == [0, 1, 1024, 65536]
    want = ops.predict("bcast", prof, ("fast", "slow"), make_tree("binomial", 2), [1024])[0]
    c = res.checks[2]
    assert c.predicted_us == pytest.approx(float(want)) and c.measured_us == 0.61 and c.pair == ("fast", "slow")
    assert c.error_pct == pytest.approx(100 * (c.predicted_us - 0.61) / 0.61)
    assert [r.op for r in res.collective_rows()] == ["bcast"] * 3 + ["gather"] * 2
    doc = json.loads(json.dumps(res.to_dict()))
    assert doc["checks"][2]["error_pct"] == pytest.approx(c.error_pct)


def test_bad_input_names_the_problem(tmp_path):
    with pytest.raises(InputError, match="choose from: imb, osu"):
        load_outside("skampi", OSU)
    with pytest.raises(InputError, match="no such file"):
        load_outside("imb", tmp_path / "none.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("# Benchmarking PingPong\n# #processes = 2\n  #bytes #repetitions t[usec] Mbytes/sec\n 0 10 x 1\n")
    with pytest.raises(InputError, match="IMB line 4"):
        load_outside("imb", bad)
    with pytest.raises(InputError, match="no table"):
        load_outside("osu", bad)
    with pytest.raises(InputError, match="2 ranks, got 3"):
        load_outside("osu", OSU, profile=paper_profile(), layout="fast,slow,slow")


def test_hnow_import_prints_the_check_and_the_table(hnow):
    p = hnow("import", "imb", str(IMB), "--profile", "paper", "--layout", "fast,fast")
    assert p.returncode == 0, p.stderr
    assert "ping-pong (one way) against the profile: fast -> fast" in p.stdout and "error_%" in p.stdout
    assert "Bcast" in p.stdout and "Gather" in p.stdout
    p = hnow("import", "osu", str(OSU), "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["suite"] == "osu", p.stderr
    p = hnow("import", "lam", str(OSU))
    assert p.returncode == 2 and "invalid choice: 'lam'" in p.stderr


def test_a_pingpong_on_one_host_is_predicted_through_shared_memory():
    import dataclasses

    from hnowmodel.params import Link, NodeType, ShmCosts

    prof = dataclasses.replace(
        paper_profile(), shm={"fast": ShmCosts(NodeType("fast", 0.1, 0, 0.1, 0), Link(0.05, 1e-4))}
    )
    one_host = load_outside("osu", OSU, profile=prof, layout="fast/2").checks
    two_hosts = load_outside("osu", OSU, profile=prof, layout="fast,fast").checks
    assert [c.predicted_us for c in one_host] == pytest.approx([0.25, 0.2501, 0.3524, 6.8036])
    assert two_hosts[0].predicted_us == pytest.approx(170.0) and one_host[0].pair == ("fast", "fast")
    # the default pair is the profile's first two ranks on their calibration hosts
    doc = prof.to_dict()
    doc["nodes"] = [{"rank": 0, "host": "n1", "type": "fast"}, {"rank": 1, "host": "n1", "type": "fast"}]
    calibrated = type(prof).from_dict(doc)
    assert load_outside("osu", OSU, profile=calibrated).checks[0].predicted_us == pytest.approx(0.25)


IMB_COLL = DATA / "imb_mpich_collectives_2ranks.txt"
OSU_COLL = DATA / "osu_collectives_format.txt"


def test_imb_output_of_the_reductions_allgather_and_alltoall():
    """Real IMB-MPI1 output (MPICH, 2 ranks, -red_data_type double): each benchmark is the registry's operation,
    its #bytes the registry's m (Reduce_scatter's, the whole vector split in two, halves; one double does not
    split), the reductions combined hnow's doubles."""
    rows, header = parse_imb(IMB_COLL.read_text())
    assert header["MPI_Datatype for reductions"] == "MPI_DOUBLE" and header["MPI_Datatype"] == "MPI_BYTE"
    by = {}
    for r in rows:
        by.setdefault(r.benchmark, []).append(r)
    ops_of = {b: {r.op for r in rs} for b, rs in by.items()}
    assert ops_of == {
        "Allreduce": {"allreduce"},
        "Reduce": {"reduce"},
        "Allgather": {"allgather"},
        "Reduce_scatter_block": {"reduce_scatter"},
        "Reduce_scatter": {"reduce_scatter"},
        "Alltoall": {"alltoall"},
    }
    sizes = [0, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    for name in ("Allreduce", "Reduce", "Allgather", "Reduce_scatter_block", "Alltoall"):
        assert [r.size for r in by[name]] == sizes and all(r.m_bytes == r.size and r.np == 2 for r in by[name])
    assert [r.m_bytes for r in by["Reduce_scatter"]][:4] == [0, None, 8, 16]  # 8 B = 1 double: no equal halves
    assert [r.m_bytes for r in by["Reduce_scatter"]][-1] == 2048
    for r in rows:
        reduction = ops.get(r.op).reduction
        assert r.datatype == ("MPI_DOUBLE" if reduction else "MPI_BYTE"), r
        assert r.as_hnow is (r.m_bytes is not None), r
        assert r.t_us == r.t_max_us and r.t_min_us <= r.t_avg_us <= r.t_max_us


def test_imbs_default_float_reduction_is_not_hnows():
    """Without -red_data_type IMB sums floats (its header says so; the older fixture's): the row's m is the same
    bytes, but it is not what hnow runs (as_hnow False); a header that says nothing means IMB's default, float."""
    text = IMB.read_text().replace("Benchmarking Gather", "Benchmarking Allreduce")
    rows, header = parse_imb(text)
    assert header["MPI_Datatype for reductions"] == "MPI_FLOAT"
    red = [r for r in rows if r.op == "allreduce"]
    assert red and all(r.datatype == "MPI_FLOAT" and r.as_hnow is False and r.m_bytes == r.size for r in red)
    bare = "# Benchmarking Allreduce\n# #processes = 2\n #bytes #repetitions t_min[usec] t_max[usec] t_avg[usec]\n"
    (row,) = parse_imb(bare + " 1024 10 1.0 2.0 1.5\n")[0]
    assert row.datatype == "MPI_FLOAT" and row.as_hnow is False
    # the tree operations keep their rows: m is IMB's #bytes, the buffers are bytes
    assert all(r.m_bytes == r.size and r.datatype == "MPI_BYTE" and r.as_hnow for r in rows if r.op == "bcast")


def test_osu_output_of_the_reductions_allgather_and_alltoall():
    """OSU's titles name the operations (All-to-All Personalized Exchange is alltoall); osu_reduce_scatter's and
    osu_reduce_scatter_block's size is the whole vector (m = size / np in whole elements); the datatype is the
    table's '# Datatype:' (MPI_CHAR reduced as MPI_SIGNED_CHAR), MPI_FLOAT for an OSU before 7."""
    rows, header = parse_osu(OSU_COLL.read_text(), np=2)
    got = [(r.op, r.size, r.m_bytes, r.datatype, r.as_hnow) for r in rows]
    assert got == [
        ("allreduce", 8, 8, "MPI_DOUBLE", True),
        ("allreduce", 1024, 1024, "MPI_DOUBLE", True),
        ("allreduce", 65536, 65536, "MPI_DOUBLE", True),
        ("reduce", 1, 1, "MPI_SIGNED_CHAR", False),
        ("reduce", 1024, 1024, "MPI_SIGNED_CHAR", False),
        ("allgather", 1, 1, "MPI_CHAR", True),
        ("allgather", 65536, 65536, "MPI_CHAR", True),
        ("alltoall", 1, 1, "MPI_CHAR", True),
        ("alltoall", 65536, 65536, "MPI_CHAR", True),
        ("reduce_scatter", 4, None, "MPI_FLOAT", False),  # one float on two ranks: blocks of 1 and 0
        ("reduce_scatter", 8, 4, "MPI_FLOAT", False),
        ("reduce_scatter", 4096, 2048, "MPI_FLOAT", False),
        ("reduce_scatter", 8, 4, "MPI_INT", False),  # osu_reduce_scatter_block (OSU 7.5)
        ("reduce_scatter", 4096, 2048, "MPI_INT", False),
        ("allreduce", 4, 4, "MPI_FLOAT", False),  # OSU 5.6.3: floats, no datatype line
        ("allreduce", 1024, 1024, "MPI_FLOAT", False),
    ]
    assert [r.benchmark for r in rows if r.op == "alltoall"][0] == "All-to-All Personalized Exchange Latency"
    red = [r for r in rows if r.op == "reduce"]
    assert (red[1].t_min_us, red[1].t_max_us, red[1].repetitions) == (1.2, 2.54, 1000)
    # without the process count the whole vector has no per-rank block
    assert {r.m_bytes for r in parse_osu(OSU_COLL.read_text())[0] if r.op == "reduce_scatter"} == {None}


def test_an_outside_size_becomes_the_registrys_m():
    """Every registered outside name converts: its size is m, except the whole-vector ones (outside_total)."""
    from hnowmodel.outside import registry_m

    for o in ops.OPERATIONS.values():
        for name in o.outside_names:
            for suite in ("imb", "osu"):
                whole = f"{suite}:{name}" in o.outside_total
                assert registry_m(suite, name, 4096, 4, "MPI_DOUBLE") == (1024 if whole else 4096), (suite, name)
    assert registry_m("imb", "reduce_scatter", 48, 3, "MPI_DOUBLE") == 16  # 6 doubles, 2 per rank
    assert registry_m("imb", "reduce_scatter", 40, 3, "MPI_DOUBLE") is None  # 5 doubles do not split in 3
    assert registry_m("imb", "reduce_scatter", 12, 3, "MPI_DOUBLE") is None  # not whole doubles
    assert registry_m("osu", "latency", 64, None) == 64 and registry_m("imb", "pingpong", 64, 2) == 64
    assert registry_m("imb", "barrier", 64, 2) is None
    # IMB's Reduce_scatter_block counts each rank's block, as hnow's m; OSU's counts all of them
    assert registry_m("imb", "reduce_scatter_block", 1024, 4) == 1024
    assert registry_m("osu", "reduce_scatter_block", 1024, 4, "MPI_FLOAT") == 256


def test_hnow_import_shows_each_rows_m(hnow):
    p = hnow("import", "osu", str(OSU_COLL), "--np", "2", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    rs = [r for r in doc["rows"] if r["op"] == "reduce_scatter"]
    assert [(r["size"], r["m_bytes"]) for r in rs][:3] == [(4, None), (8, 4), (4096, 2048)]
    p = hnow("import", "imb", str(IMB_COLL))
    assert p.returncode == 0, p.stderr
    assert "m_bytes" in p.stdout and "Reduce_scatter_block" in p.stdout and "MPI_DOUBLE" in p.stdout
