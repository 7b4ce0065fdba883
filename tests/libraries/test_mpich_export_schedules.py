"""``hnow export --format mpich-json`` for the operations whose algorithms are message schedules (reduce, allreduce,
allgather, reduce_scatter, alltoall): the keys MPICH's selection reads for each (``collective=``, ``avg_msg_size``
or ``total_msg_size``, the guards of an algorithm MPICH runs only under conditions), the sizes' boundaries, the
choice against MPICH's default, and the formats that refuse them. No MPI: the MPICH default table is read from the
installed ``libmpi`` (skipped without one) or written here."""

from __future__ import annotations

import copy
import json

import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.export import AlgorithmRequest, choose_mpich, export, mpich_env_text
from hnowmodel.libraries.mpich import defaults
from hnowmodel.libraries.mpich import selection as mpich
from hnowmodel.params import Profile
from tests.helpers import picked_fastest

_OPS = ("reduce", "allreduce", "allgather", "reduce_scatter", "alltoall")
_SIZES = (8, 16, 64, 1024, 16384, 65536, 262144, 1 << 20)


def _table() -> mpich.DefaultTable:
    try:
        return mpich.default_table()
    except InputError as e:
        pytest.skip(f"no MPICH library here: {e}")


def _gamma_profile() -> Profile:
    """The paper's profile with a reduction cost γ per node type (µs per byte), which the reductions need."""
    doc = hm.paper_profile().to_dict()
    doc["extensions"] = {
        "reduce": {
            "types": {
                "fast": {"Gc_us": 0.0, "Gm_us_per_byte": 2e-4},
                "slow": {"Gc_us": 1.0, "Gm_us_per_byte": 5e-4},
            }
        }
    }
    return Profile.from_dict(doc)


def _leaf(op: str, name: str) -> dict:
    return next(dict(a.leaf) for a in ops.native_choices(op, "MPICH") if a.algorithm == name)


# ---- the file's keys ------------------------------------------------------------------------------------------------
_OLD = {"algorithm=OLD": {}}
_DOC = {f"collective={mpich.collective(op)}": {"comm_type=intra": _OLD} for op in _OPS}


@pytest.mark.parametrize(
    "op, name, size_key, guard",
    [
        ("allreduce", "recursive_doubling", "avg_msg_size<=1024", None),
        ("allreduce", "ring", "avg_msg_size<=1024", ["is_commutative=yes", "is_commutative=no"]),
        ("allreduce", "reduce_scatter_allgather", "avg_msg_size<=1024", ["is_op_built_in=yes", "is_op_built_in=no"]),
        ("reduce", "binomial", "avg_msg_size<=1024", None),
        ("alltoall", "brucks", "avg_msg_size<=1024", ["is_sendbuf_inplace=no", "is_sendbuf_inplace=yes"]),
        ("allgather", "brucks", "total_msg_size<=4096", None),  # p·m: MPICH has no avg_msg_size for allgather
        ("reduce_scatter", "recursive_halving", "total_msg_size<=4096", ["is_commutative=yes", "is_commutative=no"]),
    ],
)
def test_each_operation_is_written_under_the_keys_mpich_reads(op, name, size_key, guard):
    leaf = _leaf(op, name)
    coll = mpich.collective(op)
    assert next(iter(leaf)).startswith(f"algorithm=MPIR_{coll.capitalize()}_intra_")
    doc = mpich.with_entries(_DOC, op, 4, [(1024, leaf)])
    mpich.check_table(doc)  # what MPICH's parser would assert on
    intra = doc[f"collective={coll}"]["comm_type=intra"]
    assert list(intra) == ["comm_size<=3", "comm_size<=4", "comm_size=any"]
    mine = intra["comm_size<=4"]
    assert list(mine) == [size_key, size_key.partition("<=")[0] + "=any"] and mine[list(mine)[1]] == _OLD
    node = mine[size_key]
    if guard is None:
        assert node == leaf
    else:
        assert list(node) == guard and node[guard[1]] == _OLD  # where MPICH cannot run it: the table before
    for other in set(_DOC) - {f"collective={coll}"}:
        assert doc[other] == _DOC[other]


def test_rabenseifner_runs_only_from_as_many_elements_as_the_largest_power_of_two():
    """MPICH asserts ``count >= pof2`` in its Rabenseifner allreduce (MPI_Init itself reduces a few elements): the
    entry sends fewer elements to the table before, and user-defined ops too."""
    leaf = _leaf("allreduce", "reduce_scatter_allgather")
    doc = mpich.with_entries(_DOC, "allreduce", 6, [(1 << 20, leaf)])
    node = doc["collective=allreduce"]["comm_type=intra"]["comm_size<=6"]["avg_msg_size<=1048576"]
    assert node == {"is_op_built_in=yes": {"count<pow2": _OLD, "count=any": leaf}, "is_op_built_in=no": _OLD}
    # 6 ranks: pof2 = 4 doubles = 32 bytes
    assert mpich.select(doc, "allreduce", comm_size=6, msg_bytes=24) == _OLD
    assert mpich.select(doc, "allreduce", comm_size=6, msg_bytes=32) == leaf


