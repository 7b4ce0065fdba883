"""The `hnow` command itself: registry, usage errors, version, and `hnow info` over real mpiexec."""

from __future__ import annotations

import json

import pytest

from hnowmodel.cli import COMMANDS, build_parser

#: The subcommands the README and docs promise (contract); each must be offered, documented and take --json.
CONTRACT = {
    "calibrate",
    "predict",
    "measure",
    "compare",
    "best-tree",
    "plan",
    "bench",
    "cluster",
    "demo",
    "info",
    "slurm-script",
    "export",
    "tune",
    "setup-openmpi",
    "setup-intelmpi",
    "import",
    "best",
}


def test_the_contract_commands_are_offered_with_json():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == CONTRACT == set(COMMANDS)
    for name, p in sub.choices.items():
        assert p.description, name
        assert any("--json" in a.option_strings for a in p._actions), name


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_every_command_has_help(hnow, name):
    proc = hnow(name, "--help")
    assert proc.returncode == 0 and "--json" in proc.stdout, proc.stderr


def test_version_and_help(hnow):
    proc = hnow("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("hnow ")
    assert hnow("--help").returncode == 0


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["no-such-command"], "invalid choice"),
        ([], "required"),
        (["info", "--np", "0"], "--np"),
        (["info", "--np", "two"], "--np"),
    ],
)
def test_usage_errors_are_one_line_exit_2(hnow, argv, needle):
    proc = hnow(*argv)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.mpi
def test_info_reports_library_and_ranks(hnow):
    proc = hnow("info", "--np", "3", "--json", timeout=60)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ranks"] == 3 and len(doc["hosts"]) == 3
    assert "MPICH" in doc["library"] or "Open MPI" in doc["library"]
    assert doc["thread_level"] == 0  # MPI_THREAD_SINGLE: pinned by python -m calibrate


def test_missing_launcher_is_one_line(hnow):
    proc = hnow("info", "--np", "2", "--launcher", "no-such-mpiexec")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no-such-mpiexec" in proc.stderr


def _options(parser, command: str) -> set[str]:
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    return {s for a in sub._actions for s in a.option_strings}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_alone_has_the_options_of_the_whole_parser(name):
    """``hnow CMD`` builds only CMD's options (the other commands' modules stay unimported): the same options as
    the whole parser gives CMD, and the other commands are still names it knows."""
    whole, alone = build_parser(), build_parser(name)
    assert _options(alone, name) == _options(whole, name) and "--json" in _options(alone, name)
    others = next(a for a in alone._actions if a.dest == "command").choices
    assert set(others) == set(COMMANDS)
