"""The closed-form (paper) engine over a message schedule: each message costs the sender's ``S``, the wire's ``X``
and the receiver's ``R`` at the message's own size and regime (Banikazemi et al., eq. 1-4), and every rank works
through the schedule's steps by the rules of :mod:`hnowmodel.schedules.steps`.

Each rank keeps two clocks (µs): ``posted``, when it posted its last send, and ``done``, when it completed its last
receive (and the reduction of it), local copy included. A step, vectorised over its messages (no Python loop over
messages or ranks):

* a rank with ``copy_bytes`` copies first: from ``max(posted, done)`` for ``C(copy_bytes)`` (the type's copy line,
  ``Cc_us``/``Cm_us_per_byte``); both clocks become its end;
* a send starts at ``max(posted, done)`` when the step ``waits``, else at ``posted``; ``posted[src] = start +
  S_src(b)`` and the message arrives at ``posted[src] + X_src,dst(b)``;
* a message marked ``rendezvous`` (``Step.rendezvous``: a synchronous send, a relay's struct datatype) is
  transferred only once its receiver has reached the step, posted its receive: from ``max(posted[src],
  reach[dst])``, with ``reach`` the receiver's ``max(posted, done)`` (``posted`` in a step that does not wait)
  at the start of the step, before its copy and send (the closed form has no rendezvous size: only marked
  messages wait so);
* the messages of one pair (sender, receiver) take its wire one after another, as the flow engine's one
  connection per pair: a transfer starts no earlier than the pair's previous message has had its wire time ``W``
  (the per-byte part of ``X``; ``X - W`` is the latency after the last byte), and arrives ``X`` after its start.
  A tree never sends twice between one pair, and a step that waits for the previous receive finds the wire free
  (its previous message arrived before): the rule binds where a pair carries a batch, a pipelined tree's
  segments;
* ``done[dst] = max(done[dst], posted[dst], arrival) + R_dst(b) + gamma_dst * reduce_bytes`` (``posted[dst]``
  after the receiver's own send of the step).

Between two ranks of one host (the layout's ``hosts``) ``S``, ``X`` and ``R`` are the type's shared-memory ones
(:meth:`~hnowmodel.params.Profile.shm_costs`). The completion is the max over ranks of ``max(posted, done)``.

On a tree compiled by :func:`~hnowmodel.schedules.fromtree.from_tree` these rules are eq. 6-7 (bcast) and the
scatter of :func:`hnowmodel.closedform.scatter` exactly, the root's copy included (``tests/schedules/test_schedules.py``
checks every tree family and every paper bcast and scatter case of the golden corpus to 1e-12). A gather is not:
eq. 10-12 queue a parent's messages on its inbound link (the i-th arrival after ``i`` wire times) and take them in
arrival order, while a schedule fixes the order of a rank's receives and each message here has its own wire.
A pipelined tree (``from_tree(..., segment_bytes=...)``) is a schedule of segments, an edge's segments one after
another on its pair's wire (``tests/schedules/test_fromtree_options.py``: a chain of 3 in 2 segments, hand-computed).

>>> from hnowmodel.params import paper_profile
>>> from hnowmodel.schedules.steps import MessageSchedule, Step
>>> ring = MessageSchedule(3, (Step.of([0, 1, 2], [1, 2, 0], 0.0, repeat=2),), "ring")
>>> evaluate(paper_profile(), ["fast"] * 3, ring)   # S + X + R = 170, then a send once received: + 170
340.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..closedform import _tables
from ..errors import InputError, LayoutError
from ..layout import hosts_of, one_per_host
from ..params import Profile
from .steps import MessageSchedule, Step

__all__ = ["evaluate", "step_costs", "CostTables"]

#: Relative tolerance to which one repetition of a step must advance every clock by the same amount before the
#: remaining repetitions are added in one go (max-plus linearity, see :func:`evaluate`).
RTOL = 1e-12


def _gamma(profile: Profile, ti: np.ndarray, reduce_us_per_byte: float | Mapping[str, float]) -> np.ndarray:
    """µs per reduced byte of every rank (a float for all, or per node type; a type left out: 0)."""
    if isinstance(reduce_us_per_byte, Mapping):
        unknown = sorted(set(reduce_us_per_byte) - set(profile.types))
        if unknown:
            raise InputError(f"reduce_us_per_byte: unknown node type {unknown[0]!r} (profile has: "
                             f"{', '.join(profile.types)})")  # fmt: skip
        per_type = np.array([float(reduce_us_per_byte.get(t, 0.0)) for t in profile.types])
    else:
        per_type = np.full(len(profile.types), float(reduce_us_per_byte))
    if not np.all(np.isfinite(per_type)) or np.any(per_type < 0):
        raise InputError("reduce_us_per_byte: must be finite numbers of µs per byte >= 0")
    return per_type[ti]


class CostTables:
    """A profile's lines as arrays, one set per regime segment (between two consecutive breakpoints of any of its
    parameters every parameter is on one line): ``node[seg, type]`` = ``(Sc, Sm, Rc, Rm, Cc, Cm)``,
    ``link[seg, sender type, receiver type]`` = ``(Xc, Xm)``, ``shm[seg, type]`` = the shared-memory ``(Sc, Sm, Rc,
    Rm, Xc, Xm)`` (NaN: the profile has none). Each cost is ``c + k·bytes`` on the line of its own size's segment:
    the numbers of :meth:`~hnowmodel.params.NodeType.send_us` and friends, without a loop over types.
    """

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.bounds = np.asarray(profile.breakpoints, dtype=float)
        reps = np.r_[self.bounds, self.bounds[-1] + 1] if self.bounds.size else np.zeros(1)
        tabs = [_tables(profile.at(float(r))) for r in reps]  # a bound is inclusive: it stands for its segment
        self.node = np.stack([t for t, _, _ in tabs])
        self.link = np.stack([lk for _, lk, _ in tabs])
        self.shm = np.stack([sh for _, _, sh in tabs])

    def segment(self, nbytes: np.ndarray) -> np.ndarray:
        """The regime segment of each byte count (the first breakpoint >= it)."""
        if not self.bounds.size:
            return np.zeros(nbytes.shape, dtype=np.int64)
        return np.searchsorted(self.bounds, nbytes, side="left")

    def messages(
        self, ti: np.ndarray, hosts: np.ndarray | None, src: np.ndarray, dst: np.ndarray, b: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(S, X, R)`` in µs of messages ``src -> dst`` of ``b`` bytes (ranks' type indices ``ti``; ``hosts``:
        each rank's host, None: one rank per host)."""
        S, X, R, _ = self.messages_wire(ti, hosts, src, dst, b)
        return S, X, R

    def messages_wire(
        self, ti: np.ndarray, hosts: np.ndarray | None, src: np.ndarray, dst: np.ndarray, b: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(S, X, R, W)`` in µs: :meth:`messages` and ``W``, the per-byte part of ``X`` (how long the message
        occupies its pair's wire; ``X - W`` is the latency after its last byte)."""
        seg, ts, td = self.segment(b), ti[src], ti[dst]
        nd, lk = self.node, self.link
        S = nd[seg, ts, 0] + nd[seg, ts, 1] * b
        W = lk[seg, ts, td, 1] * b
        X = lk[seg, ts, td, 0] + W
        R = nd[seg, td, 2] + nd[seg, td, 3] * b
        if hosts is not None:
            same = np.flatnonzero(hosts[src] == hosts[dst])
            if same.size:
                sh = self.shm[seg[same], ts[same]]  # (messages, 6)
                bad = np.isnan(sh).any(axis=1)
                if bad.any():  # raises, naming the type
                    self.profile.shm_costs(list(self.profile.types)[int(ts[same][np.argmax(bad)])])
                bs = b[same]
                S[same] = sh[:, 0] + sh[:, 1] * bs
                R[same] = sh[:, 2] + sh[:, 3] * bs
                W[same] = sh[:, 5] * bs
                X[same] = sh[:, 4] + W[same]
        return S, X, R, W

    def copies(self, ti: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
        """``C(nbytes)`` in µs of each rank (``nbytes``: one count per rank; type indices ``ti``)."""
        seg = self.segment(nbytes)
        return self.node[seg, ti, 4] + self.node[seg, ti, 5] * nbytes


def step_costs(
    profile: Profile, ti: np.ndarray, hosts: np.ndarray | None, step: Step
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(S, X, R)`` in µs of each message of ``step`` (arrays in the step's message order), each at the message's
    own byte count and regime: the sender's send line, the link's (per type pair) and the receiver's receive line;
    between two ranks of one host (``hosts``; None: one rank per host) the type's shared-memory lines
    (:class:`CostTables`; build one to cost many steps).

    >>> from hnowmodel.params import paper_profile
    >>> s, x, r = step_costs(paper_profile(), np.array([0, 1]), None, Step.of([0], [1], 100))
    >>> s.tolist(), x.tolist(), r.tolist()
    ([65.0], [24.0], [132.0])
    """
    return CostTables(profile).messages(ti, hosts, step.src, step.dst, step.nbytes)


class _Clocks:
    """The two clocks of every rank and one step's update of them (see the module's rules)."""

    def __init__(self, profile: Profile, ti: np.ndarray, hosts: np.ndarray | None, gamma: np.ndarray) -> None:
        n = ti.size
        self.tables, self.ti, self.hosts, self.gamma = CostTables(profile), ti, hosts, gamma
        self.posted, self.done = np.zeros(n), np.zeros(n)
        self._costs: dict[int, tuple[np.ndarray, ...]] = {}
        # each pair's wire: when it has carried the pair's last message (keys src·n + dst, sorted)
        self.pair_keys, self.pair_free = np.zeros(0, dtype=np.int64), np.zeros(0)
        self.track_pairs = True  # False when no pair carries two messages (then the wires never wait)

    def costs(self, step: Step) -> tuple[np.ndarray, ...]:
        """The step's S, X, R + reduction, wire time W and pair key (per message) and copy (per rank, None: no
        copy), computed once."""
        got = self._costs.get(id(step))
        if got is None:
            S, X, R, W = self.tables.messages_wire(self.ti, self.hosts, step.src, step.dst, step.nbytes)
            RG = R + self.gamma[step.dst] * step.reduce_bytes
            C = None
            if step.copy_bytes is not None and np.any(step.copy_bytes > 0):
                C = self.tables.copies(self.ti, step.copy_bytes)
            keys = step.src * self.ti.size + step.dst
            got = self._costs[id(step)] = (S, X, RG, C, step.copy_bytes, W, keys)  # the step keeps id() valid
        return got

    def pairs(self, keys: np.ndarray) -> np.ndarray:
        """The index of each pair ``keys`` in :attr:`pair_keys`, adding the pairs not there yet (wire free at 0)."""
        idx = np.searchsorted(self.pair_keys, keys)
        have = idx < self.pair_keys.size
        have[have] = self.pair_keys[idx[have]] == keys[have]
        if not have.all():
            new = np.union1d(self.pair_keys, keys)
            free = np.zeros(new.size)
            free[np.searchsorted(new, self.pair_keys)] = self.pair_free
            self.pair_keys, self.pair_free = new, free
            idx = np.searchsorted(new, keys)
        return idx

    def run(self, step: Step, pi: np.ndarray | None = None) -> None:
        """Advance the clocks by one run of ``step`` (``pi``: its pairs' indices, :meth:`pairs`, when known)."""
        S, X, RG, C, cb, W, keys = self.costs(step)
        P, D = self.posted, self.done
        rdv = step.rendezvous
        if rdv is not None:  # when each marked message's receiver reaches the step (posts its receive): before its
            r = step.dst[rdv]  # copy and its send of the step
            reach = np.maximum(P[r], D[r]) if step.waits else P[r].copy()
        if C is not None:
            cm = cb > 0
            t = np.maximum(P[cm], D[cm]) + C[cm]
            P[cm] = t
            D[cm] = t
        src, dst = step.src, step.dst
        start = np.maximum(P[src], D[src]) if step.waits else P[src]
        P[src] = start + S
        wire = P[src]
        if rdv is not None:  # flows once its sender posted it and its receiver reached the step
            wire[rdv] = np.maximum(wire[rdv], reach)
        if self.track_pairs and keys.size:  # and once its pair's wire has carried the pair's previous message
            pi = self.pairs(keys) if pi is None else pi
            wire = np.maximum(wire, self.pair_free[pi])
            self.pair_free[pi] = wire + W
        arrival = wire + X
        D[dst] = np.maximum(np.maximum(D[dst], P[dst]), arrival) + RG

    def repeat(self, step: Step, times: int) -> None:
        """``times`` runs of ``step``: iterate until one run advances every clock the step moves by the same λ
        (the clocks it leaves alone being dominated by the rank's other clock), then add the rest as ``k·λ``.
        Whether a run advanced uniformly is checked after each of the first ``_EVERY_RUN`` runs, then after every
        ``_STRIDE``-th (the check costs as much as a run); a step where every rank sends one message and receives
        one (a ring's) runs on :meth:`_permutation`'s fewer array operations."""
        S, X, RG, C, cb, W, keys = self.costs(step)
        pi = self.pairs(keys) if self.track_pairs else keys[:0]  # stable: adds the step's pairs once, here
        if self._is_permutation(step) and C is None and step.rendezvous is None:
            self.run(step, pi)  # after one run every rank's done >= its posted (each rank received)
            self._permutation(step, pi, times - 1)
            return
        moves_p = np.zeros(self.ti.size, dtype=bool)
        moves_d = np.zeros(self.ti.size, dtype=bool)
        moves_p[step.src] = True
        moves_d[step.dst] = True
        if C is not None:
            moves_p |= cb > 0
            moves_d |= cb > 0
        recv_only, send_only = moves_d & ~moves_p, moves_p & ~moves_d  # each rank's other clock stands still
        for k in range(times):
            check = _check_after(k)
            if check:
                before_p, before_d, before_w = self.posted[moves_p], self.done[moves_d], self.pair_free[pi]
            self.run(step, pi if self.track_pairs else None)
            left = times - k - 1
            if left == 0 or not check:
                continue
            adv = np.concatenate(
                [self.posted[moves_p] - before_p, self.done[moves_d] - before_d, self.pair_free[pi] - before_w]
            )
            if adv.size == 0:
                return
            lam = self._uniform(adv)
            if lam is not None and np.all(self.posted[recv_only] <= self.done[recv_only]) and np.all(
                self.done[send_only] <= self.posted[send_only]
            ):  # fmt: skip
                self.posted[moves_p] += left * lam
                self.done[moves_d] += left * lam
                self.pair_free[pi] += left * lam
                return

    def _uniform(self, adv: np.ndarray) -> float | None:
        """λ when every advance in ``adv`` (µs) is the same to a relative 1e-12, else None."""
        lam = float(adv.max())
        scale = float(max(np.abs(self.posted).max(), np.abs(self.done).max()))
        ok = float(adv.min()) >= lam - (RTOL * abs(lam) + 8 * np.finfo(float).eps * scale)
        return lam if ok else None

    def _is_permutation(self, step: Step) -> bool:
        """Whether ``step`` waits and every rank sends exactly one message and receives exactly one, at costs >= 0
        (then, once each rank has received, a rank's done clock is never behind its posted one)."""
        n = self.ti.size
        if not (step.waits and self.track_pairs and step.n_messages == n):
            return False
        if np.bincount(step.src, minlength=n).max() != 1 or np.bincount(step.dst, minlength=n).max() != 1:
            return False
        S, _, RG, *_ = self.costs(step)
        return bool(np.all(S >= 0) and np.all(RG >= 0))

    def _permutation(self, step: Step, pi: np.ndarray, times: int) -> None:
        """``times`` more runs of a permutation step (:meth:`_is_permutation`) that has run once: the same rules as
        :meth:`run` in message order (``E[j]``: message j's receiver's done clock; a sender starts at its done
        clock, and its posted clock after its send is at least its done clock before), eight array operations a
        run; the uniform-advance shortcut of :meth:`repeat`."""
        S, X, RG, _, _, W, _ = self.costs(step)
        src, dst = step.src, step.dst
        n = src.size
        inv_src, inv_dst = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        inv_src[src], inv_dst[dst] = np.arange(n), np.arange(n)
        q, rr = inv_dst[src], inv_src[dst]  # the message into j's sender; the message out of j's receiver
        E, pf = self.done[dst].copy(), self.pair_free[pi].copy()
        Ps, wire = self.posted[src].copy(), np.empty(n)
        for k in range(times):
            check = _check_after(k)
            if check:
                before_e, before_w = E.copy(), pf.copy()
            np.take(E, q, out=Ps)
            Ps += S
            np.maximum(Ps, pf, out=wire)
            np.add(wire, W, out=pf)
            wire += X
            np.take(Ps, rr, out=E)
            np.maximum(E, wire, out=E)
            E += RG
            left = times - k - 1
            if check and left:
                lam = self._uniform(np.concatenate([E - before_e, pf - before_w]))
                if lam is not None:
                    E += left * lam
                    pf += left * lam
                    Ps += left * lam
                    break
        self.done[dst], self.pair_free[pi] = E, pf
        if times:
            self.posted[src] = Ps


#: Runs of a repeated step after each of which the uniform advance is checked: every one of the first, then one in
#: ``_STRIDE`` (a settled step is found at most ``_STRIDE - 1`` runs late; the result is the same).
_EVERY_RUN, _STRIDE = 16, 8


def _check_after(k: int) -> bool:
    """Whether the uniform advance is checked after run ``k`` (0-based) of a repeated step."""
    return k < _EVERY_RUN or k % _STRIDE == _STRIDE - 1


def _pair_repeats(schedule: MessageSchedule) -> bool:
    """Whether some pair of ranks carries more than one message (a repeated step, or a pair in two steps)."""
    if any(s.repeat > 1 and s.n_messages for s in schedule.steps):
        return True
    keys = np.sort(
        np.concatenate([s.src * schedule.n + s.dst for s in schedule.steps] or [np.zeros(0, dtype=np.int64)])
    )
    # a sort, not np.unique: numpy 2.4's hashing unique took 17 s on an alltoall's 4·10^6 pairs (2048 ranks)
    return bool((keys[1:] == keys[:-1]).any())


def _type_hosts(profile: Profile, layout: Sequence[str], n: int) -> tuple[np.ndarray, np.ndarray | None]:
    if len(layout) != n:
        raise LayoutError(f"layout has {len(layout)} ranks but the schedule has {n}")
    ti = profile.type_index(layout)
    return ti, (None if one_per_host(layout) else hosts_of(layout))


def evaluate(
    profile: Profile,
    layout: Sequence[str],
    schedule: MessageSchedule,
    *,
    reduce_us_per_byte: float | Mapping[str, float] = 0.0,
    per_rank: bool = False,
) -> float | np.ndarray:
    """Completion time (µs) of ``schedule`` on ``layout`` under the closed-form model (the module's rules): the max
    over ranks of their two clocks. ``per_rank``: each rank's ``done`` clock instead (``(n,)``, µs), when it
    completed its last receive, reduction or copy (0 for a rank that only sends: a bcast's root).

    ``reduce_us_per_byte``: what reducing one byte costs the receiver (µs; one float, or per node type); the
    profile has no such term yet.

    A step repeated ``k`` times is iterated only until one repetition advances every clock it moves by the same
    amount λ (to a relative 1e-12; a clock the step leaves alone must lie below the rank's other clock): the step
    is max-plus linear in the clocks, so each further repetition adds exactly λ again, and the remaining ones are
    added as ``remaining·λ`` at once (a ring on 64 hosts x 32 ranks settles within 90-150 repetitions of its 2047).

    >>> from hnowmodel.params import paper_profile
    >>> from hnowmodel.schedules.steps import MessageSchedule, Step
    >>> red = MessageSchedule(2, (Step.of([1], [0], 100, 100),), "reduce")
    >>> evaluate(paper_profile(), ["fast", "fast"], red, reduce_us_per_byte=0.01)  # 65 + 24 + 97 + 1
    187.0
    """
    if not isinstance(schedule, MessageSchedule):
        raise InputError(f"evaluate: expected a MessageSchedule, got {type(schedule).__name__}")
    ti, hosts = _type_hosts(profile, layout, schedule.n)
    clocks = _Clocks(profile, ti, hosts, _gamma(profile, ti, reduce_us_per_byte))
    clocks.track_pairs = _pair_repeats(schedule)
    for step in schedule.steps:
        if step.repeat == 1:
            clocks.run(step)
        else:
            clocks.repeat(step, int(step.repeat))
    if per_rank:
        return clocks.done.copy()
    return float(max(clocks.posted.max(), clocks.done.max()))