@pytest.mark.parametrize("op", _OPS)
def test_the_ranges_boundaries_are_the_registrys_m(op):
    """Up to and including each range's m (the registry's m: a vector, a block) its leaf, one byte above the next
    range's, above the last one the table before; other communicator sizes keep the table before."""
    names = [a.algorithm for a in ops.native_choices(op, "MPICH") if a.leaf]
    first, second = _leaf(op, names[0]), _leaf(op, names[-1])
    doc = mpich.with_entries(_DOC, op, 4, [(1024, first), (65536, second)])
    n = 4

    def sel(m: int, comm_size: int = n) -> dict:
        return mpich.select(doc, op, comm_size=comm_size, msg_bytes=m)

    assert sel(8) == sel(1024) == first
    assert sel(1032) == sel(65536) == second  # 1032: the next whole number of doubles
    assert sel(65544) == _OLD and sel(1024, 3) == _OLD and sel(1024, 5) == _OLD


# ---- the default and the choice ------------------------------------------------------------------------------------
def test_the_default_table_and_the_registrys_default_rules_agree():
    """MPICH's default, read from its table with hnow's own call's facts (MPI_SUM on doubles, not in place), is the
    registry's default rule (:data:`hnowmodel.libraries.mpich.defaults.RULES`) at every size and communicator size."""
    table = _table().table
    for op in _OPS:
        by_leaf = {json.dumps(a.leaf): a.algorithm for a in ops.native_choices(op, "MPICH") if a.leaf}
        for n in range(2, 18):
            for m in (8, 16, 24, 64, 256, 264, 2048, 2056, 8192, 32768, 32776, 65536, 131072, 1 << 20):
                got = mpich.select(table, op, comm_size=n, msg_bytes=m)
                assert by_leaf.get(json.dumps(got)) == defaults.RULES[op](n, m, True), (op, n, m, got)


@pytest.mark.parametrize("layout", [("fast", "slow", "fast", "slow"), ("fast", "slow", "fast"), ("fast", "slow")])
def test_the_choice_is_the_fastest_modelled_and_the_file_runs_it(layout):
    _table()
    sel = choose_mpich(_gamma_profile(), list(layout), ops=_OPS, sizes=_SIZES)
    n = len(layout)
    assert set(sel.entries) == set(_OPS)
    mpich.check_table(sel.table, _table().algorithms)
    for r in sel.rows:
        got = mpich.select(sel.table, r.op, comm_size=n, msg_bytes=r.size_bytes)
        if r.default_us is None:  # MPICH's default is not modelled there (reduce_scatter_gather, pairwise): kept
            assert r.chosen == r.default and got == mpich.select(
                _table().table, r.op, comm_size=n, msg_bytes=r.size_bytes
            )
            continue
        assert picked_fastest(r) and r.chosen_us <= r.default_us
        if r.chosen != r.default:
            assert r.chosen_us < r.default_us * (1 - 1e-9)  # ties keep the default
        assert got == _leaf(r.op, r.chosen)  # read back: the file runs what was chosen
        if r.op == "allreduce" and r.size_bytes // 8 < 1 << (n.bit_length() - 1):
            assert "reduce_scatter_allgather" not in r.candidates_us  # MPICH does not run it there
        if r.op == "allgather" and n & (n - 1):
            assert "recursive_doubling" not in r.candidates_us  # a power of two only
    assert any(sel.entries[op] for op in ("allreduce", "allgather", "alltoall"))


def test_an_export_of_the_tree_operations_is_unchanged_by_the_new_ones():
    """bcast's entries, and the control variables the settings unset, are the same with the other operations in
    the export: the file only gains the other operations' entries."""
    _table()
    prof = _gamma_profile()
    alone = choose_mpich(prof, ["fast", "slow", "fast", "slow"], ops=("bcast",), sizes=(1024, 65536))
    both = choose_mpich(prof, ["fast", "slow", "fast", "slow"], ops=("bcast", "allreduce"), sizes=(1024, 65536))
    assert both.table["collective=bcast"] == alone.table["collective=bcast"]
    files = [mpich_env_text(s, "/x.json") for s in (alone, both)]
    assert "ALLREDUCE" not in files[0] and "unset MPIR_CVAR_BCAST_INTRA_ALGORITHM" in files[0]
    assert "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM" in files[1]


def test_reductions_need_gamma_and_open_mpis_format_refuses_the_new_operations():
    _table()
    req = AlgorithmRequest(ops=("allreduce",), sizes=(1024,), layout=("fast", "slow"))
    with pytest.raises(InputError, match="reduction cost"):
        export(hm.paper_profile(), ["mpich-json"], algorithms=req)
    # Open MPI's rules file and Intel MPI's strings write them too (tests/libraries/test_openmpi_export_schedules.py)
    both = export(_gamma_profile(), ["mpich-json", "impi-env"], algorithms=req)
    assert both.selection.entries.keys() == {"allreduce"} and both.impi.entries.keys() == {"allreduce"}
    with pytest.raises(InputError, match="not yet supported for a rank order"):
        export(_gamma_profile(), ["hostfile"], op="alltoall")
    ex = export(_gamma_profile(), ["mpich-json"], algorithms=req)
    assert ex.selection.entries.keys() == {"allreduce"} and "collective=allreduce" in ex.files["mpich-json"]


def test_the_file_mpich_would_assert_on_is_refused():
    """An allgather entry by ``avg_msg_size`` would make MPICH assert (``get_avg_msgsize``): hnow never writes
    one, and reading such a table for allgather is refused rather than guessed."""
    doc = copy.deepcopy(_DOC)
    doc["collective=allgather"]["comm_type=intra"] = {"avg_msg_size<=8": _OLD, "avg_msg_size=any": _OLD}
    with pytest.raises(InputError, match="cannot evaluate the condition 'avg_msg_size<=8' for allgather"):
        mpich.select(doc, "allgather", comm_size=4, msg_bytes=8)
