"""Open MPI really runs what ``hnow export --format ompi-rules`` chose, and hnow refuses the files Open MPI would
drop without a word.

On a 4-host virtual cluster, every rank reads its host's interface byte counter around one ``MPI_Bcast`` (as in
tests/cluster/test_export_mpich.py): the bytes each host sent, in units of the message, are the number of children
of that rank in the tree that ran. With the exported file and the settings of its ``ompi-env.txt`` the counts are
the chosen tree's (chain:2); above the exported size they are those of Open MPI's fixed rules (the pipeline from
1 MiB on 4 ranks) and without the file the fixed rules' (basic linear at 256 KiB). On shared memory, Open MPI's pml
monitoring shows the same, an invalid algorithm number in the file makes the bcast fail (so the file is read),
and a file Open MPI cannot parse runs the fixed rules silently - which is why hnow checks the file first.

Skipped, with the reason, where there is no Open MPI environment (``hnow setup-openmpi``), and for the cluster
test where there is no root or no network namespaces. Behaviour only, never timing."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

import hnowmodel.cluster as hc
from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.jobs import Launch, mpi_lock
from hnowmodel.jobs.mpienv import openmpi_missing
from hnowmodel.libraries.openmpi import rules as ompi_rules
from hnowmodel.trees import make_tree
from tests.helpers import COUNTERS as _COUNTERS
from tests.helpers import env_of_file as _mpich_env
from tests.helpers import run_hnow
from tests.helpers import sent_per_child as _sent_per_child

from . import four_hosts_spec, needs_netns

pytestmark = pytest.mark.mpi
MISSING = openmpi_missing()
needs_ompi = pytest.mark.skipif(bool(MISSING), reason=f"no Open MPI environment here: {MISSING}")

_M = 262144  # the exported size (bytes)
_ABOVE = 1 << 20  # above it: Open MPI's fixed rules run (the pipeline, on 4 ranks)


def _export(tmp_path) -> tuple[dict, object]:
    out = tmp_path / "ex"
    res = run_hnow(
        "export", "--profile", "paper", "--layout", "SFSF", "--format", "ompi-rules", "--ops", "bcast",
        "--sizes", str(_M), "-o", str(out), "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["ompi"], out


def _children(m: int, rules=None) -> list[int]:
    """Children per rank of the bcast tree Open MPI runs on 4 ranks for ``m`` bytes under ``rules`` (None: none)."""
    leaf = ompi_rules.runs(rules, "bcast", 4, m)
    nat = next(c for c in ops.native_choices("bcast", "Open MPI") if c.leaf == leaf)
    return make_tree(nat.model_tree, 4).nchildren.tolist()


def _launch(extra: list[str], argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """mpirun of the Open MPI environment on 4 ranks with hnow's settings (``extra``: placement, monitoring)."""
    where = Launch(np=4, mpi="openmpi").mpi_env
    fwd = [a for k in sorted({*where.env, "PYTHONUNBUFFERED"}) for a in ("-x", k)]
    return [where.launcher, *extra, "-n", "4", *where.launcher_args, *fwd, where.python, *argv], dict(where.env)


def _run(cmd: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    with mpi_lock():
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, stdin=subprocess.DEVNULL)


@needs_ompi
@needs_netns
def test_the_exported_rules_run_the_chosen_tree_and_the_fixed_rules_elsewhere(tmp_path, cleanup):
    name = f"xo{os.getpid() % 100000}"
    cleanup.append(name)
    sel, out = _export(tmp_path)
    (row,) = sel["rows"]
    assert (row["default"], row["chosen"]) == ("basic_linear", "chain:2")
    rules = ompi_rules.validate((out / "ompi-rules.conf").read_text())
    want, above, default = _children(_M, rules), _children(_ABOVE, rules), _children(_M)
    assert want == [2, 1, 0, 0] and above == [1, 1, 1, 0] and default == [3, 0, 0, 0]  # three different trees

    spec = four_hosts_spec(name)
    ls = hc.openmpi_launch_settings(hc.up(spec), 4)
    script = tmp_path / "counters.py"
    script.write_text(_COUNTERS)
    cmd, base = _launch(list(ls.mpiexec_args), [str(script), str(_M), str(_ABOVE)])
    with_file = {**_mpich_env(out, "ompi-env.txt"), **base, **ls.env}
    without = {k: v for k, v in with_file.items() if k != "OMPI_MCA_coll_tuned_dynamic_rules_filename"}
    runs = {what: _run(cmd, env) for what, env in (("file", with_file), ("default", without))}
    for what, r in runs.items():
        assert r.returncode == 0, (what, r.stderr[-2000:])
    sent, ok = _sent_per_child(runs["file"].stdout, _M)
    assert all(ok) and sent == want, (sent, want)
    assert _sent_per_child(runs["file"].stdout, _ABOVE)[0] == above  # above the exported size: the fixed rules
    assert _sent_per_child(runs["default"].stdout, _M)[0] == default


_PROBE = """
import sys
import numpy as np
from mpi4py import MPI
m = int(sys.argv[1])
MPI.COMM_WORLD.Bcast(np.zeros(m, np.uint8), root=0)
print("ran", flush=True)
"""


def _edges(run: subprocess.CompletedProcess, m: int) -> set[tuple[int, int]]:
    found = re.findall(r"^I\t(\d+)\t(\d+)\t(\d+) bytes", run.stdout + run.stderr, flags=re.M)
    return {(int(a), int(b)) for a, b, n in found if int(n) == m}


@needs_ompi
def test_open_mpi_reads_the_file_and_hnow_refuses_what_it_would_ignore(tmp_path):
    _, out = _export(tmp_path)
    good = (out / "ompi-rules.conf").read_text()
    assert "\n0 2 2 0 " in good  # from 0 B on 4 ranks: chain (2) with 2 chains
    script = tmp_path / "probe.py"
    script.write_text(_PROBE)
    mon = ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "2"]
    cmd, base = _launch(mon, [str(script), str(_M)])

    def run(text: str) -> subprocess.CompletedProcess:
        path = tmp_path / "rules.conf"
        path.write_text(text)
        env = {**_mpich_env(out, "ompi-env.txt"), **base, "OMPI_MCA_coll_tuned_dynamic_rules_filename": str(path)}
        return _run(cmd, env)

    ok = run(good)
    assert ok.returncode == 0 and ok.stdout.count("ran") == 4, ok.stderr[-2000:]
    chain2 = make_tree("ompi-chain:2", 4)
    assert _edges(ok, _M) == {(int(chain2.parent[c]), c) for c in range(1, 4)} == {(0, 1), (1, 2), (0, 3)}

    invalid = good.replace("\n0 2 2 0 ", "\n0 12 2 0 ")
    with pytest.raises(InputError, match="algorithm 12 does not exist"):
        ompi_rules.validate(invalid)  # hnow refuses it...
    bad = run(invalid)  # ...and Open MPI fails the bcast: it did read the file
    assert bad.returncode != 0 and "ran" not in bad.stdout, bad.stdout[-2000:]

    unreadable = good.replace("\n0 2 2 0 ", "\n8 2 2 0 ")  # the first rule must be for 0 B
    with pytest.raises(InputError, match="must be for 0"):
        ompi_rules.parse(unreadable)
    silent = run(unreadable)  # Open MPI drops the whole file without a word and runs its fixed rules
    assert silent.returncode == 0 and silent.stdout.count("ran") == 4, silent.stderr[-2000:]
    assert _edges(silent, _M) == {(0, 1), (0, 2), (0, 3)}  # basic linear
