"""``hnow`` through a real Slurm on 4 virtual hosts with node-local ``/tmp``: measure and compare with ``--launcher
srun`` outside an allocation (``--cluster``) and inside one (``salloc``, and ``sbatch`` of the script ``hnow
slurm-script`` writes: its calibration is the profile the compare reads); singletons refused; a cancelled step ends
with one line and leaves no rank behind. Behaviour, not timing. Skipped, with the reason, where there is no root, no
namespaces or no Slurm."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hnowmodel as hm
import hnowmodel.cluster as hc
from hnowmodel.cluster import netns
from tests.helpers import (
    SLURM_NAME,
    check_compared_row,
    check_measured_row,
    model_us,
    one_error_line,
    run_hnow,
    slurm_cluster,
)
from tests.helpers import slurm_run as run

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

_RATES = [120, 30, 120, 30]


def hnow(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_hnow(*args, env=env, timeout=timeout, cwd="/")  # cwd: not the root namespace's /tmp


def _ranks_inside(name: str) -> dict[str, list[int]]:
    """Processes of ``python -m calibrate`` still running inside this cluster's namespaces."""
    ns = [n for n in netns.existing_namespaces() if n.startswith(f"hnow-{name}-")]
    left = {}
    for n, pids in netns.namespace_pids(ns).items():
        live = []
        for p in pids:
            try:
                cmd = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
                state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if cmd[1:3] == [b"-m", b"calibrate"] and state != "Z":
                live.append(p)
        if live:
            left[n] = live
    return left


@pytest.fixture(scope="module")
def slurm4(slurm_ok, python_on_hosts, tmp_path_factory):
    """A 4-host, 2-speed cluster with Slurm for the module, and its spec file."""
    name = f"{SLURM_NAME}j"
    yield from slurm_cluster(tmp_path_factory.mktemp("spec"), name, _RATES)


