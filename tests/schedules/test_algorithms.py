"""The generators of hnowmodel.schedules (algorithms, alltoall): each checked against hand-counted facts (bytes each
rank sends and receives, number of steps) and run through a tiny symbolic executor over the block trace they
record, which proves that every rank ends with the data its operation promises (n = 1..9 and a few larger).

The executor: each rank holds, per block, the set of ranks whose contribution it has; a message carries the
sender's sets of the blocks it carries (the sender must hold them), a reduction unions them into the receiver's
(the two must be disjoint: a contribution reduced twice would be a wrong sum), a plain receive replaces them. The
message's bytes must be the bytes of the blocks it carries, and a reduction reduces all of them.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest

from hnowmodel import schedules as S
from hnowmodel.errors import InputError
from hnowmodel.params import paper_profile
from hnowmodel.schedules import closed
from hnowmodel.schedules.impi import pipelined_tree_reduce
from hnowmodel.schedules.steps import MessageSchedule
from hnowmodel.trees import binomial

NS = [*range(1, 10), 12, 16, 17, 24]


def execute(sched: MessageSchedule, trace: S.BlockTrace, hold: list[list[frozenset]]) -> list[list[frozenset]]:
    """Run ``sched`` over the block holdings ``hold[rank][block]`` (see the module docstring)."""
    hold = [list(row) for row in hold]
    steps = list(sched.unrolled())
    assert len(steps) == len(trace.carries)
    nb = trace.block_bytes.size
    for step, carry in zip(steps, trace.carries, strict=True):
        assert carry.shape == (step.n_messages, nb)
        np.testing.assert_allclose(step.nbytes, carry @ trace.block_bytes, rtol=0, atol=1e-9)
        payload = []
        for i in range(step.n_messages):
            src = int(step.src[i])
            blocks = np.flatnonzero(carry[i] & (trace.block_bytes > 0)).tolist()
            assert all(hold[src][b] for b in blocks), f"rank {src} sends a block it does not hold"
            payload.append({b: hold[src][b] for b in blocks})
        for i in range(step.n_messages):
            dst, red = int(step.dst[i]), float(step.reduce_bytes[i])
            if red > 0:
                assert red == step.nbytes[i]
            for b, got in payload[i].items():
                if red > 0:
                    assert not (hold[dst][b] & got), f"rank {dst} reduces a contribution twice into block {b}"
                    hold[dst][b] = hold[dst][b] | got
                else:
                    hold[dst][b] = got
    return hold


def _traced(gen, *args, **kw):
    tr = S.BlockTrace()
    return gen(*args, trace=tr, **kw), tr


def _every(n: int) -> frozenset:
    return frozenset(range(n))


def _own_vector(n: int, nb: int) -> list[list[frozenset]]:
    """Every rank holds its own contribution to every block (a reduction's input)."""
    return [[frozenset({r})] * nb for r in range(n)]


def _check_allreduce(gen, n: int, m: float, **kw) -> MessageSchedule:
    sched, tr = _traced(gen, n, m, **kw)
    out = execute(sched, tr, _own_vector(n, tr.block_bytes.size))
    for r in range(n):
        for b in np.flatnonzero(tr.block_bytes > 0):
            assert out[r][b] == _every(n), (gen.__name__, n, r, b)
    return sched


# ---- allgather -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gen", [S.ring_allgather, S.bruck_allgather, S.recursive_doubling_allgather])
@pytest.mark.parametrize("n", NS)
def test_allgathers_leave_every_block_everywhere(gen, n):
    if gen is S.recursive_doubling_allgather and n & (n - 1):
        with pytest.raises(InputError, match="not a power of two"):
            gen(n, 8)
        return
    m = 8.0
    sched, tr = _traced(gen, n, m)
    hold = [[frozenset({r}) if b == r else frozenset() for b in range(n)] for r in range(n)]
    out = execute(sched, tr, hold)
    assert all(out[r][b] == {b} for r in range(n) for b in range(n))
    assert sched.bytes_sent().tolist() == [(n - 1) * m] * n
    assert sched.bytes_received().tolist() == [(n - 1) * m] * n
    lg = math.ceil(math.log2(n)) if n > 1 else 0
    want = {S.ring_allgather: n - 1, S.recursive_doubling_allgather: lg, S.bruck_allgather: lg + 1}[gen]
    assert sched.n_steps == want


def test_bruck_allgather_by_hand():
    # 6 ranks: steps send 1, 2 and min(4, 6 - 4) = 2 blocks to r - 1, r - 2, r - 4; the own block is copied to
    # the buffer's top first, and the 6 blocks rotated into place last (a step of copies only)
    s = S.bruck_allgather(6, 10)
    assert [st.nbytes.tolist()[:1] for st in s.steps] == [[10], [20], [20], []]
    assert [st.dst.tolist()[:1] for st in s.steps] == [[5], [4], [2], []]
    assert [None if st.copy_bytes is None else st.copy_bytes.tolist() for st in s.steps] == [
        [10.0] * 6,
        None,
        None,
        [60.0] * 6,
    ]


# ---- reductions ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", NS)
def test_recursive_doubling_allreduce(n):
    m = 8.0
    s = _check_allreduce(S.recursive_doubling_allreduce, n, m)
    pof2 = 1 << (n.bit_length() - 1)
    rem, lg = n - pof2, pof2.bit_length() - 1
    assert s.n_steps == lg + (2 if rem else 0)
    want = [m if r < 2 * rem and r % 2 == 0 else (lg + 1) * m if r < 2 * rem else lg * m for r in range(n)]
    assert s.bytes_sent().tolist() == want
    assert s.bytes_received().tolist() == want  # each hand-over comes back: the same counts the other way


def test_recursive_doubling_allreduce_on_3_ranks_by_hand():
    s = S.recursive_doubling_allreduce(3, 8)
    assert [(st.src.tolist(), st.dst.tolist(), st.reduce_bytes.tolist()) for st in s.steps] == [
        ([0], [1], [8.0]),  # rank 0 (even, below 2·rem = 2) hands its vector to rank 1
        ([1, 2], [2, 1], [8.0, 8.0]),  # new ranks 0 (rank 1) and 1 (rank 2) exchange
        ([1], [0], [0.0]),  # the result back to rank 0
    ]


def _check_reduce_scatter(gen, n: int, m: float) -> MessageSchedule:
    """``gen``'s schedule, once the executor proved that every rank ends with every contribution to its block."""
    s, tr = _traced(gen, n, m)
    out = execute(s, tr, _own_vector(n, n))
    assert all(out[r][r] == _every(n) for r in range(n)), (gen.__name__, n)
    return s


@pytest.mark.parametrize("n", NS)
def test_recursive_halving_reduce_scatter(n):
    m = 4.0
    s = _check_reduce_scatter(S.recursive_halving_reduce_scatter, n, m)
    pof2 = 1 << (n.bit_length() - 1)
    rem = n - pof2
    assert s.n_steps == pof2.bit_length() - 1 + (2 if rem else 1)  # a power of two: a last step of copies
    # every rank copies its n blocks first; each of the pof2 copies its result before the post-step (or alone)
    assert s.steps[0].copy_bytes.tolist() == [n * m + (m if n == 1 else 0)] * n
    last = s.steps[-1].copy_bytes.tolist()
    if n > 1:
        assert last == [0.0 if r < 2 * rem and r % 2 == 0 else m for r in range(n)]
    # the even ranks below 2·rem send their whole vector; every other rank sends every block but its own once
    want = [n * m if r < 2 * rem and r % 2 == 0 else (n - 1) * m for r in range(n)]
    assert s.bytes_sent().tolist() == want


@pytest.mark.parametrize("n", NS)
def test_pairwise_reduce_scatter(n):
    m = 4.0
    s = _check_reduce_scatter(S.pairwise_reduce_scatter, n, m)
    assert s.n_steps == max(n - 1, 1) and s.steps[0].copy_bytes.tolist() == [m] * n  # its own block, copied first
    assert s.bytes_sent().tolist() == [(n - 1) * m] * n
    for k, st in enumerate(s.steps[: n - 1], start=1):  # r to r + k, MPICH's order, each block reduced at its rank
        assert st.dst.tolist() == [(r + k) % n for r in range(n)] and st.reduce_bytes.tolist() == [m] * n


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("extra", [0, 1, 3])
def test_rabenseifner_allreduce(n, extra):
    pof2 = 1 << (n.bit_length() - 1)
    m = 4 * pof2 + extra  # 4 elements each, the first `extra` blocks one more
    s = _check_allreduce(S.rabenseifner_allreduce, n, m)
    rem, lg = n - pof2, pof2.bit_length() - 1
    assert s.n_steps == 2 * lg + (2 if rem else 0)
    if extra == 0:  # equal blocks: each new rank sends (pof2 - 1) blocks in each half
        half = 2 * 4 * (pof2 - 1)
        want = [m if r < 2 * rem and r % 2 == 0 else half + m if r < 2 * rem else half for r in range(n)]
        assert s.bytes_sent().tolist() == want
        assert s.bytes_received().tolist() == want
    assert s.bytes_sent().sum() == s.bytes_received().sum()


def test_rabenseifner_needs_a_count_of_at_least_pof2():
    with pytest.raises(InputError, match="at least 4 elements"):
        S.rabenseifner_allreduce(6, 3)
    with pytest.raises(InputError, match="whole number of 8-byte elements"):
        S.rabenseifner_allreduce(4, 100, elem_bytes=8)
    assert S.rabenseifner_allreduce(4, 64, elem_bytes=8).steps[0].nbytes.tolist() == [32.0] * 4


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("count", [None, 1, 5])
def test_ring_allreduce(n, count):
    m = float(n * 3 if count is None else count)  # n equal chunks, or MPICH's uneven split (chunks of 0 included)
    s = _check_allreduce(S.ring_allreduce, n, m)
    if count is None:
        assert s.n_steps == 2 * (n - 1)
        assert s.bytes_sent().tolist() == [2 * (n - 1) * 3.0] * n
        assert s.bytes_received().tolist() == [2 * (n - 1) * 3.0] * n
        assert all(st.repeat == n - 1 for st in s.steps)


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("count", [None, 1, 5, 8192])
def test_intel_mpis_ring_allreduce(n, count):
    m = float(n * 3 if count is None else count)
    s = _check_allreduce(S.ring_allreduce, n, m, intel=True)  # every rank ends with every contribution
    assert s.bytes_sent().sum() == (2 * (n - 1) * m if n > 1 else 0)  # every chunk sent 2 (n - 1) times in all


def test_intel_mpis_ring_as_read_off_the_wire_on_six_ranks():
    # 65536 B = 8192 doubles on 6 ranks: chunks of 1365 doubles, 1367 in the last; ranks 3 and 4 send it once
    s = S.ring_allreduce(6, 65536, elem_bytes=8, intel=True)
    sent = [sorted(float(st.nbytes[st.src.tolist().index(r)]) for st in s.unrolled()) for r in range(6)]
    assert [row.count(10936.0) for row in sent] == [2, 2, 2, 1, 1, 2]
    assert all(row.count(10920.0) == 10 - row.count(10936.0) for row in sent)


def test_ring_allreduce_chunks_as_mpich():
    # count 5 on 4 ranks: ceil(5/4) = 2 while it fits: chunks 2, 2, 1, 0
    tr = S.BlockTrace()
    S.ring_allreduce(4, 5, trace=tr)
    assert tr.block_bytes.tolist() == [2.0, 2.0, 1.0, 0.0]


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("root", [0, "last"])
def test_binomial_reduce_and_bcast(n, root):
    root = n - 1 if root == "last" else 0
    m = 8.0
    red, tr = _traced(S.binomial_reduce, n, m, root)
    out = execute(red, tr, _own_vector(n, 1))
    assert out[root][0] == _every(n)
    lg = math.ceil(math.log2(n)) if n > 1 else 0
    assert red.n_steps == lg
    assert red.bytes_sent().tolist() == [0.0 if r == root else m for r in range(n)]
    # a rank receives from each of its children in the binomial tree (what it sends them in a bcast)
    assert red.bytes_received().tolist() == S.from_tree(binomial(n, root), m).bytes_sent().tolist()
    if n > 1:  # every rank but the root copies its input into its work buffer first
        assert red.steps[0].copy_bytes.tolist() == [0.0 if r == root else m for r in range(n)]
    bc, tr = _traced(S.binomial_bcast, n, m, root)
    hold = [[frozenset({root}) if r == root else frozenset()] for r in range(n)]
    assert all(row[0] == {root} for row in execute(bc, tr, hold))
    assert bc.n_steps == lg
    assert bc.bytes_sent().tolist() == S.from_tree(binomial(n, root), m).bytes_sent().tolist()
    assert bc.bytes_received().tolist() == [0.0 if r == root else m for r in range(n)]


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("root", [0, "last"])
def test_linear_reduce(n, root):
    root = n - 1 if root == "last" else 0
    m = 8.0
    red, tr = _traced(S.linear_reduce, n, m, root)
    assert execute(red, tr, _own_vector(n, 1))[root][0] == _every(n)
    # the root receives from n-1 down to 0, one message a step, and reduces each
    assert [(st.src.tolist(), st.dst.tolist()) for st in red.steps] == [([r], [root]) for r in range(n - 1, -1, -1)
                                                                        if r != root]  # fmt: skip
    assert red.bytes_sent().tolist() == [0.0 if r == root else m for r in range(n)]
    assert all(st.reduce_bytes.tolist() == [m] for st in red.steps)


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("root", [0, 1, "last"])
@pytest.mark.parametrize("extra", [0, 3])
def test_rabenseifner_reduce(n, root, extra):
    """MPICH's reduce_scatter_gather: the root ends with every block reduced over every rank, each contribution
    once (odd roots below 2·rem take new rank 0's place: block 0 handed over first)."""
    root = n - 1 if root == "last" else min(root, n - 1)
    pof2 = 1 << (n.bit_length() - 1)
    m = 4 * pof2 + extra  # 4 elements a block, the first `extra` blocks one more
    red, tr = _traced(S.rabenseifner_reduce, n, m, root)
    out = execute(red, tr, _own_vector(n, tr.block_bytes.size))
    assert all(out[root][b] == _every(n) for b in range(pof2))
    rem, lg = n - pof2, pof2.bit_length() - 1
    handover = 1 if root < 2 * rem and root % 2 else 0
    assert red.n_steps == 2 * lg + (1 if rem else 0) + handover
    if n > 1:  # every rank but the root copies its vector into its work buffer first
        assert red.steps[0].copy_bytes.tolist() == [0.0 if r == root else m for r in range(n)]
    if extra == 0:  # the fold reduces whole vectors; each of the pof2 reduces every block but its own once
        reduced = sum(float(st.reduce_bytes.sum()) for st in red.steps)
        assert reduced == rem * m + (pof2 - 1) * m


def test_rabenseifner_reduce_on_six_ranks_by_hand():
    """6 ranks, 64 doubles (512 B: 128 B blocks over the 4 new ranks 0, 2, 4, 5): 1 -> 0 and 3 -> 2 hand their
    vector over; halving from distance 1 (0 <-> 2, 4 <-> 5: 256 B each way, reduced; then 0 <-> 4, 2 <-> 5: 128 B);
    the gather: 4 -> 0 and 5 -> 2 (128 B), then 2 -> 0 (256 B)."""
    s = S.rabenseifner_reduce(6, 512, elem_bytes=8)
    got = [(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist(), st.reduce_bytes.tolist()) for st in s.steps]
    assert got == [
        ([1, 3], [0, 2], [512.0, 512.0], [512.0, 512.0]),
        ([0, 2, 4, 5], [2, 0, 5, 4], [256.0] * 4, [256.0] * 4),
        ([0, 2, 4, 5], [4, 5, 0, 2], [128.0] * 4, [128.0] * 4),
        ([4, 5], [0, 2], [128.0, 128.0], [0.0, 0.0]),
        ([2], [0], [256.0], [0.0]),
    ]
    with pytest.raises(InputError, match="at least 4 elements"):
        S.rabenseifner_reduce(6, 24, elem_bytes=8)


@pytest.mark.parametrize("n", NS)
def test_reduce_bcast_allreduce(n):
    s = _check_allreduce(S.reduce_bcast_allreduce, n, 8.0)
    lg = math.ceil(math.log2(n)) if n > 1 else 0
    assert s.n_steps == 2 * lg


# ---- alltoall ------------------------------------------------------------------------------------------------
_OMPI_PAIRWISE = functools.partial(S.pairwise_alltoall, xor=False, copy_last=True)


@pytest.mark.parametrize("gen", [S.pairwise_alltoall, S.bruck_alltoall, S.scattered_alltoall, _OMPI_PAIRWISE])
@pytest.mark.parametrize("n", NS)
def test_alltoalls_deliver_every_block(gen, n):
    m = 2.0
    s, tr = _traced(gen, n, m)
    hold = [[frozenset({i}) if b // n == i else frozenset() for b in range(n * n)] for i in range(n)]
    out = execute(s, tr, hold)
    assert all(out[j][i * n + j] == {i} for i in range(n) for j in range(n))
    if gen is S.bruck_alltoall:
        lg = math.ceil(math.log2(n)) if n > 1 else 0
        assert s.n_steps == lg + 1  # the last step only copies
        per_step = [sum(1 for p in range(n) if p & (1 << k)) for k in range(lg)]
        assert s.bytes_sent().tolist() == [sum(per_step) * m] * n
        # the rotation (n blocks) before the first step, each step's packing, the rotation back and reversal
        want = [(c + (n if k == 0 else 0)) * m for k, c in enumerate(per_step)] + [2 * n * m] if n > 1 else [3 * m]
        assert [st.copy_bytes[0] for st in s.steps] == want
    else:
        extra = gen is _OMPI_PAIRWISE and n > 1  # Open MPI's pairwise copies its own block last, a step of its own
        assert s.n_steps == max(n - 1, 1) + extra  # one rank: a step of its own block's copy only
        assert s.bytes_sent().tolist() == [(n - 1) * m] * n
    assert s.bytes_received().tolist() == s.bytes_sent().tolist()


def test_bruck_alltoall_by_hand():
    # 5 ranks: positions with bit 0 set: 1, 3; bit 1: 2, 3; bit 2: 4 -> 2, 2, 1 blocks, to r + 1, r + 2, r + 4
    s = S.bruck_alltoall(5, 10)
    assert [st.nbytes.tolist()[:1] for st in s.steps] == [[20.0], [20.0], [10.0], []]
    assert [st.dst.tolist()[:1] for st in s.steps] == [[1], [2], [4], []]
    assert s.bytes_sent().tolist() == [50.0] * 5


def test_pairwise_peers_as_mpich():
    assert [st.dst.tolist() for st in S.pairwise_alltoall(3, 1).steps] == [[1, 2, 0], [2, 0, 1]]
    assert [st.dst.tolist() for st in S.pairwise_alltoall(4, 1).steps][0] == [1, 0, 3, 2]


def test_pairwise_peers_as_open_mpi():
    # ompi_coll_base_alltoall_intra_pairwise: shifts for every n (no XOR), the own block last
    s = _OMPI_PAIRWISE(4, 1)
    assert [st.dst.tolist() for st in s.steps] == [[1, 2, 3, 0], [2, 3, 0, 1], [3, 0, 1, 2], []]
    assert [st.copy_bytes is None or not st.copy_bytes.any() for st in s.steps] == [True, True, True, False]


def test_scattered_waits_only_between_batches():
    s = S.scattered_alltoall(6, 1, throttle=0)
    assert [st.waits for st in s.steps] == [False] * 5
    assert [st.waits for st in S.scattered_alltoall(6, 1).steps] == [False] * 5  # 32 at once: one batch
    assert [st.waits for st in S.scattered_alltoall(6, 1, throttle=2).steps] == [False, True, False, True, False]


# ---- every generator through the closed-form engine ---------------------------------------------------------
@pytest.mark.parametrize(
    "gen",
    [
        S.ring_allgather,
        S.bruck_allgather,
        S.recursive_doubling_allreduce,
        S.recursive_halving_reduce_scatter,
        S.rabenseifner_allreduce,
        S.ring_allreduce,
        S.reduce_bcast_allreduce,
        S.linear_reduce,
        S.pairwise_alltoall,
        _OMPI_PAIRWISE,
        S.bruck_alltoall,
        S.scattered_alltoall,
    ],
)
def test_every_generator_evaluates_as_its_unrolled_steps(gen):
    # a repeated step settled by max-plus linearity gives the same number as every repetition run
    n, m = 12, 96.0
    lay = ["fast", "slow"] * 6
    s = gen(n, m)
    flat = MessageSchedule(n, tuple(s.unrolled()), s.name)
    base = paper_profile()  # with a copy line, so that the local copies cost something
    prof = dataclasses.replace(
        base,
        types={k: dataclasses.replace(t, Cc_us=2.0, Cm_us_per_byte=0.004, regimes=()) for k, t in base.types.items()},
    )
    got = closed.evaluate(prof, lay, s, reduce_us_per_byte=0.01)
    want = closed.evaluate(prof, lay, flat, reduce_us_per_byte=0.01)
    assert got == pytest.approx(want, rel=1e-12)
    assert got > 0


def test_generators_refuse_bad_input():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError, match="number of ranks"):
            S.ring_allgather(bad, 8)
    with pytest.raises(InputError, match="message size"):
        S.ring_allgather(4, -1)
    with pytest.raises(InputError, match="root"):
        S.binomial_reduce(4, 8, root=4)
    with pytest.raises(InputError, match="throttle"):
        S.scattered_alltoall(4, 8, throttle=-1)


# ---- Open MPI's Rabenseifner allreduce ----------------------------------------------------------------------------
@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("extra", [0, 1, 3])
def test_ompi_rabenseifner_allreduce(n, extra):
    pof2 = 1 << (n.bit_length() - 1)
    m = 4 * pof2 + extra  # 4 elements a window, or Open MPI's uneven halving
    s = _check_allreduce(S.ompi_rabenseifner_allreduce, n, m)
    rem, lg = n - pof2, pof2.bit_length() - 1
    assert s.n_steps == 2 * lg + (3 if rem else 0)
    assert s.bytes_sent().sum() == s.bytes_received().sum()
    if extra == 0:  # the pairs swap halves, the odd one sends a half back; each new rank sends pof2 - 1 windows twice
        both = 2 * 4 * (pof2 - 1)
        want = [m / 2 + both + m if r < 2 * rem and r % 2 == 0 else m if r < 2 * rem else both for r in range(n)]
        assert s.bytes_sent().tolist() == want


def test_ompi_rabenseifner_allreduce_on_six_ranks_by_hand():
    """6 ranks, 2048 doubles (16 KiB): 0 <-> 1 and 2 <-> 3 swap 8 KiB halves, 1 -> 0 and 3 -> 2 send their reduced
    right half (8 KiB); the new ranks are 0, 2, 4, 5 (MPICH's: 1, 3, 4, 5): halving 0 <-> 2, 4 <-> 5 (8 KiB each way,
    reduced), 0 <-> 4, 2 <-> 5 (4 KiB); doubling back 0 <-> 4, 2 <-> 5 (4 KiB), 0 <-> 2, 4 <-> 5 (8 KiB); 0 -> 1 and
    2 -> 3 the whole 16 KiB."""
    s = S.ompi_rabenseifner_allreduce(6, 16384, elem_bytes=8)
    k = 1024.0
    want = [
        ([0, 1, 2, 3], [1, 0, 3, 2], [8 * k] * 4, [8 * k] * 4),
        ([1, 3], [0, 2], [8 * k] * 2, [0.0] * 2),
        ([0, 2, 4, 5], [2, 0, 5, 4], [8 * k] * 4, [8 * k] * 4),
        ([0, 2, 4, 5], [4, 5, 0, 2], [4 * k] * 4, [4 * k] * 4),
        ([0, 2, 4, 5], [4, 5, 0, 2], [4 * k] * 4, [0.0] * 4),
        ([0, 2, 4, 5], [2, 0, 5, 4], [8 * k] * 4, [0.0] * 4),
        ([0, 2], [1, 3], [16 * k] * 2, [0.0] * 2),
    ]
    got = [(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist(), st.reduce_bytes.tolist()) for st in s.steps]
    assert got == want


def test_ompi_rabenseifner_halves_windows_as_open_mpi():
    # 7 doubles on 4 ranks: 7 -> 3 | 4 -> 1 2 | 2 2 (wsize / 2 to the left); MPICH's blocks would be 2 2 2 1
    tr = S.BlockTrace()
    S.ompi_rabenseifner_allreduce(4, 56, elem_bytes=8, trace=tr)
    assert tr.block_bytes.tolist() == [8.0, 16.0, 16.0, 16.0]
    with pytest.raises(InputError, match="at least 4 elements"):
        S.ompi_rabenseifner_allreduce(6, 24, elem_bytes=8)


def test_intel_mpis_pipelined_chain_reduce_builds_on_a_chain_longer_than_pythons_recursion_limit():
    """The steps up a tree are found without recursion: a chain of 1500 ranks (the issue's 2048-rank layouts)."""
    s = pipelined_tree_reduce(1500, 8, tree="chain")
    assert [(st.src.tolist(), st.dst.tolist()) for st in s.steps[:2]] == [([1499], [1498]), ([1498], [1497])]
    assert len(s.steps) == 1499 and s.steps[-1].dst.tolist() == [0]
