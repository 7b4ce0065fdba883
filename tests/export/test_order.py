"""``hnow export``: the rank order for a native tree as a hydra hostfile, an Open MPI rankfile and split keys
(tests/cluster/test_export_order.py: hydra really starts the ranks in that order)."""

from __future__ import annotations

import json

import pytest

from hnowmodel.params import paper_profile
from tests.helpers import one_error_line, run_hnow
from tests.helpers import profile_with_hosts as _profile


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
        (
            ["--format", "mpich"],
            "unknown --format 'mpich' (choose from: hostfile, rankfile, keys, mpich-json, ompi-rules, impi-env)",
        ),
        (["--op", "barrier", "--format", "keys"], "unknown operation 'barrier'"),
        (["--op", "allreduce", "--format", "keys"], "export of allreduce: not yet supported"),
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


def _needs_mpich() -> None:
    from hnowmodel.errors import InputError
    from hnowmodel.libraries.mpich import selection as mpich

    try:
        mpich.find_libmpi()
    except InputError as e:
        pytest.skip(f"no MPICH library here: {e}")


def test_mpich_json_with_its_settings_and_the_choice_per_size_range(tmp_path):
    _needs_mpich()
    out = tmp_path / "ex"
    args = ["export", "--profile", "paper", "--layout", "FFSF", "--format", "mpich-json", "--ops", "bcast,gather"]
    res = run_hnow(*args, "--sizes", "16K,256K", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["USAGE.txt", "mpich-coll.json", "mpich-env.txt"]
    assert "bcast" in res.stdout and "gain_%" in res.stdout and "mpich-coll.json" in res.stdout
    env = (out / "mpich-env.txt").read_text()
    assert f"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={out.resolve()}/mpich-coll.json" in env
    table = json.loads((out / "mpich-coll.json").read_text())
    assert "collective=allreduce" in table  # the whole default table, not only what changed
    res = run_hnow(*args, "--sizes", "16K,256K", "--json")
    doc = json.loads(res.stdout)["mpich"]
    assert doc["comm_size"] == 4 and {r["op"] for r in doc["rows"]} == {"bcast", "gather"}
    bcast = [r for r in doc["rows"] if r["op"] == "bcast"]
    assert all(r["default"] == "binomial" and r["chosen"] != "binomial" and r["gain_pct"] > 0 for r in bcast)
    assert doc["entries"]["bcast"] and doc["entries"]["gather"] == []


def test_mpich_json_in_the_exported_rank_order(tmp_path):
    _needs_mpich()
    prof = _profile(tmp_path)
    res = run_hnow("export", "--profile", prof, "--format", "hostfile,mpich-json", "--sizes", "64K", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    types = ["fast", "fast", "slow", "slow"]
    assert doc["mpich"]["layout"] == [types[p] for p in doc["perm"]] and set(doc["files"]) == {
        "hostfile",
        "mpich-json",
        "mpich-env",
    }


@pytest.mark.parametrize(
    "args, says",
    [
        (["--format", "mpich-json"], "--sizes is required with --format mpich-json"),
        (["--format", "hostfile,mpich-json", "--sizes", "4K", "--layout", "FFSS"], "use the profile's nodes"),
        (
            ["--format", "hostfile", "--sizes", "4K"],
            "--sizes applies to --format mpich-json, ompi-rules and impi-env",
        ),
        (["--format", "mpich-json", "--sizes", "4K", "--libmpi", "/no/libmpi.so"], "no such file"),
        (["--format", "mpich-json", "--sizes", "4K", "--ops", "bcast,barrier"], "unknown operation 'barrier'"),
        (  # MPICH's allreduce is exported, but its prediction needs γ, which this profile has not
            ["--format", "mpich-json", "--sizes", "4K", "--ops", "bcast,allreduce"],
            "allreduce combines buffers: its prediction needs the reduction cost",
        ),
        (  # Intel MPI's strings write them too; its allreduce needs γ as well
            ["--format", "impi-env", "--sizes", "4K", "--ops", "alltoall,allreduce"],
            "allreduce combines buffers: its prediction needs the reduction cost",
        ),
        (["--format", "mpich-json,rankfile", "--sizes", "4K"], "give -o FOLDER"),
    ],
)
def test_mpich_json_bad_input_is_one_line_and_writes_nothing(tmp_path, args, says):
    out = tmp_path / "never"
    extra = [] if "give -o FOLDER" in says else ["-o", str(out)]
    res = run_hnow("export", "--profile", _profile(tmp_path), *args, *extra)
    assert res.returncode == 2 and one_error_line(res.stderr) and says in res.stderr, res.stderr
    assert not out.exists()


def test_ompi_rules_with_its_settings(tmp_path):
    """No MPI needed: the rules file comes from the profile and Open MPI's fixed rules as hnow transcribes them."""
    from hnowmodel.libraries.openmpi import rules as ompi_rules

    out = tmp_path / "ex"
    args = ["export", "--profile", "paper", "--layout", "SFSF", "--format", "ompi-rules", "--ops", "bcast"]
    res = run_hnow(*args, "--sizes", "64K,256K", "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["USAGE.txt", "ompi-env.txt", "ompi-rules.conf"]
    assert "chain:2" in res.stdout and "gain_%" in res.stdout and "ompi-rules.conf" in res.stdout
    env = (out / "ompi-env.txt").read_text()
    assert f"export OMPI_MCA_coll_tuned_dynamic_rules_filename={out.resolve()}/ompi-rules.conf" in env
    rules = ompi_rules.validate((out / "ompi-rules.conf").read_text())
    assert ompi_rules.runs(rules, "bcast", 4, 65536) == (2, 2, 0)
    res = run_hnow(*args, "--sizes", "64K,256K", "--json")
    doc = json.loads(res.stdout)["ompi"]
    assert doc["comm_size"] == 4 and [r["chosen"] for r in doc["rows"]] == ["chain:2", "chain:2"]
    assert doc["entries"]["bcast"] == [{"from_bytes": 0, "upto_bytes": 262144, "algorithm": "chain:2"}]
    res = run_hnow(*args, "--sizes", "64K")  # one format without -o: the file on stdout
    assert res.returncode == 0 and ompi_rules.validate(res.stdout).collectives


def test_ompi_rules_in_the_exported_rank_order(tmp_path):
    prof = _profile(tmp_path)
    res = run_hnow(
        "export", "--profile", prof, "--format", "rankfile,ompi-rules", "--sizes", "64K", "-o", str(tmp_path / "o")
    )
    assert res.returncode == 0, res.stderr
    env = (tmp_path / "o" / "ompi-env.txt").read_text()
    assert f"--map-by rankfile:file={(tmp_path / 'o').resolve()}/rankfile" in env


@pytest.mark.parametrize(
    "args, says",
    [
        (["--format", "ompi-rules"], "--sizes is required with --format ompi-rules"),
        (["--format", "ompi-rules", "--sizes", "4K", "--libmpi", "/x.so"], "--libmpi applies to --format mpich-json"),
        (["--format", "ompi-rules", "--sizes", "0"], "--sizes: 0 is not a size"),
        (["--format", "ompi-rules", "--sizes", "4K", "--layout", "F"], "at least 2 ranks"),
        (["--format", "rankfile,ompi-rules", "--sizes", "4K", "--layout", "FFSS"], "use the profile's nodes"),
    ],
)
def test_ompi_rules_bad_input_is_one_line_and_writes_nothing(tmp_path, args, says):
    out = tmp_path / "never"
    res = run_hnow("export", "--profile", _profile(tmp_path), *args, "-o", str(out))
    assert res.returncode == 2 and one_error_line(res.stderr) and says in res.stderr, res.stderr
    assert not out.exists()
