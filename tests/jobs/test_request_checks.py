"""One request validator for the jobs that run collectives (``measure``, ``compare``:
:func:`hnowmodel.jobs.checks.check_request`), one place that splits tree-spec lists (:mod:`hnowmodel.treespec`),
and one parser of model variants (:func:`hnowmodel.options.parse_variants`) that ``hm.compare`` shares with every
command."""

from __future__ import annotations

import pytest

import hnowmodel as hm
from hnowmodel.errors import InputError, TreeError
from hnowmodel.jobs.checks import check_request
from hnowmodel.jobs.launcher import Launch
from hnowmodel.options import parse_variants
from hnowmodel.treespec import native_names, spec_items, spec_list

LAUNCH = Launch(np=4)


def test_a_request_gives_its_operations_trees_and_testbed():
    ops, items, tb = check_request(LAUNCH, "bcast,gather", ["binomial, native", "kary:3"], 3, None)
    assert ops == ("bcast", "gather") and [n for n, _ in items] == ["binomial", "native", "kary:3"] and tb is None
    _, _, tb = check_request(LAUNCH, ["scatter"], "sequential", 0, "paper")
    assert tb is not None and tb.name == "paper"


@pytest.mark.parametrize(
    "args, error, says",
    [
        (("barrier", "binomial", 0, None), InputError, "unknown operation"),
        (("allreduce", "binomial", 0, None), InputError, "allreduce runs no tree"),  # its algorithms: schedules
        (("bcast", "binomial", 4, None), InputError, "--root 4 is not a rank in 0..3"),
        (("bcast", "binomial", True, None), InputError, "--root True"),
        (("bcast", "nosuch", 0, None), TreeError, "nosuch"),
        (("bcast", " , ", 0, None), InputError, "at least one tree"),
        (("gather", "native:tree:kary:3", 0, None), InputError, "unknown native algorithm"),
        (("bcast", "binomial,native", 0, "paper"), InputError, "--tree native cannot run on the emulated testbed"),
    ],
)
def test_measure_and_compare_refuse_the_same_requests_alike(args, error, says):
    with pytest.raises(error, match=says):
        check_request(LAUNCH, *args)
    for job in (hm.measure, hm.compare):  # both call it before any rank starts
        op_key = "op" if job is hm.measure else "ops"
        tree_key = "tree" if job is hm.measure else "trees"
        kw = {op_key: args[0], tree_key: args[1], "root": args[2], "testbed": args[3]}
        with pytest.raises(error, match=says):
            job(**({"profile": "paper"} if job is hm.measure else {}), np=4, **kw)


def test_tree_spec_lists_are_split_in_one_place():
    assert spec_list("binomial, kary:3,,native") == ["binomial", "kary:3", "native"]
    items = spec_items(["binomial,native:binomial", hm.trees.chain(4)])
    assert [n for n, _ in items] == ["binomial", "native:binomial", "chain"]
    assert native_names(items) == ["native:binomial"]
    with pytest.raises(InputError, match="--trees: give at least one"):
        spec_list("", "--trees")


@pytest.mark.parametrize(
    "given, ops, want",
    [
        (None, ["bcast"], {}),
        ("paper", ["bcast", "scatter", "gather"], {"bcast": "paper", "scatter": "paper", "gather": "paper"}),
        ("gather=link, bcast=flow-rr", ["bcast"], {"gather": "link", "bcast": "flow-rr"}),
        ({"gather": "paper"}, [], {"gather": "paper"}),
    ],
)
def test_variants_by_name_or_per_operation(given, ops, want):
    assert parse_variants(given, ops) == want


@pytest.mark.parametrize(
    "given, says",
    [
        ("paper,link", "expected NAME or OP=NAME"),
        ("bcast=paper,link", "expected NAME or OP=NAME"),
        ("bcast=", "expected NAME or OP=NAME"),
        ("=paper", "expected NAME or OP=NAME"),
        ("barrier=paper", "unknown operation"),
        ("allreduce=link", "unknown allreduce model variant 'link'"),  # link serves gather's trees only
        ("gather=flow-rr", "flow-rr"),
        ("flow-rr", "flow-rr"),  # a name must serve every operation it is given for
    ],
)
def test_a_bad_variant_names_itself(given, says):
    with pytest.raises(InputError, match=says):
        parse_variants(given, ["bcast", "gather"])


@pytest.mark.mpi
def test_compare_takes_a_variant_name_as_the_command_line_does():
    cmp = hm.compare(
        "paper", np=4, testbed="paper", layout="FFSS", ops="gather", trees="sequential", sizes=[1000], reps=1,
        variants="paper",
    )  # fmt: skip
    assert cmp.context["model variants"] == "gather: paper"
    assert cmp.rows[0].predicted_us == pytest.approx(710.0)  # eq. 12 as printed (tests/cli/test_predict_cli.py)
