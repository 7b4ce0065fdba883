"""MPICH's scatter + allgather bcasts as message schedules (hnowmodel/schedules/bcast.py): MPICH's chunking, the
binomial scatter's messages (empty chunks not sent), the ring's and recursive doubling's chunks, relative to the root,
each checked against schedules written out by hand from MPICH's loops (bcast_utils.c, bcast_intra_scatter_*.c);
both engines evaluate them as they evaluate the hand-written ones, through the registry and MPICH's natives."""

from __future__ import annotations

import numpy as np
import pytest

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.schedules import (
    MessageSchedule,
    Step,
    bcast_chunks,
    closed,
    flows,
    recursive_doubling_allgather,
    ring_allgather,
    scatter_for_bcast,
    scatter_recursive_doubling_allgather,
    scatter_ring_allgather,
)


def _msgs(s: MessageSchedule) -> list[list[tuple[int, int, float]]]:
    return [list(zip(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist(), strict=True)) for st in s.unrolled()]


@pytest.mark.parametrize(
    ("n", "m", "want"),
    [
        (4, 10, [3, 3, 3, 1]),  # ceil(10/4) = 3, the last chunk short
        (5, 12, [3, 3, 3, 3, 0]),  # the last one empty
        (6, 7, [2, 2, 2, 1, 0, 0]),
        (4, 8, [2, 2, 2, 2]),
        (3, 0, [0, 0, 0]),
    ],
)
def test_chunks_are_mpichs_ceiling_division(n, m, want):
    assert bcast_chunks(n, m).tolist() == want
    with pytest.raises(InputError, match="whole number of bytes"):
        bcast_chunks(4, 10.5)


def test_the_scatter_sends_each_child_its_subtrees_chunks_and_skips_empty_ones():
    # 6 ranks, 7 B: chunks 2,2,2,1,0,0; binomial: 0 -> 4 (chunks 4-5: empty, no send), 0 -> 2 (chunks 2-3), 0 -> 1,
    # 2 -> 3; 4 -> 5 empty too
    assert _msgs(scatter_for_bcast(6, 7)) == [[(0, 2, 3.0)], [(0, 1, 2.0), (2, 3, 1.0)]]
    # root 2: relative rank i is rank (i + 2) % 6
    assert _msgs(scatter_for_bcast(6, 7, root=2)) == [[(2, 4, 3.0)], [(2, 3, 2.0), (4, 5, 1.0)]]
    # 8 ranks, 64 B: every chunk 8 B, the whole subtree's chunks down each edge
    s = scatter_for_bcast(8, 64)
    assert s.bytes_received().tolist() == [0, 8, 16, 8, 32, 8, 16, 8]


def test_ring_on_5_ranks_with_an_empty_chunk_by_hand():
    # 5 ranks, 12 B, root 0: chunks 3,3,3,3,0. Scatter 0->2 (6 B), 0->1 (3), 2->3 (3); 0->4 would carry nothing.
    # Ring step i (0..3): rank r sends chunk (r - i) % 5 to r + 1, the empty one as a 0-byte message.
    s = scatter_ring_allgather(5, 12)
    c = [3.0, 3.0, 3.0, 3.0, 0.0]
    ring = [[(r, (r + 1) % 5, c[(r - i) % 5]) for r in range(5)] for i in range(4)]
    assert _msgs(s) == [[(0, 2, 6.0)], [(0, 1, 3.0), (2, 3, 3.0)], *ring]
    assert s.bytes_sent().tolist() == [18.0, 9.0, 12.0, 12.0, 9.0]  # ring: 12 B less the chunk of r + 1


def test_ring_on_6_ranks_relative_to_the_root():
    # 6 ranks, 7 B, root 3: the same schedule as root 0 with every rank r placed at (r + 3) % 6
    zero, three = scatter_ring_allgather(6, 7), scatter_ring_allgather(6, 7, root=3)
    moved = [[((a + 3) % 6, (b + 3) % 6, x) for a, b, x in st] for st in _msgs(zero)]
    assert _msgs(three) == moved and three.name == "scatter_ring_allgather(root=3)"
    assert len(_msgs(zero)) == 2 + 5  # two scatter steps left (the first one's only message was empty), 5 ring steps


