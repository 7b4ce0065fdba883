"""A calibration killed partway continues from its last finished step (issue #35): a real calibration (the paper
testbed on 2 ranks, or 2 local ranks through ``hnow tune``) is killed by a rank that dies at a later step
(``HNOW_FAULT``), and the rerun of the same command reuses the steps saved before (one progress line naming them),
measures only the rest and gives a valid profile; other options start over, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from calibrate import ckernels
from hnowmodel.jobs import mpi_lock
from hnowmodel.jobs.wire import unpack
from hnowmodel.params import Profile
from hnowmodel.stepfiles import read_steps
from tests.helpers import fast_paper_testbed

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def quick_paper(tmp_path_factory) -> tuple[str, ...]:
    """The calibration these tests kill and rerun, on the paper testbed at a third of its time scale (what is
    checked is which steps are saved and reused, and that the profile is valid, never its accuracy)."""
    tb = fast_paper_testbed(tmp_path_factory.mktemp("testbed"))
    return ("calibrate", "--np", "2", "--testbed", tb, "--quick", "--sizes", "0,2K,8K")


def _hnow(*args: str, fault: str = "", timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("HNOW_FAULT", None)
    if fault:
        env["HNOW_FAULT"] = fault
    return subprocess.run(
        [sys.executable, "-m", "hnowmodel.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_killed_calibration_continues_from_its_last_finished_step(tmp_path, quick_paper):
    out = tmp_path / "p.json"
    steps = tmp_path / "p.json.steps"
    killed = _hnow(*quick_paper, "-o", str(out), fault="0:pingpong 0->1 8192 B:exit")  # rank 0 dies at the 3rd size
    assert killed.returncode != 0 and not out.exists()
    assert sorted(read_steps(steps)) == ["size-0", "size-2048"]  # what finished before, whole
    assert not [p for p in steps.iterdir() if not p.name.startswith("step-")]  # no half-written file

    again = _hnow(*quick_paper, "-o", str(out))
    assert again.returncode == 0, again.stderr
    reuse = [ln for ln in again.stderr.splitlines() if "reusing" in ln]
    assert len(reuse) == 1 and "reusing 2 finished step(s)" in reuse[0] and "size-0, size-2048" in reuse[0]
    measured = [ln for ln in again.stderr.splitlines() if "ping-pong" in ln and "size " in ln]
    assert len(measured) == 1 and "size 8192 B (3/3)" in measured[0], again.stderr  # only the rest is measured
    prof = Profile.load(out)  # a valid profile, fitted from the steps of both runs
    assert prof.layout == ("fast", "fast") and prof.types["fast"].Sc_us > 0 and prof.network.Xm_us_per_byte > 0
    assert not steps.exists()  # the profile holds them now


def test_other_options_start_over_saying_why(tmp_path, quick_paper):
    out = tmp_path / "p.json"
    _hnow(*quick_paper, "-o", str(out), fault="0:pingpong 0->1 2048 B:exit")
    assert sorted(read_steps(tmp_path / "p.json.steps")) == ["size-0"]
    other = [*quick_paper[:-1], "0,2K"]
    proc = _hnow(*other, "-o", str(out), fault="0:pingpong 0->1 2048 B:exit")
    said = [ln for ln in proc.stderr.splitlines() if "starting over" in ln]
    assert len(said) == 1 and "options.sizes: '0,2048,8192' -> '0,2048'" in said[0], proc.stderr
    assert sorted(read_steps(tmp_path / "p.json.steps")) == ["size-0"]  # measured again, with the new options
    doc = json.loads((tmp_path / "p.json.steps" / "step-size-0.json").read_text())
    assert doc["depends_on"]["options"]["sizes"] == "0,2048"


#: Each rank named as a host of its own (``SLURMD_NODENAME``: the name a rank gives its node), so that 2 local ranks
#: take the calibration's network path (host pairs, NICs, CPUs, the network rounds) without a virtual cluster.
AS_HOSTS = """
import os, runpy, sys
rank = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or "0"
os.environ["SLURMD_NODENAME"] = "h" + rank
sys.argv = ["calibrate", "calibrate", "--quick", "--layout", "auto", "--steps", sys.argv[1]]
runpy.run_module("calibrate", run_name="__main__")
"""


def _network_run(tmp_path, steps, fault: str = "") -> tuple[subprocess.CompletedProcess, dict | None]:
    env = {k: v for k, v in os.environ.items() if k != "HNOW_FAULT"} | ({"HNOW_FAULT": fault} if fault else {})
    script = tmp_path / "as_hosts.py"
    script.write_text(AS_HOSTS)
    with mpi_lock():
        proc = subprocess.run(
            [ckernels._mpiexec(), "-n", "2", sys.executable, str(script), str(steps)],
            capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("hnow-result:")), None)
    return proc, None if line is None else unpack(line.split(":", 1)[1].strip())["result"]


def test_the_network_path_continues_and_its_saved_steps_give_the_same_profile(tmp_path):
    steps = tmp_path / "steps"
    killed, _ = _network_run(tmp_path, steps, fault="0:reduction cost round 1:exit")
    assert killed.returncode != 0
    assert sorted(read_steps(steps)) == ["cpus", "host-pairs", "host-shared-memory", "network", "nics"]
    proc, first = _network_run(tmp_path, steps)
    assert proc.returncode == 0 and first is not None, proc.stderr
    assert "reusing 5 finished step(s)" in proc.stderr and "reduction cost round 1" in proc.stderr
    assert first["schema"].startswith("hnowmodel.profile/") and first["extensions"]["reduce"]
    proc, again = _network_run(tmp_path, steps)  # every step saved: nothing measured, the same profile
    assert proc.returncode == 0 and "reusing 6 finished step(s)" in proc.stderr and "round 1/" not in proc.stderr
    measured = {k: v for k, v in first.items() if k != "provenance"}
    assert {k: v for k, v in again.items() if k != "provenance"} == measured
    assert {k for k in first["provenance"] if first["provenance"][k] != again["provenance"].get(k)} <= {"wall_s"}
