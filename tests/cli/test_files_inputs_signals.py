"""Every rough edge a new user hit (issue "Library first", item 5), each through the real ``hnow`` command."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import fast_paper_testbed, run_hnow

NO_LAUNCHER = ("--launcher", "no-such-mpiexec")


def _one_line_exit_2(proc: subprocess.CompletedProcess, needle: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert needle in lines[0], lines[0]
    return lines[0]


# ---- tree files everywhere --------------------------------------------------------------------------------------
def test_best_tree_file_is_accepted_by_predict(tmp_path):
    tree = tmp_path / "t.json"
    run_hnow("best-tree", "--layout", "FFSS", "--size", "1K", "-o", str(tree), check=True)
    best = json.loads(run_hnow("best-tree", "--layout", "FFSS", "--size", "1K", "--json", check=True).stdout)
    got = json.loads(
        run_hnow("predict", "--layout", "FFSS", "--tree", f"@{tree}", "--sizes", "1K", "--json", check=True).stdout
    )
    assert got["predictions"][0]["time_us"] == pytest.approx(best["time_us"])


@pytest.mark.mpi
def test_tree_file_runs_in_measure_and_compare(tmp_path):
    tree = tmp_path / "t.json"
    run_hnow("best-tree", "--layout", "FSFS", "--size", "1K", "-o", str(tree), check=True)
    common = ("--np", "4", "--testbed", "paper", "--layout", "FSFS", "--sizes", "1K", "--reps", "1", "--json")
    m = run_hnow("measure", "--op", "bcast", "--tree", f"@{tree}", *common, timeout=120)
    assert m.returncode == 0, m.stderr
    row = json.loads(m.stdout)["rows"][0]
    assert row["tree"] == f"@{tree}" and row["tree_parent"] == json.loads(tree.read_text())["parent"]
    c = run_hnow(
        "compare", "--profile", "paper", "--ops", "bcast", "--trees", f"@{tree},binomial", *common, timeout=120
    )
    assert c.returncode == 0, c.stderr
    assert {r["tree"] for r in json.loads(c.stdout)["rows"]} == {f"@{tree}", "binomial"}


def test_tree_file_with_fractional_parent_is_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"parent": [-1, 0, 0.5, 1]}')
    _one_line_exit_2(run_hnow("predict", "--layout", "FFSS", "--tree", f"@{bad}"), "parent")


# ---- outputs are checked before any MPI run, never overwritten silently, created with the umask ------------------
@pytest.mark.parametrize(
    "argv, flag",
    [
        (("calibrate", "--np", "2", "-o", "/proc/hnow-nope/p.json"), "-o"),
        (("compare", "--np", "2", "--profile", "paper", "-o", "/proc/hnow-nope/rep"), "-o"),
        (("demo", "-o", "/proc/hnow-nope/rep"), "-o"),
        (("bench", "latency", "--np", "2", "-o", "/proc/hnow-nope/rep"), "--out"),
        (("best-tree", "--layout", "FFSS", "-o", "/proc/hnow-nope/t.json"), "-o"),
    ],
)
def test_unwritable_output_is_refused_before_mpi(argv, flag):
    # the launcher does not exist: had MPI been started first, the error would name the launcher instead
    line = _one_line_exit_2(run_hnow(*argv, *NO_LAUNCHER[: 2 if argv[0] != "best-tree" else 0]), flag)
    assert "no-such-mpiexec" not in line


def test_existing_profile_and_report_folder_are_not_overwritten(tmp_path):
    prof = tmp_path / "p.json"
    prof.write_text("keep me")
    _one_line_exit_2(run_hnow("calibrate", "--np", "2", "-o", str(prof), *NO_LAUNCHER), "--force")
    assert prof.read_text() == "keep me"
    rep = tmp_path / "rep"
    rep.mkdir()
    (rep / "mine.txt").write_text("mine")
    _one_line_exit_2(run_hnow("compare", "--np", "2", "--profile", "paper", "-o", str(rep), *NO_LAUNCHER), "--force")
    _one_line_exit_2(run_hnow("demo", "-o", str(rep), *NO_LAUNCHER), "--force")
    # with --force the check passes and the run goes on (here: to the missing launcher)
    _one_line_exit_2(run_hnow("calibrate", "--np", "2", "-o", str(prof), "--force", *NO_LAUNCHER), "no-such-mpiexec")


def test_files_are_created_and_replaced_with_the_umask(tmp_path):
    out = tmp_path / "t.json"

    def best_tree(*extra: str) -> None:
        proc = subprocess.run(
            [
                "sh",
                "-c",
                'umask 027 && exec "$0" -m hnowmodel.cli best-tree --layout FFSS -o "$1" "$2"',
                sys.executable,
                str(out),
                *(extra or ("--size=0",)),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr

    best_tree()
    assert out.stat().st_mode & 0o777 == 0o640
    out.chmod(0o644)
    _one_line_exit_2(run_hnow("best-tree", "--layout", "FFSS", "-o", str(out)), "--force")
    best_tree("--force")
    assert out.stat().st_mode & 0o777 == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "temporary files left behind"


# ---- bad numbers -------------------------------------------------------------------------------------------------
def test_huge_profile_values_are_refused_not_a_traceback(tmp_path):
    doc = {
        "schema": "hnowmodel.profile/1",
        "network": {"Xc_us": 1.0, "Xm_us_per_byte": 0.01},
        "types": {"fast": {"Sc_us": 1e308, "Sm_us_per_byte": 0.1, "Rc_us": 1.0, "Rm_us_per_byte": 0.1}},
    }
    p = tmp_path / "huge.json"
    p.write_text(json.dumps(doc))
    _one_line_exit_2(run_hnow("predict", "--profile", str(p), "--layout", "FF", "--json"), "Sc_us")
    _one_line_exit_2(run_hnow("best-tree", "--profile", str(p), "--layout", "FFF", "--json"), "Sc_us")


@pytest.mark.parametrize("value", ["nan", "inf", "0", "1.5", "-0.1"])
def test_precision_must_be_a_fraction(value):
    _one_line_exit_2(run_hnow("calibrate", "--np", "2", "--precision", value, *NO_LAUNCHER), "--precision")


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_timeout_must_be_positive(value):
    _one_line_exit_2(run_hnow("info", "--np", "2", "--timeout", value), "--timeout")


@pytest.mark.mpi
def test_two_calibration_sizes_give_a_warning(tmp_path):
    proc = run_hnow(
        "calibrate",
        "--np",
        "2",
        "--testbed",
        fast_paper_testbed(tmp_path),  # the warning is about the sizes, not what the testbed's times are
        "--layout",
        "FS",
        "--sizes",
        "0,1K",
        "--quick",
        "-o",
        str(tmp_path / "p.json"),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: the profile's lines are fitted through only 2 message sizes" in proc.stdout
    assert "--budget" not in proc.stdout + proc.stderr


# ---- the launcher ------------------------------------------------------------------------------------------------
@pytest.mark.mpi
def test_venv_mpiexec_found_without_activation():
    beside = Path(sys.executable).parent / "mpiexec"
    if not beside.exists():
        pytest.skip(f"no mpiexec beside {sys.executable} (the MPI comes from elsewhere)")
    proc = run_hnow("info", "--np", "2", "--json", env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ranks"] == 2


def _job_ranks(pid: int) -> list[int]:
    """Pids of the ``python -m calibrate`` ranks below process ``pid`` (through mpiexec and its proxies)."""
    parent, cmd = {}, {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parent[int(proc.name)] = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd[int(proc.name)] = (proc / "cmdline").read_bytes().split(b"\0")
            except (OSError, ValueError, IndexError):
                continue
    below, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p and c not in below]
        below.update(kids)
        todo += kids
    return sorted(c for c in below if cmd.get(c, [])[1:3] == [b"-m", b"calibrate"])


def _wait_for_ranks(pid: int) -> list[int]:
    for _ in range(40):
        pids = _job_ranks(pid)
        if len(pids) >= 2:
            return pids
        time.sleep(0.25)
    return []


def _alive(pids: list[int]) -> list[int]:
    return [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in _state(p)]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def _signals_as_at_a_terminal() -> None:
    """In the child before exec: SIGINT handled by default, as for a command typed at a terminal. (A command that
    a non-interactive shell starts in the background inherits SIGINT ignored, and so does everything it starts,
    this test's ``hnow`` among them, when the suite runs that way: ``hnow`` then rightly ignores SIGINT too.)"""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.mpi
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_stops_the_job_and_leaves_nothing(tmp_path, sig, code):
    before = set(Path("/tmp").glob("hnow-*"))
    out = tmp_path / "p.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hnowmodel.cli",
            "calibrate",
            "--np",
            "2",
            "--testbed",
            "paper",
            "--layout",
            "FS",
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=_signals_as_at_a_terminal,
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until the ranks are measuring
        if "ping-pong" in line:
            break
    ranks = _wait_for_ranks(proc.pid)
    assert ranks, "the job's ranks were not found: this test would prove nothing"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert "the MPI job was stopped" in err and "Traceback" not in err
    for _ in range(20):
        if not _alive(ranks):
            break
        time.sleep(0.25)
    assert not _alive(ranks), "ranks left running"
    assert not out.exists()
    assert set(Path("/tmp").glob("hnow-*")) <= before


@pytest.mark.mpi
def test_killed_hnow_takes_its_ranks_with_it(tmp_path):
    """Even a SIGKILL of hnow (no chance to clean up) stops the launcher and its ranks: they die with their parent."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hnowmodel.cli",
            "calibrate",
            "--np",
            "2",
            "--testbed",
            "paper",
            "--layout",
            "FS",
            "-o",
            str(tmp_path / "p.json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "ping-pong" in line:
            break
    ranks = _wait_for_ranks(proc.pid)
    assert ranks, "the job's ranks were not found: this test would prove nothing"
    proc.kill()
    proc.wait(timeout=10)
    for _ in range(40):
        if not _alive(ranks):
            break
        time.sleep(0.25)
    assert not _alive(ranks), "ranks left running after hnow was killed"
