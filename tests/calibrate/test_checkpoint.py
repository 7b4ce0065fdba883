"""The ranks' side of a resumable calibration (:mod:`calibrate.checkpoint`) over a stand-in communicator: each
finished step is saved, a rerun with the same dependencies reuses it (one progress line naming the steps) and
measures only the rest, and a rerun with other hosts or options starts over (one line saying what changed)."""

from __future__ import annotations

import argparse

import numpy as np

from calibrate.checkpoint import Checkpoint, depends_on
from hnowmodel.stepfiles import read_steps


class _Comm:
    def __init__(self, root_value=None):
        self.root_value = root_value  # what rank 0 broadcasts, seen from another rank

    def bcast(self, value, root=0):
        return value if self.root_value is None else self.root_value


class _Rt:
    def __init__(self, rank=0, comm=None):
        self.rank, self.comm, self.lines = rank, comm or _Comm(), []

    def progress(self, line):
        self.lines.append(line)


def _args(**kw):
    base = dict.fromkeys(("testbed", "layout", "network", "budget", "rounds", "gap_us"))
    base.update(sizes="0,1K", precision=0.025, quick=True, kernels="auto", native_ops="", native_sizes="8")
    return argparse.Namespace(**{**base, **kw})


def _run(folder, key, measured):
    """Three steps as a calibration runs them; ``measured`` collects the ones that really ran."""
    rt = _Rt()
    cp = Checkpoint(rt, str(folder), key)

    def step(name, value, share=False):
        return cp.step(name, lambda: measured.append(name) or value, share=share)

    out = [step("host-pairs", {"cost": np.array([[np.nan, 0.5]])}, share=True), step("size-0", [[1.0]])]
    return out + [step("reduce-cost", {"rounds": [{"fast": {8: 0.1}}]})], rt.lines


def test_a_rerun_reuses_the_finished_steps_and_measures_the_rest(tmp_path):
    key = depends_on(_args(), ["h", "h"], None, "MPICH 4")
    first: list[str] = []
    cp = Checkpoint(_Rt(), str(tmp_path), key)
    cp.step("host-pairs", lambda: first.append("host-pairs") or {"cost": np.array([[np.nan, 0.5]])}, share=True)
    cp.step("size-0", lambda: first.append("size-0") or [[1.0]])  # killed here: reduce-cost never finished
    assert first == ["host-pairs", "size-0"] and sorted(read_steps(tmp_path)) == ["host-pairs", "size-0"]
    again: list[str] = []
    values, lines = _run(tmp_path, key, again)
    assert again == ["reduce-cost"]  # only what had not finished is measured
    assert np.isnan(values[0]["cost"][0, 0]) and values[0]["cost"][0, 1] == 0.5 and values[1] == [[1.0]]
    assert len(lines) == 1 and "reusing 2 finished step(s)" in lines[0] and "host-pairs, size-0" in lines[0]
    assert sorted(read_steps(tmp_path)) == ["host-pairs", "reduce-cost", "size-0"]


def test_other_hosts_or_options_start_over_saying_why(tmp_path):
    key = depends_on(_args(), ["h", "h"], None, "MPICH 4")
    _run(tmp_path, key, [])
    ran: list[str] = []
    _, lines = _run(tmp_path, depends_on(_args(sizes="0,2K"), ["h", "h"], None, "MPICH 4"), ran)
    assert ran == ["host-pairs", "size-0", "reduce-cost"]
    assert len(lines) == 1 and "starting over" in lines[0] and "options.sizes: '0,1K' -> '0,2K'" in lines[0]
    ran.clear()
    _, lines = _run(tmp_path, depends_on(_args(sizes="0,2K"), ["h", "g"], None, "MPICH 4"), ran)
    assert len(ran) == 3 and "hosts: ['h', 'h'] -> ['h', 'g']" in lines[0]


def test_another_rank_gets_a_shared_step_and_none_of_rank_0s(tmp_path):
    key = depends_on(_args(), ["h", "h"], None, "MPICH 4")
    _run(tmp_path, key, [])
    rt = _Rt(rank=1, comm=_Comm(root_value=["host-pairs", "size-0", "reduce-cost"]))
    cp = Checkpoint(rt, str(tmp_path), key)  # rank 1 learns the finished steps from rank 0
    assert cp.done == {"host-pairs", "size-0", "reduce-cost"}
    rt.comm.root_value = {"cost": "from rank 0"}
    assert cp.step("host-pairs", lambda: 1 / 0, share=True) == {"cost": "from rank 0"}
    assert cp.step("size-0", lambda: 1 / 0) is None and not rt.lines


def test_without_a_folder_every_step_runs_and_nothing_is_written(tmp_path):
    cp = Checkpoint(_Rt(), None, {})
    assert cp.step("size-0", lambda: 5) == 5 and cp.done == set() and not any(tmp_path.iterdir())


def test_another_virtual_cluster_under_the_same_host_names_starts_over(tmp_path):
    """The ranks see only host names: the launch adds the cluster's spec (its rates) to what the steps depend on."""
    import json

    from hnowmodel.jobs import Launch
    from hnowmodel.jobs.calibrate_job import launch_context
    from hnowmodel.jobs.wire import pack

    keys = []
    for mbit in (50, 20):
        spec = tmp_path / f"c{mbit}.json"
        hosts = [{"name": n, "egress_mbit": mbit, "ingress_mbit": mbit, "slots": 1} for n in ("a", "b")]
        spec.write_text(json.dumps({"schema": "hnowmodel.cluster/1", "name": "c", "hosts": hosts}))
        context = pack(launch_context(Launch(np=2, cluster=str(spec))))
        keys.append(depends_on(_args(steps_context=context), ["a", "b"], None, "MPICH 4"))
    _run(tmp_path / "steps", keys[0], [])
    ran: list[str] = []
    _, lines = _run(tmp_path / "steps", keys[1], ran)
    assert len(ran) == 3 and "starting over" in lines[0] and "launch.cluster" in lines[0]
