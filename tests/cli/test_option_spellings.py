"""One spelling of the same option in every command: ``--op``/``--ops`` and ``--tree``/``--trees`` are aliases of
each other wherever a command takes them, and ``--variant`` takes ``NAME`` or ``OP=NAME[,OP=NAME]`` everywhere; a
bad variant form exits 2 with one line, before any MPI starts."""

from __future__ import annotations

import json

import pytest

from hnowmodel.cli import build_parser
from tests.helpers import one_error_line, run_hnow

# every command with an operation or tree option, and the rest of a valid command line
WITH_OP = {
    "predict": [],
    "measure": ["--np", "2"],
    "compare": ["--np", "2"],
    "best-tree": [],
    "plan": ["--pool", "fast=2", "--ranks", "2"],
    "export": ["--profile", "paper"],
    "bench": ["imb", "--np", "2"],
}
WITH_TREE = ("predict", "measure", "compare", "export", "bench")


@pytest.mark.parametrize("command", WITH_OP)
def test_op_and_ops_are_one_option(command):
    parse = build_parser().parse_args
    rest = WITH_OP[command]
    assert parse([command, *rest, "--op", "gather"]).op == parse([command, *rest, "--ops", "gather"]).op == "gather"


@pytest.mark.parametrize("command", WITH_TREE)
def test_tree_and_trees_are_one_option(command):
    parse = build_parser().parse_args
    rest = WITH_OP[command]
    one, other = parse([command, *rest, "--tree", "native"]), parse([command, *rest, "--trees", "native"])
    assert one.tree == other.tree == "native"


def test_help_shows_the_documented_spelling_first():
    for command in WITH_OP:
        text = run_hnow(command, "--help").stdout
        assert "--op OP, --ops OP" in text, command
    for command in WITH_TREE:
        assert "--tree TREE, --trees TREE" in run_hnow(command, "--help").stdout, command


def _json(*argv):
    proc = run_hnow(*argv, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_both_spellings_predict_the_same():
    base = ("predict", "--layout", "FFSS", "--sizes", "0,4K")
    one = _json(*base, "--op", "scatter", "--tree", "binomial,sequential")
    other = _json(*base, "--ops", "scatter", "--trees", "binomial,sequential")
    assert one == other and len(one["predictions"]) == 4


def test_variant_name_and_op_form_are_the_same_everywhere():
    base = ("predict", "--op", "gather", "--layout", "FFSS", "--tree", "sequential", "--sizes", "1000")
    by_name, by_op = _json(*base, "--variant", "paper"), _json(*base, "--variant", "gather=paper")
    assert by_name == by_op and by_name["predictions"][0]["time_us"] == pytest.approx(710.0)
    best = ("best-tree", "--layout", "FFSS", "--op", "scatter", "--size", "1K")
    assert _json(*best, "--variant", "paper") == _json(*best, "--variant", "scatter=paper")


BAD_VARIANTS = [
    ("predict", "--layout", "FFSS", "--variant", "paper,link"),
    ("predict", "--layout", "FFSS", "--variant", "bcast="),
    ("predict", "--layout", "FFSS", "--variant", "=paper"),
    ("predict", "--layout", "FFSS", "--variant", "nosuch"),
    ("best-tree", "--layout", "FFSS", "--variant", "bcast=paper,link"),
    ("compare", "--np", "2", "--testbed", "paper", "--profile", "paper", "--variant", "paper,link"),
    ("compare", "--np", "2", "--testbed", "paper", "--profile", "paper", "--op", "gather", "--variant", "flow-rr"),
    ("bench", "hotspot", "--np", "2", "--testbed", "paper", "--variant", "gather=flow"),
]


@pytest.mark.parametrize("argv", BAD_VARIANTS, ids=[" ".join(a) for a in BAD_VARIANTS])
def test_a_bad_variant_exits_2_with_one_line(argv):
    proc = run_hnow(*argv, timeout=60)
    assert proc.returncode == 2 and one_error_line(proc.stderr), proc.stderr
    assert "variant" in proc.stderr and proc.stdout == ""


def test_export_takes_one_operation_for_the_rank_order(tmp_path):
    proc = run_hnow("export", "--profile", "paper", "--ops", "bcast,gather", "--format", "keys")
    assert proc.returncode == 2 and one_error_line(proc.stderr) and "one operation" in proc.stderr


def test_predict_native_with_a_library():
    got = _json("predict", "--layout", "FFSS", "--tree", "native", "--library", "mpich", "--sizes", "0")
    assert got["predictions"][0]["time_us"] == pytest.approx(430.0)  # MPICH's binomial, as hm.predict
    proc = run_hnow("predict", "--layout", "FFSS", "--tree", "native")
    assert proc.returncode == 2 and one_error_line(proc.stderr) and "--library" in proc.stderr
