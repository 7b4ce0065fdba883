"""MPICH's algorithms as hnow models and exports them: the tree shapes against MPICH's own loops, the selection
table read and written as MPICH's parser reads it, and the choice per operation and size range.
(tests/cluster/test_export_mpich.py: the real library loads the file and runs the chosen tree.)"""

from __future__ import annotations

import copy
import json

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel import trees as T
from hnowmodel.errors import InputError
from hnowmodel.export import AlgorithmRequest, choose_mpich, export
from hnowmodel.libraries.mpich import selection as mpich
from tests.helpers import picked_fastest


# ---- MPICH 5.0's tree loops (src/mpi/coll/algorithms/treealgo/treeutil.c), transliterated line by line --------
def _ilog(k, number):
    i, p = 1, k - 1
    while p - 1 < number:
        i, p = i + 1, p * k
    return i


def _digit(k, x, j):
    return (x // k**j) % k


def _setdigit(k, x, j, v):
    return x - _digit(k, x, j) * k**j + v * k**j


def _mpich_kary(rank, n, k, root):
    lrank = (rank + (n - root)) % n
    parent = -1 if lrank == 0 else ((lrank - 1) // k + root) % n
    kids = [(lrank * k + c + root) % n for c in range(1, k + 1) if lrank * k + c < n]
    return parent, kids


def _mpich_knomial_2(rank, n, k, root):
    lrank = (rank + (n - root)) % n
    parent = -1
    depth = _ilog(k, n - 1)
    if lrank > 0:
        for i in range(depth):
            if _digit(k, lrank, i):
                parent = (_setdigit(k, lrank, i, 0) + root) % n
                break
    flip = [0] * depth
    for j in range(depth):
        if _digit(k, lrank, j):
            break
        flip[j] = 1
    kids = []
    for j in range(depth - 1, -1, -1):
        if flip[j]:
            for i in range(k - 1, 0, -1):
                c = _setdigit(k, lrank, j, i)
                if c < n:
                    kids.append((c + root) % n)
    return parent, kids


def _mpich_knomial_1(rank, n, k, root):
    lrank = (rank + (n - root)) % n
    maxstep, tmp = 0, n - 1
    while tmp:
        maxstep, tmp = maxstep + 1, tmp // k
    parent, current, running, step = -1, 0, 1, 0
    while lrank != current:
        for _ in range(1, k):
            if running <= lrank < running + k ** (maxstep - step - 1):
                parent, current, running = current, running, running + 1
                break
            running += k ** (maxstep - step - 1)
        step += 1
    kids, crank = [], lrank + 1
    for i in range(step, maxstep):
        for _ in range(1, k):
            if crank < n:
                kids.append((crank + root) % n)
            crank += k ** (maxstep - i - 1)
    return (-1 if parent == -1 else (parent + root) % n), kids


@pytest.mark.parametrize(
    "ours, theirs",
    [(T.kary, _mpich_kary), (T.mpich_knomial2, _mpich_knomial_2), (T.mpich_knomial1, _mpich_knomial_1)],
    ids=["kary", "knomial_2", "knomial_1"],
)
def test_trees_are_mpichs_parents_and_send_order(ours, theirs):
    for n in range(1, 40):
        for k in range(2, 7):
            for root in sorted({0, 1 % n, n - 1}):
                tree = ours(n, k, root)
                for r in range(n):
                    parent, kids = theirs(r, n, k, root)
                    assert (int(tree.parent[r]), list(tree.children[r])) == (parent, kids), (n, k, root, r)


def test_knomial_2_has_knomials_parents_but_mpichs_order():
    assert T.mpich_knomial2(9, 3).children[0] == (6, 3, 2, 1) and T.knomial(9, 3).children[0] == (3, 6, 1, 2)
    assert (T.mpich_knomial2(9, 3).parent == T.knomial(9, 3).parent).all()
    assert T.mpich_knomial2(13, 2, root=5) == T.binomial(13, root=5)
    assert T.make_tree("mpich-knomial1:3", 10) == T.mpich_knomial1(10, 3)


# ---- the registry ------------------------------------------------------------------------------------------------
def test_every_mpich_bcast_algorithm_is_pinned_by_cvars_and_by_a_leaf():
    choices = ops.native_choices("bcast", "MPICH")
    assert choices[0] is ops.get("bcast").native["MPICH"]
    names = [c.algorithm for c in choices]
    assert len(set(names)) == len(names) and {"tree:kary:3", "tree:knomial_1:2", "tree:knomial_2:3"} <= set(names)
    assert names[-1] == "smp" and choices[-1].leaf == {"algorithm=MPIR_Bcast_intra_smp": {}}  # node-aware
    scatters = ["scatter_ring_allgather", "scatter_recursive_doubling_allgather"]
    assert names[-3:-1] == scatters  # no tree: the bcast's message schedules of those names
    for c in choices[-3:-1]:
        assert c.env["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == c.algorithm == c.model_tree
        assert c.env["MPIR_CVAR_DEVICE_COLLECTIVES"] == "none" and c.env["MPIR_CVAR_COLLECTIVE_FALLBACK"] == "error"
        assert c.leaf == {f"algorithm=MPIR_Bcast_intra_{c.algorithm}": {}}
        assert ops.get("bcast").schedule_algorithm(c.model_tree) is ops.get("bcast").algorithms[c.algorithm]
    for c in choices[1:-3]:
        assert c.env["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == "tree" and c.env["MPIR_CVAR_DEVICE_COLLECTIVES"] == "none"
        _, tree_type, k = c.algorithm.split(":")
        assert c.leaf == {
            "algorithm=MPIR_Bcast_intra_tree": {f"tree_type={tree_type}": {}, f"k={k}": {}, "is_non_blocking=0": {}}
        }
        assert T.make_tree(c.model_tree, 7).n == 7
    for op in ("scatter", "gather"):
        assert [c.algorithm for c in ops.native_choices(op, "MPICH")] == ["binomial"]
    for op in ("bcast", "scatter", "gather"):  # each library's algorithms carry only their own library's leaf
        assert all(isinstance(c.leaf, dict) for c in ops.native_choices(op, "MPICH"))  # a selection-JSON leaf
        assert all(c.leaf is None or isinstance(c.leaf, tuple) for c in ops.native_choices(op, "Open MPI"))


# ---- the table -----------------------------------------------------------------------------------------------------
def _table() -> mpich.DefaultTable:
    try:
        return mpich.default_table()
    except InputError as e:
        pytest.skip(f"no MPICH library here: {e}")


_T = {
    "collective=bcast": {
        "comm_type=intra": {
            "comm_size<8": {"algorithm=MPIR_Bcast_intra_binomial": {}},
            "comm_size=any": {
                "avg_msg_size<=12288": {"algorithm=MPIR_Bcast_intra_binomial": {}},
                "avg_msg_size=any": {"algorithm=MPIR_Bcast_intra_scatter_ring_allgather": {}},
            },
        }
    }
}
_TREE3 = {"algorithm=MPIR_Bcast_intra_tree": {"tree_type=kary": {}, "k=3": {}, "is_non_blocking=0": {}}}


def test_the_installed_default_table_is_mpichs_main_one():
    t = _table()
    assert set(t.table) >= {"collective=bcast", "collective=scatter", "collective=gather", "collective=allreduce"}
    assert "algorithm=MPIR_Bcast_intra_tree" in t.algorithms and "algorithm=MPIR_Bcast_intra_binomial" in t.algorithms
    mpich.check_table(t.table, t.algorithms)
    assert mpich.select(t.table, "bcast", comm_size=6, msg_bytes=1 << 20) == {"algorithm=MPIR_Bcast_intra_binomial": {}}
    assert mpich.select(t.table, "gather", comm_size=16, msg_bytes=64) == {"algorithm=MPIR_Gather_intra_binomial": {}}


def test_entries_apply_to_exactly_one_communicator_size_and_their_sizes():
    new = mpich.with_entries(_T, "bcast", 12, [(4096, _TREE3), (65536, {"algorithm=MPIR_Bcast_intra_binomial": {}})])
    mpich.check_table(new)
    pick = lambda n, m: next(iter(mpich.select(new, "bcast", comm_size=n, msg_bytes=m)))  # noqa: E731
    assert pick(12, 1) == pick(12, 4096) == "algorithm=MPIR_Bcast_intra_tree"
    assert pick(12, 4097) == pick(12, 65536) == "algorithm=MPIR_Bcast_intra_binomial"
    assert pick(12, 65537) == "algorithm=MPIR_Bcast_intra_scatter_ring_allgather"  # above the last size: default
    for n in (11, 13):
        assert pick(n, 1024) == "algorithm=MPIR_Bcast_intra_binomial"
        assert pick(n, 65536) == "algorithm=MPIR_Bcast_intra_scatter_ring_allgather"
    assert _T["collective=bcast"]["comm_type=intra"]["comm_size<8"]  # the input is left alone


def _renamed(level: dict, old: str, new: str) -> dict:
    return {new if k == old else k: v for k, v in level.items()}


@pytest.mark.parametrize(
    "edit, says",
    [
        (lambda d: d.update({"comm_type=intra": _renamed(d["comm_type=intra"], "comm_size<8", "comm_sise<8")}), "sise"),
        (lambda d: d["comm_type=intra"].pop("comm_size=any"), "numeric condition needs another condition after it"),
        (lambda d: d["comm_type=intra"].update({"comm_size<=9": {"algorithm=A": {}}}), "nothing may follow"),
        (lambda d: d["comm_type=intra"]["comm_size<8"].update(_TREE3), "a leaf holds one"),
        (lambda d: d["comm_type=intra"].update({"comm_size<8": 1}), "must be a JSON object"),
        (lambda d: d["comm_type=intra"].update({"comm_size<8": {"algorithm=MPIR_Bcast_x": {}}}), "no algorithm"),
        (
            lambda d: d["comm_type=intra"].update(
                {"comm_size<8": {"algorithm=MPIR_Bcast_intra_tree": {"tree_type=knomial": {}, "k=3": {}}}}
            ),
            "tree_type must be one of",
        ),
        (
            lambda d: d["comm_type=intra"].update(
                {"comm_size<8": {"algorithm=MPIR_Bcast_intra_tree": {"tree_type=kary": {}, "k=3": {}}}}
            ),
            "is_non_blocking=N",
        ),
    ],
)
def test_what_mpich_would_assert_on_is_refused_by_name(edit, says):
    doc = copy.deepcopy(_T)
    edit(doc["collective=bcast"])
    known = {"algorithm=MPIR_Bcast_intra_binomial", "algorithm=MPIR_Bcast_intra_tree", "algorithm=A"}
    known.add("algorithm=MPIR_Bcast_intra_scatter_ring_allgather")
    with pytest.raises(InputError, match="selection table: collective=bcast") as e:
        mpich.check_table(doc, known)
    assert says in str(e.value)


def test_embedded_tables_are_found_in_bytes():
    blob = b"\x7fELF\0junk\0" + json.dumps(_T).encode() + b'\0{"collective=broken\0'
    assert mpich.embedded_tables(blob) == [_T]


def test_a_missing_library_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        mpich.find_libmpi(tmp_path / "libmpi.so")
    (tmp_path / "libmpi.so").write_bytes(b"\x7fELF not mpich")
    with pytest.raises(InputError, match="not an MPICH library"):
        mpich.default_table(tmp_path / "libmpi.so")


# ---- the choice -----------------------------------------------------------------------------------------------------
_FFSF = ["fast", "fast", "slow", "fast"]


def test_the_fastest_algorithm_is_chosen_and_written_for_its_sizes_only():
    t = _table()
    prof = hm.paper_profile()
    sel = choose_mpich(prof, _FFSF, ops=["bcast", "gather"], sizes=[65536, 16384, 262144])
    bcast = [r for r in sel.rows if r.op == "bcast"]
    assert [r.size_bytes for r in bcast] == [16384, 65536, 262144]
    for r in bcast:
        assert r.default == "binomial" and r.chosen != "binomial"
        assert picked_fastest(r) and r.chosen_us < r.default_us == r.candidates_us["binomial"]
        assert r.gain_pct == pytest.approx(100 * (r.default_us - r.chosen_us) / r.default_us)
        want = next(c.leaf for c in ops.native_choices("bcast", "MPICH") if c.algorithm == r.chosen)
        assert mpich.select(sel.table, "bcast", comm_size=4, msg_bytes=r.size_bytes) == want
    # one range per run of equal choices, ending at its largest size; larger messages keep the default
    assert sel.entries["bcast"][-1][0] == 262144 and bcast[0].from_bytes == 0
    assert mpich.select(sel.table, "bcast", comm_size=4, msg_bytes=262145) == mpich.select(
        t.table, "bcast", comm_size=4, msg_bytes=262145
    )
    assert sel.entries["gather"] == () and sel.table["collective=gather"] == t.table["collective=gather"]
    assert {k for k in sel.table} == {k for k in t.table}  # still covers every collective
    assert sel.variants == {"bcast": "paper", "gather": "link"}


def test_a_default_hnow_does_not_model_is_kept_and_said():
    # 16 ranks on 2 nodes at 64 KiB: the ch4 device's composition beta, no algorithm hnow models
    sel = choose_mpich(hm.paper_profile(), ["fast"] * 16, ops=["bcast"], sizes=[65536], hosts=["a"] * 8 + ["b"] * 8)
    big = sel.rows[0]
    assert big.default == big.chosen == "composition:beta"
    assert big.default_us is None and big.gain_pct is None
    assert any("not modelled; kept" in n for n in sel.notes)


def test_mpichs_scatter_allgather_default_bcast_is_modelled():
    # from 8 ranks (the table's comm_size<8, pruned as written) above 12288 B MPICH runs scatter + allgather: hnow
    # predicts it (the message schedule of that name) and compares it with the other candidates
    sel = choose_mpich(hm.paper_profile(), ["fast"] * 8, ops=["bcast"], sizes=[1024, 65536])
    big = next(r for r in sel.rows if r.size_bytes == 65536)
    assert big.default == "scatter_recursive_doubling_allgather"
    want = ops.get("bcast").predict(hm.paper_profile(), ["fast"] * 8, big.default, [65536])[0]
    assert big.default_us == pytest.approx(want, rel=1e-12) and big.gain_pct is not None
    assert not any("not modelled" in n for n in sel.notes)
    assert mpich.select(sel.table, "bcast", comm_size=8, msg_bytes=65536) == {
        "algorithm=MPIR_Bcast_intra_scatter_recursive_doubling_allgather": {}
    }
    ring = choose_mpich(hm.paper_profile(), ["fast", "slow"] * 6, ops=["bcast"], sizes=[65536]).rows[0]
    assert ring.default == "scatter_ring_allgather" and ring.default_us is not None


def test_mpichs_default_bcast_is_its_table_read_as_mpich_prunes_it():
    """``native:default`` (MPICH's own choice, the device's collectives off) runs what the installed library's table
    selects at every communicator size and size: binomial below 8 ranks, scatter + allgather from 8 (the table's
    ``comm_size<8``, resolved as written when the communicator is made; csel.c's search would read it as <= 8), on
    flat and node-aware communicators; and it is predicted per size by that algorithm's model."""
    table = _table().table
    nat = ops.native_for("native:default", "bcast", "MPICH")
    assert nat is not None and nat.leaf is None and nat.unset == ("MPIR_CVAR_BCAST_INTRA_ALGORITHM",)
    assert "MPIR_CVAR_BCAST_INTRA_ALGORITHM" not in nat.env and nat.env["MPIR_CVAR_DEVICE_COLLECTIVES"] == "none"
    model = {json.dumps(a.leaf): a.model_tree for a in ops.native_choices("bcast", "MPICH") if a.leaf}
    for hierarchy in ("flat", "parent"):
        for n in range(2, 18):
            for m in (1, 12288, 12289, 65536, 524288, 524289):
                got = mpich.select(table, "bcast", comm_size=n, msg_bytes=m, hierarchy=hierarchy)
                assert model[json.dumps(got)] == nat.tree_at(n, m, hierarchy == "flat"), (hierarchy, n, m, got)
    assert [nat.tree_at(n, 65536) for n in (7, 8, 9, 16)] == [
        "binomial", "scatter_recursive_doubling_allgather", "scatter_ring_allgather",
        "scatter_recursive_doubling_allgather"]  # fmt: skip
    assert nat.tree_at(8, 12288) == "binomial" and nat.tree_at(8, 524289) == "scatter_ring_allgather"
    prof = hm.paper_profile()
    for n, alg in ((7, "binomial"), (8, "scatter_recursive_doubling_allgather"), (9, "scatter_ring_allgather")):
        layout = (["fast", "slow"] * 5)[:n]
        got = ops.native_predict("bcast", "MPICH", prof, layout, [1024, 65536], algorithm=nat)
        small = ops.native_predict("bcast", "MPICH", prof, layout, [1024])[0]  # the pinned binomial
        want = ops.get("bcast").predict(prof, layout, alg, [65536])[0] if alg != "binomial" else None
        assert got[0] == pytest.approx(small, rel=1e-12)
        assert got[1] == pytest.approx(want or ops.native_predict("bcast", "MPICH", prof, layout, [65536])[0])


def test_an_unchanged_choice_leaves_the_default_table():
    t = _table()
    sel = choose_mpich(hm.paper_profile(), ["fast", "slow"], ops=["bcast", "scatter"], sizes=[4096])
    assert sel.entries == {"bcast": (), "scatter": ()} and sel.table == t.table


def test_export_puts_the_files_and_the_run_line_together():
    _table()
    req = AlgorithmRequest(ops=["bcast"], sizes=[262144], layout=_FFSF)
    ex = export(hm.paper_profile(), ["mpich-json"], algorithms=req)
    assert set(ex.files) == {"mpich-json", "mpich-env"} and ex.order is None
    env = ex.placed("/x").files["mpich-env"]
    assert "export MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE=/x/mpich-coll.json" in env
    assert "export MPIR_CVAR_DEVICE_COLLECTIVES=none" in env and "unset MPIR_CVAR_BCAST_INTRA_ALGORITHM" in env
    assert json.loads(ex.files["mpich-json"]) == ex.selection.table
    doc = ex.to_dict()
    assert doc["mpich"]["comm_size"] == 4 and doc["mpich"]["rows"][0]["chosen"] == ex.selection.rows[0].chosen


@pytest.mark.parametrize(
    "kw, says",
    [
        ({"sizes": [0]}, "--sizes: 0"),
        ({"sizes": []}, "--sizes: give"),
        ({"ops": []}, "--ops: give"),
        ({"layout": ["fast"]}, "at least 2 ranks"),
        ({"layout": ["fast", "medium"]}, "unknown node type 'medium'"),
    ],
)
def test_bad_choices_name_the_input(kw, says):
    args = {"layout": _FFSF, "ops": ["bcast"], "sizes": [4096], **kw}
    layout = args.pop("layout")
    with pytest.raises(hm.HnowError, match=says):
        choose_mpich(hm.paper_profile(), layout, **args)


def test_a_network_profile_is_chosen_for_under_its_network_variants():
    _table()
    from tests.helpers import network_profile as _network_profile

    prof = _network_profile()
    sel = choose_mpich(prof, ["fast", "mid", "slow", "fast", "mid", "slow"], ops=["bcast", "gather"], sizes=[65536])
    assert sel.variants == {"bcast": "flow-rr", "gather": "flow"}
    for r in sel.rows:
        want = ops.native_predict(r.op, "MPICH", prof, sel.layout, [65536], variant=sel.variants[r.op])[0]
        assert r.default_us == pytest.approx(want)  # the default is predicted as `--tree native` is
