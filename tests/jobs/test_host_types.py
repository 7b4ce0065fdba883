"""A profile applies to the hosts it knows, by name: the ranks' hosts (a virtual cluster's, a hostfile's, an srun
allocation's) take the node types the profile calibrated them as, whatever the slots; hosts it has not seen are
named by a ``types`` map (``--types``, the cluster spec's ``types``) or asked for in one line. No MPI here."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from hnowmodel.errors import HnowError, LayoutError
from hnowmodel.jobs import Launch, checks
from hnowmodel.jobs.checks import by_host_name, job_hosts, job_layout, placement_hosts, stated_types
from hnowmodel.layout import layout_from_hosts, layout_string, merge_host_types, parse_host_types, parse_layout
from tests.helpers import flow_profile, one_error_line, paper_shm_profile, run_hnow

TYPES = ["fast", "medium", "slow"]


def _profile(hosts=("m1", "m1", "f1", "f1", "s1", "s1"), types=("medium", "medium", "fast", "fast", "slow", "slow")):
    """A profile with host terms calibrated on 2 ranks of each of m1 (medium), f1 (fast), s1 (slow)."""
    prof = paper_shm_profile(flow_profile({"fast": 20.0, "medium": 6.0, "slow": 2.5}, S=2.0, R=2.0, Xc=50.0))
    nodes = tuple({"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(zip(hosts, types, strict=True)))
    return replace(prof, nodes=nodes)


def _spec(tmp_path: Path, slots=(1, 3, 2), names=("m1", "f1", "s1"), **extra) -> str:
    doc = {
        "schema": "hnowmodel.cluster/1",
        "name": "hm",
        "hosts": [
            {"name": n, "egress_mbit": 100, "ingress_mbit": 100, "slots": s} for n, s in zip(names, slots, strict=True)
        ],
        **extra,
    }
    p = tmp_path / "spec.json"
    p.write_text(json.dumps(doc))
    return str(p)


# ---- the mapping, as a pure function ---------------------------------------------------------------------------


def test_hosts_take_their_calibrated_types_whatever_the_slots():
    # the case: calibrated 2/2/2, run 1/3/2 - the calibration's layout rank by rank puts 'fast' on the host
    # of a 'medium' rank; by host name it is the layout a user would type by hand
    prof = _profile()
    assert prof.host_types == {"m1": "medium", "f1": "fast", "s1": "slow"}
    lay = by_host_name(prof, ("m1", "f1", "f1", "f1", "s1", "s1"))
    assert lay == parse_layout("medium/1,fast/3,slow/2", TYPES)
    assert lay.host_names == ("m1", "f1", "s1") and layout_string(lay) == "M.FFF.SS"
    # ranks placed anyhow (a hostfile that wraps around) keep each host's type and host
    lay = layout_from_hosts(["s1", "f1", "s1", "f1"], prof.host_types, prof.type_names)
    assert list(lay) == ["slow", "fast", "slow", "fast"] and lay.hosts.tolist() == [0, 1, 0, 1]


def test_a_host_the_profile_has_not_seen_is_asked_for_in_one_line_and_named_by_a_types_map():
    prof = _profile()
    with pytest.raises(LayoutError) as e:
        by_host_name(prof, ("m1", "n7", "n7"))
    msg = str(e.value)
    assert "'n7'" in msg and "ranks 1-2" in msg and "--types" in msg and "\n" not in msg
    lay = by_host_name(prof, ("m1", "n7", "n7"), (("--types", {"n7": "slow"}),))
    assert list(lay) == ["medium", "slow", "slow"] and lay.host_names == ("m1", "n7")


@pytest.mark.parametrize(
    "stated, says",
    [
        ((("--types", {"n7": "turbo"}),), "unknown node type 'turbo'"),
        ((("--types", {"f1": "slow"}),), "host 'f1': the profile says node type 'fast', --types says 'slow'"),
        ((("the cluster spec 'hm'", {"n7": "fast"}), ("--types", {"n7": "slow"})), "the cluster spec 'hm' says"),
    ],
)
def test_contradicting_or_unknown_types_are_one_line(stated, says):
    with pytest.raises(LayoutError, match=says) as e:
        by_host_name(_profile(), ("f1", "n7"), stated)
    assert "\n" not in str(e.value)


def test_a_host_whose_ranks_had_different_types_names_no_type():
    # an emulation: ranks of one machine calibrated as nodes of different types
    prof = _profile(hosts=("pc",) * 3, types=("fast", "medium", "slow"))
    assert prof.host_types == {}
    assert by_host_name(prof, ("pc", "pc", "pc")) is None  # nothing known by name: the caller keeps rank order
    assert merge_host_types(("the profile", prof.host_types)) == {}


@pytest.mark.parametrize(
    "spec, says",
    [
        ("n05", "--types item 'n05': expected HOST=TYPE"),
        ("n05=", "--types item 'n05=': expected HOST=TYPE"),
        ("=fast", "expected HOST=TYPE"),
        ("n05=fast,n05=slow", "host 'n05' given two types"),
        ("@/nonexistent/types.json", "no such file"),
    ],
)
def test_bad_types_are_one_line(spec, says):
    with pytest.raises(HnowError, match=says) as e:
        parse_host_types(spec)
    assert "\n" not in str(e.value)


def test_types_from_a_file_and_a_mapping(tmp_path):
    f = tmp_path / "types.json"
    f.write_text(json.dumps({"n05": "fast", "n06": "slow"}))
    assert parse_host_types(f"@{f}") == {"n05": "fast", "n06": "slow"}
    f.write_text(json.dumps(["fast"]))
    with pytest.raises(LayoutError, match="expected an object of host name -> node type"):
        parse_host_types(f"@{f}")
    with pytest.raises(LayoutError, match="node type must be a non-empty string"):
        parse_host_types({"n05": 3})


# ---- where the hosts come from: cluster, hostfile, srun ---------------------------------------------------------


def test_a_cluster_with_other_slots_gets_each_hosts_calibrated_type(tmp_path):
    launch = Launch(np=6, cluster=_spec(tmp_path))
    hosts = placement_hosts(launch)
    assert hosts == ("m1", "f1", "f1", "f1", "s1", "s1")
    lay = job_layout(None, 6, None, _profile(), hosts=hosts, types=stated_types(launch))
    assert lay == parse_layout("medium/1,fast/3,slow/2", TYPES)
    # srun on the cluster's own Slurm places ranks the same way: known before the job, nothing to ask
    assert placement_hosts(Launch(np=6, launcher="srun", cluster=_spec(tmp_path))) == hosts


def test_the_cluster_specs_types_name_a_new_host(tmp_path):
    spec = _spec(tmp_path, slots=(1, 1, 2), names=("m1", "f1", "n9"), types={"n9": "slow"})
    launch = Launch(np=4, cluster=spec)
    assert stated_types(launch, "f1=fast") == (("the cluster spec 'hm'", {"n9": "slow"}), ("--types", {"f1": "fast"}))
    lay = job_layout(None, 4, None, _profile(), hosts=placement_hosts(launch), types=stated_types(launch))
    assert list(lay) == ["medium", "fast", "slow", "slow"] and lay.host_names == ("m1", "f1", "n9")
    without = _spec(tmp_path, slots=(1, 1, 2), names=("m1", "f1", "n9"))
    with pytest.raises(LayoutError, match="host 'n9' \\(ranks 2-3\\)"):
        job_layout(None, 4, None, _profile(), hosts=placement_hosts(Launch(np=4, cluster=without)))


def test_a_hostfile_maps_by_name_and_an_explicit_layout_still_rules(tmp_path):
    hf = tmp_path / "hosts"
    hf.write_text("s1:2\nf1:1\n")
    launch = Launch(np=3, hostfile=str(hf))
    hosts = placement_hosts(launch)
    lay = job_layout(None, 3, None, _profile(), hosts=hosts)
    assert list(lay) == ["slow", "slow", "fast"] and lay.host_names == ("s1", "f1")
    given = job_layout("slow/2,fast", 3, None, _profile(), hosts=hosts)
    assert given == lay
    with pytest.raises(LayoutError):
        job_layout("fast/2,slow", 3, None, _profile(), hosts=("s1", "f1", "f1"))  # hosts disagree with the layout


def test_hosts_the_profile_never_named_keep_the_calibration_layout_rank_by_rank(tmp_path):
    # a hostfile of addresses where the profile recorded host names: nothing matches, nothing is stated - as before
    prof = _profile(hosts=("n1", "n2", "n3"), types=("fast", "slow", "slow"))
    lay = job_layout(None, 3, None, prof, hosts=("10.0.0.1", "10.0.0.2", "10.0.0.3"))
    assert list(lay) == ["fast", "slow", "slow"]


def test_under_srun_the_ranks_are_asked_once_where_they_run(monkeypatch):
    asked = []

    def fake_run_job(launch, job, progress=None):
        asked.append(type(job).__name__)
        return {"hosts": ["f1", "f1", "s1"]}

    monkeypatch.setattr(checks, "run_job", fake_run_job)
    launch = Launch(np=3, launcher="srun")
    assert job_hosts(launch, None, _profile()) == ("f1", "f1", "s1") and asked == ["InfoJob"]
    lay = job_layout(None, 3, None, _profile(), hosts=("f1", "f1", "s1"))
    assert list(lay) == ["fast", "fast", "slow"]
    # nothing to ask: a layout given, one node type, no profile, or mpiexec on this machine
    assert job_hosts(launch, "FFS", _profile()) is None
    one_type = replace(flow_profile({"fast": 20.0}), nodes=({"rank": 0, "host": "a", "type": "fast"},))
    assert job_hosts(launch, None, one_type) is None
    assert job_hosts(launch, None, None) is None
    assert job_hosts(Launch(np=3), None, _profile()) is None
    assert asked == ["InfoJob"]


def test_hnow_compare_names_an_unknown_host_in_one_line_before_mpi(tmp_path):
    prof = tmp_path / "p.json"
    _profile().save(prof)
    hf = tmp_path / "hosts"
    hf.write_text("f1:2\nnew7:1\n")
    proc = run_hnow("compare", "--np", "3", "--hostfile", str(hf), "--profile", str(prof), timeout=60)
    assert proc.returncode == 2 and one_error_line(proc.stderr), proc.stderr
    assert "host 'new7' (rank 2)" in proc.stderr and "--types" in proc.stderr
    proc = run_hnow(
        "compare", "--np", "3", "--hostfile", str(hf), "--profile", str(prof), "--types", "new7", timeout=60
    )
    assert proc.returncode == 2 and one_error_line(proc.stderr) and "HOST=TYPE" in proc.stderr, proc.stderr