@pytest.fixture(scope="module")
def sbatch_job(slurm4):
    """``sbatch`` of the script ``hnow slurm-script`` writes (the job runs ``hnow calibrate`` on its first node, srun
    inside it), in a folder every virtual host sees (their /tmp is their own; under /var/tmp, removed after the
    module): ``{"script": its text as written, "layout", "state": the job's final state, "log", "profile": path}``.
    One 4-host calibration for the module: the compare through srun below reads its profile. The layout is given
    (slurm-script --layout): the grouping of hosts by measuring them (--layout auto, the script's default) is
    tests/cluster/test_cluster_mpi.py's, and through srun tests/cluster/test_intelmpi_srun.py's."""
    st, _ = slurm4
    env = hc.slurm_env(st)
    shared = Path(f"/var/tmp/hnow-test-{os.getpid()}-{time.monotonic_ns()}")
    shared.mkdir(parents=True)
    try:
        script, prof = shared / "job.sh", shared / "profile.json"
        layout = ",".join("fast" if r == max(_RATES) else "slow" for r in _RATES)
        res = hnow(
            "slurm-script", "-N", "4", "--ranks-per-node", "1", "--profile-out", str(prof), "-o", str(script),
            "--time", "10", "--layout", layout,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        written = script.read_text()
        short = f"--layout {layout} --quick --rounds 1 --sizes 0,256..1M"  # one size per octave (--quick's: two)
        script.write_text(written.replace(f"--layout {layout}", short))
        res = run(st, "sbatch", "--parsable", "--chdir", str(shared), str(script), env=env)
        assert res.returncode == 0, res.stderr
        job = res.stdout.strip().split(";")[0]
        state = ""
        for _ in range(600):
            q = run(st, "scontrol", "show", "job", job, env=env).stdout
            state = next((w.split("=", 1)[1] for w in q.split() if w.startswith("JobState=")), "")
            if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
                break
            time.sleep(0.5)
        log = "".join(p.read_text() for p in shared.glob("hnow-calibrate-*.log"))
        yield {"script": written, "layout": layout, "state": state, "log": log, "profile": prof}
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_measure_compare_through_srun_outside_an_allocation(slurm4, sbatch_job):
    st, spec = slurm4
    res = hnow(
        "measure", "--np", "4", "--cluster", spec, "--launcher", "srun", "--op", "bcast", "--tree", "binomial",
        "--sizes", "16K", "--reps", "2", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    (row,) = json.loads(res.stdout)["rows"]
    assert (row["op"], row["tree"], row["size"]) == ("bcast", "binomial", 16384)
    check_measured_row(row)  # payload verified, spread ordered, measured = its stat
    # the profile the sbatch job calibrated through srun on these hosts
    assert sbatch_job["state"] == "COMPLETED", sbatch_job["log"][-3000:]
    prof = sbatch_job["profile"]
    types = [n["type"] for n in json.loads(prof.read_text())["nodes"]]
    res = hnow(
        "compare", "--np", "4", "--cluster", spec, "--launcher", "srun", "--profile", str(prof), "--ops", "bcast",
        "--trees", "native,binomial", "--sizes", "16K", "--reps", "2", "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    rows = json.loads(res.stdout)["rows"]
    assert sorted((r["op"], r["tree"], r["size"]) for r in rows) == [
        ("bcast", "binomial", 16384),
        ("bcast", "native", 16384),
    ]
    profile = hm.Profile.load(prof)
    for r in rows:
        check_compared_row(r)  # error_pct = 100 (predicted - measured) / measured
        if r["tree"] == "binomial":  # predicted from the calibrated profile, under the row's variant
            want = model_us("bcast", profile, types, "binomial", 16384, variant=r["variant"])
            assert r["predicted_us"] == pytest.approx(want), r
    assert _ranks_inside(st.name) == {}


def test_hnow_inside_salloc_and_sbatch(slurm4, sbatch_job):
    st, _ = slurm4
    # salloc runs hnow here (a login node) with the allocation in its environment; srun starts the ranks on it
    res = run(
        st, "salloc", "-N", "4", sys.executable, "-m", "hnowmodel.cli", "info", "--np", "4", "--launcher", "srun",
        "--launcher-args", "-N 4", "--json", timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert json.loads(res.stdout)["hosts"] == ["h1", "h2", "h3", "h4"]
    # sbatch of the script hnow slurm-script writes (the module's job): hnow ran on the job's first node
    assert f"--layout {sbatch_job['layout']} " in sbatch_job["script"]
    assert sbatch_job["state"] == "COMPLETED", sbatch_job["log"][-3000:]
    doc = json.loads(sbatch_job["profile"].read_text())
    assert [n["host"] for n in doc["nodes"]] == ["h1", "h2", "h3", "h4"]  # Slurm node names, in rank order
    assert [n["type"] for n in doc["nodes"]] == sbatch_job["layout"].split(",")


def test_singletons_from_srun_mpi_none_are_refused(slurm4):
    _, spec = slurm4
    res = hnow("info", "--np", "4", "--cluster", spec, "--launcher", "srun --mpi=none", "--timeout", "60")
    assert res.returncode == 2, res.stderr
    assert one_error_line(res.stderr) and "singletons" in res.stderr and "Traceback" not in res.stderr


def test_fewer_hosts_than_srun_N_is_refused(slurm4):
    """``srun -n 2 -N 4`` quietly runs on 2 nodes ("setting nnodes to 2"): 4 hosts were asked, exit 2, one line."""
    st, _ = slurm4
    res = run(
        st, sys.executable, "-m", "hnowmodel.cli", "info", "--np", "2", "--launcher", "srun",
        "--launcher-args", "-N 4", "--timeout", "60", timeout=120,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert one_error_line(res.stderr), res.stderr
    assert "asked for 2 ranks on 4 hosts (srun -N 4) but they started on 2 hosts" in res.stderr, res.stderr


def test_a_cancelled_step_ends_with_one_line_and_leaves_no_rank(slurm4):
    st, spec = slurm4
    env = {**os.environ, **hc.slurm_env(st)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hnowmodel.cli", "measure", "--np", "4", "--cluster", spec, "--launcher", "srun",
         "--op", "gather", "--tree", "binomial", "--sizes", "256K", "--reps", "400"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, env=env, cwd="/",
    )  # fmt: skip
    job = ""
    for _ in range(200):  # wait for the step to run on the hosts
        q = subprocess.run(["squeue", "-h", "-o", "%i %T"], capture_output=True, text=True, env=env).stdout.split()
        if len(q) >= 2 and q[1] == "RUNNING" and _ranks_inside(st.name):
            job = q[0]
            break
        time.sleep(0.1)
    assert job, "the step never ran: this test would prove nothing"
    subprocess.run(["scancel", "--signal=KILL", job], env=env, check=True)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert one_error_line(err) and "Traceback" not in err, err
    for _ in range(50):
        if not _ranks_inside(st.name):
            break
        time.sleep(0.1)
    assert _ranks_inside(st.name) == {}