def test_recursive_doubling_on_4_ranks_by_hand():
    # 4 ranks, 10 B, root 1: chunks 3,3,3,1 on relative ranks 0..3 = ranks 1,2,3,0. Scatter (relative) 0->2 (4 B),
    # 0->1 (3), 2->3 (1); then exchanges with rel ^ 1 of the own chunk, with rel ^ 2 of the pair's chunks.
    s = scatter_recursive_doubling_allgather(4, 10, root=1)
    assert _msgs(s) == [
        [(1, 3, 4.0)],
        [(1, 2, 3.0), (3, 0, 1.0)],
        [(1, 2, 3.0), (2, 1, 3.0), (3, 0, 3.0), (0, 3, 1.0)],
        [(1, 3, 6.0), (2, 0, 6.0), (3, 1, 4.0), (0, 2, 4.0)],
    ]
    with pytest.raises(InputError, match="6 ranks is not a power of two"):
        scatter_recursive_doubling_allgather(6, 10)


def test_equal_blocks_give_the_allgathers_as_before():
    for gen in (ring_allgather, recursive_doubling_allgather):
        plain, blocks = gen(8, 16.0), gen(8, 0.0, blocks=[16.0] * 8)
        assert [m for st in _msgs(plain) for m in st] == [m for st in _msgs(blocks) for m in st]
    with pytest.raises(InputError, match="one finite number of bytes"):
        ring_allgather(3, 0.0, blocks=[1, 2])


def _by_hand_4_root_1() -> MessageSchedule:
    steps = [
        Step.of([1], [3], 4.0),
        Step.of([1, 3], [2, 0], [3.0, 1.0]),
        Step.of([1, 2, 3, 0], [2, 1, 0, 3], [3.0, 3.0, 3.0, 1.0]),
        Step.of([1, 2, 3, 0], [3, 0, 1, 2], [6.0, 6.0, 4.0, 4.0]),
    ]
    return MessageSchedule(4, tuple(steps), "by hand")


def test_both_engines_predict_the_schedule_written_by_hand():
    prof, lay = hm.paper_profile(), ["fast", "slow", "slow", "fast"]
    o = ops.get("bcast")
    hand = _by_hand_4_root_1()
    for variant in ("paper", "flow"):
        got = o.predict(prof, lay, "scatter_recursive_doubling_allgather", [10], variant=variant, root=1)[0]
        if variant == "paper":
            want = closed.evaluate(prof, lay, hand)
        else:
            want = flows.evaluate(prof, lay, hand).completion_us
        assert got == pytest.approx(want, rel=1e-12) and got > 0


def test_empty_message_costs_the_allgathers_messages():
    # at 0 bytes the scatter sends nothing and each allgather step is one 0-byte message a rank (170 us on the
    # paper's fast nodes, as a 2-rank bcast of 0 bytes): 3 ring steps, 2 recursive-doubling steps on 4 ranks
    prof, lay = hm.paper_profile(), ["fast"] * 4
    for variant in ("paper", "flow"):
        ring = ops.get("bcast").predict(prof, lay, "scatter_ring_allgather", [0], variant=variant)[0]
        rd = ops.get("bcast").predict(prof, lay, "scatter_recursive_doubling_allgather", [0], variant=variant)[0]
        assert (ring, rd) == (pytest.approx(510.0), pytest.approx(340.0))


def test_mpichs_natives_pin_and_predict_them():
    prof, lay = hm.paper_profile(), ["fast", "slow", "fast", "slow", "slow"]
    for name in ("scatter_ring_allgather", "scatter_recursive_doubling_allgather"):
        nat = ops.native_for(f"native:{name}", "bcast", "MPICH")
        assert nat.env["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == name and nat.model_tree == name
        assert ops.native_for(f"native:{name}", "scatter", "MPICH") is None  # a bcast algorithm only
    sizes = [16384, 65536]
    for variant in ("paper", "flow"):
        got = hm.predict("bcast", prof, lay, "native:scatter_ring_allgather", sizes, library="MPICH", variant=variant)
        want = ops.get("bcast").predict(prof, lay, "scatter_ring_allgather", sizes, variant=variant)
        np.testing.assert_allclose(got, want, rtol=1e-12)
    with pytest.raises(InputError, match="not a power of two"):  # pinned on 5 ranks: that branch is not modelled
        hm.predict("bcast", prof, lay, "native:scatter_recursive_doubling_allgather", sizes, library="MPICH")
    # the chunks keep the scatter + ring cheaper than the binomial tree for a large message on equal nodes
    big = [1 << 20]
    tree = ops.get("bcast").predict(prof, ["fast"] * 8, "binomial", big)[0]
    assert ops.get("bcast").predict(prof, ["fast"] * 8, "scatter_ring_allgather", big)[0] < tree
