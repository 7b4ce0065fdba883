"""A collective algorithm as a message schedule: steps of messages, each rank sending and receiving at most one a step.

A :class:`MessageSchedule` is what every collective algorithm compiles to, in the spirit of LogGOPSim's GOAL
schedules (Hoefler, Schneider, Lumsdaine, HPDC'10): for each rank its sends, receives, local copies and reductions,
with what each waits for. It is stored step by step, not message by message: a :class:`Step` holds the messages of
one step as numpy arrays (``src``, ``dst``, ``nbytes``, the bytes each receiver reduces), so a regular algorithm
(ring, recursive doubling and halving, Bruck, pairwise exchange: every rank does the same thing with its own peer)
is a few arrays per step, and a step repeated unchanged (a ring's ``p - 1`` steps) is stored once with its
``repeat`` count. Nothing is ever one Python object per message.

What each operation waits for (the engines, :mod:`hnowmodel.schedules.closed` and :mod:`hnowmodel.schedules.flows`,
evaluate exactly this):

* a rank works through its steps in order; in a step it first copies ``copy_bytes`` locally (if any), then posts
  its send (if any), then completes its receive (if any) and reduces ``reduce_bytes`` of it into its buffer;
* a send of a step that ``waits`` starts once the rank has completed its previous receive and reduction (its data
  depends on them: ring, recursive doubling); in a step that does not wait it starts as soon as the rank has posted
  its previous send (a batch of non-blocking sends: a tree's later children, a scattered alltoall);
* a receive completes after its message arrived and after the rank posted this step's send; the receiver then pays
  its receive overhead, then the reduction;
* a rank **reaches** a step (posts its receive there) once it has posted its previous send and, in a step that
  ``waits``, completed its previous receive; a message marked ``rendezvous`` flows (its transfer starts) only once
  its sender has posted it and its receiver has reached the step: a synchronous send, a struct datatype that waits
  for the posted receive (:class:`hnowmodel.runopts.Schedule`'s ``sync``, ``relay_waits``). The flow engine also
  takes every message from the profile's rendezvous size so; the closed form only the marked ones;
* in a step that ``prepost`` s, a receiver posts its receive one step early, when it reached its previous step
  with a receive (Open MPI's reduce keeps two receives posted: the next child's before it waits for the current
  one's); only a rendezvous message, which waits for its posted receive, flows earlier for it (flow engine);
* the messages of one pair (sender, receiver) are transferred one after another (one connection per pair, MPI's
  non-overtaking order): a pipelined tree's segments of one edge.

>>> s = Step.of([0, 1], [1, 0], 8.0)          # ranks 0 and 1 exchange 8 bytes
>>> s.n_messages, s.nbytes.tolist(), s.receiver_of(0), s.sender_to(0)
(2, [8.0, 8.0], 1, 1)
>>> ms = MessageSchedule(2, (s,), "exchange")
>>> ms.n_steps, ms.bytes_sent().tolist()
(1, [8.0, 8.0])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["Step", "MessageSchedule", "concat"]


def _ints(a: Any, what: str) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(a))
    if arr.size and (arr.dtype.kind not in "iu" and not np.all(np.equal(np.mod(arr, 1), 0))):
        raise InputError(f"schedule step {what}: ranks must be whole numbers")
    arr = arr.astype(np.int64)
    arr.flags.writeable = False
    return arr


def _floats(a: Any, k: int, what: str) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(a, dtype=float), (k,)).astype(float)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InputError(f"schedule step {what}: must be finite numbers of bytes >= 0")
    arr.flags.writeable = False
    return arr


def _flags(a: Any, k: int) -> np.ndarray | None:
    """One bool per message (a scalar broadcast), or None when no message is flagged."""
    if a is None:
        return None
    arr = np.asarray(a)
    if arr.dtype.kind != "b":
        raise InputError("schedule step rendezvous: must be true or false, one for all or one per message")
    try:
        arr = np.broadcast_to(arr, (k,)).copy()
    except ValueError:
        raise InputError(f"schedule step rendezvous: one flag per message ({k}), got shape {arr.shape}") from None
    if not arr.any():
        return None
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, eq=False)
class Step:
    """One step: messages ``src[i] -> dst[i]`` of ``nbytes[i]`` bytes, each receiver then reducing
    ``reduce_bytes[i]`` bytes (0: it only stores what it received); ``copy_bytes``: bytes each rank copies
    locally at the start of the step (a per-rank array, or None: none); ``waits``: the step's sends wait for the
    sender's previous receive (see the module's rules); ``repeat``: the step runs this many times in a row, unchanged
    (a ring's steps); ``rendezvous``: which messages flow only once their receiver has reached the step (a bool per
    message, or None: none; :meth:`of` stores None when none is); ``prepost``: the step's receives are posted one
    step early (see the module's rules). A rank sends at most one message and receives at most one per step.

    >>> Step.of([0, 0], [1, 2], 4)
    Traceback (most recent call last):
    ...
    hnowmodel.errors.InputError: schedule step: rank 0 sends more than one message in one step
    """

    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    reduce_bytes: np.ndarray
    copy_bytes: np.ndarray | None = None
    waits: bool = True
    repeat: int = 1
    rendezvous: np.ndarray | None = None
    prepost: bool = False
    _recv: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(
        cls,
        src: Sequence[int] | np.ndarray,
        dst: Sequence[int] | np.ndarray,
        nbytes: float | Sequence[float] | np.ndarray,
        reduce_bytes: float | Sequence[float] | np.ndarray = 0.0,
        *,
        copy_bytes: Sequence[float] | np.ndarray | None = None,
        waits: bool = True,
        repeat: int = 1,
        rendezvous: bool | Sequence[bool] | np.ndarray | None = None,
        prepost: bool = False,
    ) -> Step:
        """A checked step (scalars broadcast over the messages).

        >>> Step.of([0, 1], [1, 2], 8, rendezvous=[False, True]).rendezvous.tolist()
        [False, True]
        >>> Step.of([0, 1], [1, 2], 8, rendezvous=False).rendezvous is None
        True
        """
        s, d = _ints(src, "src"), _ints(dst, "dst")
        if s.shape != d.shape:
            raise InputError("schedule step: src and dst must have one entry per message")
        k = s.size
        cb = None if copy_bytes is None else _floats(copy_bytes, len(copy_bytes), "copy_bytes")
        rdv = _flags(rendezvous, k)
        step = cls(
            s, d, _floats(nbytes, k, "nbytes"), _floats(reduce_bytes, k, "reduce_bytes"), cb, bool(waits), repeat, rdv,
            bool(prepost),
        )  # fmt: skip
        step.check()
        return step

    def check(self, n: int | None = None) -> None:
        """:class:`InputError` unless every rank sends and receives at most one message, no rank sends to itself,
        the repeat count is a whole number >= 1 and (with ``n``) every rank is in ``0..n-1``."""
        if isinstance(self.repeat, bool) or not isinstance(self.repeat, (int, np.integer)) or self.repeat < 1:
            raise InputError(f"schedule step repeat: must be a whole number >= 1, got {self.repeat!r}")
        for arr, what in ((self.src, "sends"), (self.dst, "receives")):
            vals, counts = np.unique(arr, return_counts=True)
            if counts.size and counts.max() > 1:
                r = int(vals[counts > 1][0])
                raise InputError(f"schedule step: rank {r} {what} more than one message in one step")
        if self.rendezvous is not None and self.rendezvous.shape != self.src.shape:
            raise InputError(f"schedule step rendezvous: one flag per message ({self.src.size})")
        if np.any(self.src == self.dst):
            raise InputError(f"schedule step: rank {int(self.src[self.src == self.dst][0])} sends to itself")
        if n is not None:
            every = np.concatenate([self.src, self.dst])
            if every.size and (every.min() < 0 or every.max() >= n):
                raise InputError(f"schedule step: a rank is outside 0..{n - 1}")
            if self.copy_bytes is not None and self.copy_bytes.size != n:
                raise InputError(f"schedule step copy_bytes: one entry per rank ({n}), got {self.copy_bytes.size}")

    @property
    def n_messages(self) -> int:
        return int(self.src.size)

    def receiver_of(self, rank: int) -> int | None:
        """Whom ``rank`` sends to in this step (None: nobody)."""
        hit = np.flatnonzero(self.src == rank)
        return int(self.dst[hit[0]]) if hit.size else None

    def sender_to(self, rank: int) -> int | None:
        """Who sends to ``rank`` in this step (None: nobody)."""
        hit = np.flatnonzero(self.dst == rank)
        return int(self.src[hit[0]]) if hit.size else None

    def dense(self, n: int) -> dict[str, np.ndarray]:
        """Per-rank arrays over ``n`` ranks (cached): ``send_to``/``recv_from`` (-1: none), ``send_bytes``,
        ``recv_bytes``, ``reduce_bytes`` (of the received message), ``send_index``/``recv_index`` (the message's
        index in this step, -1: none)."""
        got = self._recv.get(n)
        if got is not None:
            return got
        send_to = np.full(n, -1, dtype=np.int64)
        recv_from = np.full(n, -1, dtype=np.int64)
        si = np.full(n, -1, dtype=np.int64)
        ri = np.full(n, -1, dtype=np.int64)
        idx = np.arange(self.n_messages)
        send_to[self.src], recv_from[self.dst], si[self.src], ri[self.dst] = self.dst, self.src, idx, idx
        sb, rb, red = np.zeros(n), np.zeros(n), np.zeros(n)
        sb[self.src], rb[self.dst], red[self.dst] = self.nbytes, self.nbytes, self.reduce_bytes
        out = {"send_to": send_to, "recv_from": recv_from, "send_bytes": sb, "recv_bytes": rb, "reduce_bytes": red}
        out.update(send_index=si, recv_index=ri)
        for a in out.values():
            a.flags.writeable = False
        self._recv[n] = out
        return out

    def scaled(self, factor: float) -> Step:
        """The same step with every byte count times ``factor`` (a schedule built for 1-byte blocks at ``m`` bytes)."""
        cb = None if self.copy_bytes is None else self.copy_bytes * factor
        return Step.of(
            self.src, self.dst, self.nbytes * factor, self.reduce_bytes * factor, copy_bytes=cb,
            waits=self.waits, repeat=self.repeat, rendezvous=self.rendezvous, prepost=self.prepost,
        )  # fmt: skip


@dataclass(frozen=True, eq=False)
class MessageSchedule:
    """A collective algorithm on ``n`` ranks as its :class:`Step` s, in order (``name``: what it is, for messages
    and reports). Steps are checked against ``n`` on construction."""

    n: int
    steps: tuple[Step, ...]
    name: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 1:
            raise InputError(f"message schedule: the number of ranks must be a whole number >= 1, got {self.n!r}")
        object.__setattr__(self, "steps", tuple(self.steps))
        for s in self.steps:
            if not isinstance(s, Step):
                raise InputError(f"message schedule {self.name}: steps must be Step objects, got {s!r}")
            s.check(self.n)

    @property
    def n_steps(self) -> int:
        """Steps counted with their repeats."""
        return int(sum(s.repeat for s in self.steps))

    @property
    def n_messages(self) -> int:
        """Messages counted with their steps' repeats."""
        return int(sum(s.n_messages * s.repeat for s in self.steps))

    def unrolled(self) -> Iterator[Step]:
        """Every step as it runs (a repeated step as many times as it repeats, each with ``repeat`` 1)."""
        for s in self.steps:
            one = s if s.repeat == 1 else replace(s, repeat=1, _recv={})
            for _ in range(s.repeat):
                yield one

    def bytes_sent(self) -> np.ndarray:
        """Bytes each rank sends over the whole schedule (what a per-host byte counter sees, summed per host)."""
        out = np.zeros(self.n)
        for s in self.steps:
            np.add.at(out, s.src, s.nbytes * s.repeat)
        return out

    def bytes_received(self) -> np.ndarray:
        """Bytes each rank receives over the whole schedule."""
        out = np.zeros(self.n)
        for s in self.steps:
            np.add.at(out, s.dst, s.nbytes * s.repeat)
        return out

    def messages(self) -> dict[str, np.ndarray]:
        """The flat form, message by message (for tests and small schedules): ``step`` (its index counted with
        repeats), ``src``, ``dst``, ``nbytes``, ``reduce_bytes``, ``rendezvous`` (bool)."""
        keys = ("step", "src", "dst", "nbytes", "reduce_bytes", "rendezvous")
        cols: dict[str, list[np.ndarray]] = {k: [] for k in keys}
        i = 0
        for s in self.unrolled():
            cols["step"].append(np.full(s.n_messages, i, dtype=np.int64))
            for k in ("src", "dst", "nbytes", "reduce_bytes"):
                cols[k].append(getattr(s, k))
            cols["rendezvous"].append(np.zeros(s.n_messages, dtype=bool) if s.rendezvous is None else s.rendezvous)
            i += 1
        return {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}

    def scaled(self, factor: float) -> MessageSchedule:
        """Every byte count times ``factor``."""
        return MessageSchedule(self.n, tuple(s.scaled(factor) for s in self.steps), self.name)


def concat(name: str, *parts: MessageSchedule) -> MessageSchedule:
    """Schedules run one after another by each rank (a composition: reduce then bcast, reduce-scatter then
    allgather): the steps of each in turn; every part must have the same ranks.

    >>> a = MessageSchedule(2, (Step.of([1], [0], 8, 8),), "reduce")
    >>> b = MessageSchedule(2, (Step.of([0], [1], 8),), "bcast")
    >>> concat("allreduce", a, b).n_steps
    2
    """
    if not parts:
        raise InputError("concat: no schedule to run")
    n = parts[0].n
    if any(p.n != n for p in parts):
        raise InputError(f"concat {name}: the parts have different numbers of ranks")
    return MessageSchedule(n, tuple(s for p in parts for s in p.steps), name)
