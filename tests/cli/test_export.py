"""``hnow export``: the rank order for a native tree as a hydra hostfile, an Open MPI rankfile and split keys
(tests/cluster/test_export_order.py: hydra really starts the ranks in that order)."""

from __future__ import annotations

import json

import pytest

from hnowmodel.params import Profile, paper_profile
from tests.conftest import one_error_line, run_hnow


def _profile(tmp_path, hosts=("n1", "n2", "n3", "n4"), types=("fast", "fast", "slow", "slow")) -> str:
    doc = paper_profile().to_dict()
    doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(zip(hosts, types, strict=True))]
    p = tmp_path / "p.json"
    Profile.from_dict(doc).save(p)
    return str(p)


def test_files_say_the_same_order(tmp_path):
    prof = _profile(tmp_path)
    res = run_hnow("export", "--profile", prof, "--size", "0", "-o", str(tmp_path / "ex"), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["hosts"] == ["n1", "n3", "n2", "n4"] and doc["perm"] == [0, 2, 1, 3]
    assert doc["time_us"] < doc["baseline_us"]
    out = tmp_path / "ex"
    assert (out / "hostfile").read_text() == "n1:1\nn3:1\nn2:1\nn4:1\n"
    assert (out / "rankfile").read_text().splitlines() == [
        "rank 0=n1 slot=0",
        "rank 1=n3 slot=0",
        "rank 2=n2 slot=0",
        "rank 3=n4 slot=0",
    ]
    keys = json.loads((out / "keys.json").read_text())["keys"]
    assert [doc["perm"][k] for k in keys] == [0, 1, 2, 3]  # rank r's key is its new rank
    assert "mpiexec -n 4 -f hostfile" in (out / "USAGE.txt").read_text()
    res = run_hnow("export", "--profile", prof, "--format", "rankfile")
    assert res.returncode == 0 and res.stdout.startswith("rank 0=n1 slot=0\nrank 1=n3 slot=0\n")


@pytest.mark.parametrize(
    "args, says",
    [
        (["--format", "mpich"], "unknown --format 'mpich' (choose from: hostfile, rankfile, keys)"),
        (["--op", "allreduce", "--format", "keys"], "unknown operation 'allreduce'"),
        (["--size", "-4", "--format", "keys"], "size"),
        ([], "give -o FOLDER"),
    ],
)
def test_bad_input_is_one_line(tmp_path, args, says):
    res = run_hnow("export", "--profile", _profile(tmp_path), *args)
    assert res.returncode == 2 and one_error_line(res.stderr) and says in res.stderr, res.stderr


def test_refuses_a_profile_without_hosts_and_a_full_folder(tmp_path):
    p = tmp_path / "bare.json"
    paper_profile().save(p)
    res = run_hnow("export", "--profile", str(p), "--format", "hostfile")
    assert res.returncode == 2 and "records no hosts" in res.stderr
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("mine")
    res = run_hnow("export", "--profile", _profile(tmp_path), "-o", str(full))
    assert res.returncode == 2 and "not empty" in res.stderr and (full / "x").read_text() == "mine"
