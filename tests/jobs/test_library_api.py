"""The library as a scheduler uses it: a plain Python script calls hm.calibrate and hm.compare (real MPI
underneath, started as a child process) and gets a Profile and typed rows, importing neither the CLI nor MPI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, sys
import hnowmodel as hm

testbed = sys.argv[1]
# sizes to 2 KiB (not --quick's 8 KiB, ~40 % of the run): no parameter's accuracy is asserted here
prof = hm.calibrate(np=4, testbed=testbed, layout="auto", quick=True, sizes=[0, 1024, 2048])
cmp = hm.compare(prof, np=4, testbed=testbed, ops=["bcast", "gather"], trees=["binomial", "optimal:gather"],
                 sizes=[0, 2048], reps=2)
row = cmp.rows[0]
try:
    row.error_pct = 0.0
    frozen = False
except AttributeError:
    frozen = True
print(json.dumps({
    "profile_type": type(prof).__name__,
    "layout": list(prof.layout),
    "row_type": type(row).__name__,
    "rows": [r.to_dict() for r in cmp.rows],
    "frozen": frozen,
    "imported_cli": "hnowmodel.cli" in sys.modules,
    "imported_mpi": "mpi4py.MPI" in sys.modules,
}))
"""


@pytest.mark.mpi
@pytest.mark.slow
def test_scheduler_script_calibrates_and_compares(tmp_path):
    tb = tmp_path / "tb.json"
    # the paper's node types, in an order that interleaves them: auto layout must find the groups by measuring
    doc = {
        "schema": "hnowmodel.testbed/1",
        "name": "mixed",
        "time_scale": 30,
        "ranks": ["fast", "slow", "fast", "slow"],
        "network": {"Xc_us": 16, "Xm_us_per_byte": 0.08},
        "types": {
            "fast": {"Sc_us": 60, "Sm_us_per_byte": 0.05, "Rc_us": 94, "Rm_us_per_byte": 0.03},
            "slow": {"Sc_us": 90, "Sm_us_per_byte": 0.18, "Rc_us": 124, "Rm_us_per_byte": 0.08},
        },
    }
    tb.write_text(json.dumps(doc))
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tb)], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["profile_type"] == "Profile" and got["row_type"] == "ComparisonRow" and got["frozen"]
    assert not got["imported_cli"] and not got["imported_mpi"]
    lay = got["layout"]
    assert lay[0] == lay[2] and lay[1] == lay[3] and lay[0] != lay[1], lay
    rows = got["rows"]
    assert {(r["op"], r["tree"]) for r in rows} == {
        ("bcast", "binomial"),
        ("gather", "binomial"),
        ("gather", "optimal:gather"),
    }
    for r in rows:
        assert r["error_pct"] == pytest.approx(100 * (r["predicted_us"] - r["measured_us"]) / r["measured_us"])
        assert r["min_us"] <= r["measured_us"] <= r["max_us"]
        assert r["variant"] == ("link" if r["op"] == "gather" else "paper")
    assert all(r["chosen_for_bytes"] == 0 for r in rows if r["tree"] == "optimal:gather")


@pytest.mark.mpi
def test_bare_optimal_is_chosen_for_the_rows_own_operation_and_size():
    """``optimal`` in compare is the best tree for each row's operation at its size (not bcast at 0 bytes)."""
    import hnowmodel as hm
    from hnowmodel.search import best_tree

    prof = hm.paper_profile()
    cmp = hm.compare(
        prof,
        np=4,
        testbed="paper",
        layout="FFSS",
        ops=["scatter"],
        trees=["optimal"],
        sizes=[0, 4096],
        reps=1,
        iters=1,
        both=False,
    )
    assert [(r.op, r.tree, r.size, r.chosen_for_bytes) for r in cmp.rows] == [
        ("scatter", "optimal", 0, 0),
        ("scatter", "optimal", 4096, 4096),
    ]
    row = cmp.rows[1]
    lay = ["fast", "fast", "slow", "slow"]
    want = best_tree(prof, lay, op="scatter", size=4096, root=0, compare=(), variant=row.variant).tree
    assert row.predicted_us == pytest.approx(
        float(hm.ops.predict("scatter", prof, lay, want, [4096], variant=row.variant)[0])
    )


def test_unknown_keyword_names_the_valid_ones():
    import hnowmodel as hm

    with pytest.raises(TypeError, match="unexpected keyword argument 'treez'"):
        hm.compare("paper", np=4, testbed="paper", treez=["binomial"])


def test_tree_specs_resolve_per_row_or_fixed():
    """A bare optimal is chosen per (operation, size); optimal:OP:SIZE is one fixed tree; native resolves to None."""
    import hnowmodel as hm
    from hnowmodel.search import best_tree
    from hnowmodel.treespec import resolve_all, spec_items

    prof, lay = hm.paper_profile(), ["fast", "slow", "fast", "slow", "slow"]
    items = spec_items(["optimal", "optimal:gather:1K", "binomial,native"])
    tset = resolve_all(items, 5, layout=lay, profile=prof, rows=[("scatter", 0), ("scatter", 16384)])
    assert tset.per_row_names == ("optimal",)
    assert tset.fixed["native"] is None and tset.chosen_for("binomial", 0) is None
    assert tset.chosen_for("optimal", 16384) == 16384 and tset.chosen_for("optimal:gather:1K", 16384) == 1024
    for size in (0, 16384):
        want = best_tree(prof, lay, op="scatter", size=size, compare=()).tree
        assert tset.tree("optimal", "scatter", size).parent.tolist() == want.parent.tolist()
    want = best_tree(prof, lay, op="gather", size=1024, compare=()).tree
    assert tset.tree("optimal:gather:1K", "scatter", 0).parent.tolist() == want.parent.tolist()
