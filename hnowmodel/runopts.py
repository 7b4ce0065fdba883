"""What an MPI implementation does beyond the tree's shape: the :class:`Schedule` every model variant is told.

A tree (:mod:`hnowmodel.trees`) says who sends to whom in which order; the schedule says how the implementation
runs it: whether the root copies its own block locally (and before or after its sends), in which order a gather's
parent posts its receives, whether a relay's message waits for its parent's posted receive, whether every message
waits so (synchronous sends), and whether the times are taken from a common start (every rank starting together,
the receive posted with the send). Each variant (:mod:`hnowmodel.variants`) takes from the schedule what it
models and ignores the rest; a native algorithm (:class:`hnowmodel.libraries.native.NativeAlgorithm`) carries its
schedule.

>>> Schedule(root_copy=True, copy_first=True).copy_first
True
>>> Schedule(recv_order="lifo")
Traceback (most recent call last):
...
hnowmodel.errors.InputError: unknown receive order (recv_order) 'lifo' (choose from: posted, arrival, tree, \
smallest_first)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InputError
from .params import Profile

__all__ = ["Schedule", "RECV_ORDERS", "DEFAULT", "as_schedule", "as_sizes", "common_start_us"]

#: How a gather's parent posts its receives: ``posted`` (one receive per child, all posted when the parent starts,
#: completed in arrival order: the tree executor and ``calibrate.treecoll`` on MPI, ``Irecv`` + ``Waitany``; a
#: rendezvous message flows as soon as it is sent), ``arrival`` (one receive at a time from any child, matching
#: whichever message or rendezvous request came first: ``MPI_ANY_SOURCE``, as the emulated testbed's transport
#: receives), ``tree`` (the tree's send order), ``smallest_first`` (ascending subtree size, ties in reverse send
#: order: MPICH's binomial gather).
RECV_ORDERS = ("posted", "arrival", "tree", "smallest_first")


@dataclass(frozen=True)
class Schedule:
    """How the MPI implementation runs a tree (every field's default: the tree executor's own schedule).

    ``root_copy``: the root copies its own block locally (``C(m)``, the profile's ``Cc_us``/``Cm_us_per_byte``):
    scatter after its sends, gather before its first receive (MPICH's binomial scatter/gather); ``copy_first``
    (with ``root_copy``): a scatter's root copies before its first send (Open MPI). ``recv_order``: how a gather's
    parent posts its receives (:data:`RECV_ORDERS`). ``relay_waits``: a gather's relay sends its subtree's data as
    one struct datatype, which waits for the parent's posted receive from the profile's struct rendezvous size
    (MPICH's binomial gather). ``sync``: every gather message waits for its parent's posted receive (Open MPI's
    linear_sync). ``common_start``: the times are measured from a common start, which adds the profile's measured
    ``extensions.common_start`` extra (:func:`common_start_us`) to the completion. ``segment_bytes``: a relay
    passes its message on in segments of this many bytes as they arrive (a pipelined tree: MPICH's
    ``pipelined_tree`` bcast, 8192-byte chunks by default, which Intel MPI's default bcast runs), so it starts
    forwarding once its first segment is in and each child's last segment leaves after the relay holds it; 0 (the
    default): a relay forwards only once it holds the whole message. The queue disciplines of the flow engine
    (``flow-rr``, ``flow-fifo``) model it; the other variants take every relay as store-and-forward.
    """

    root_copy: bool = False
    copy_first: bool = False
    recv_order: str = "posted"
    relay_waits: bool = False
    sync: bool = False
    common_start: bool = False
    segment_bytes: int = 0

    def __post_init__(self) -> None:
        seg = self.segment_bytes
        if isinstance(seg, (bool, np.bool_)) or not isinstance(seg, (int, np.integer)) or seg < 0:
            raise InputError(f"schedule segment_bytes: must be a whole number of bytes >= 0, got {seg!r}")
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name not in ("recv_order", "segment_bytes") and not isinstance(v, (bool, np.bool_)):
                raise InputError(f"schedule {f.name}: must be true or false, got {v!r}")
        if self.recv_order not in RECV_ORDERS:
            raise InputError(
                f"unknown receive order (recv_order) {self.recv_order!r} (choose from: {', '.join(RECV_ORDERS)})"
            )
        if self.copy_first and not self.root_copy:
            raise InputError("schedule copy_first: says when the root copies its block, so it needs root_copy")

    def extra_us(self, profile: Profile, sizes: Any) -> np.ndarray:
        """What the schedule adds to a completion beyond the model's time, per size (µs): the common-start extra
        with ``common_start``, else zeros."""
        m = as_sizes(sizes)
        return common_start_us(profile, m) if self.common_start else np.zeros(m.shape)


#: The tree executor's schedule: no root copy, receives posted up front, nothing waits beyond the protocol.
DEFAULT = Schedule()


def as_schedule(schedule: Schedule | None = None, **fields: Any) -> Schedule:
    """``schedule`` (None: :data:`DEFAULT`) with ``fields`` (the old keyword form: ``root_copy=True``, …)
    replaced; :class:`InputError` names an unknown field.

    >>> as_schedule(None, root_copy=True) == Schedule(root_copy=True)
    True
    """
    base = DEFAULT if schedule is None else schedule
    if not isinstance(base, Schedule):
        raise InputError(f"schedule: must be a Schedule, got {schedule!r}")
    if not fields:
        return base
    names = [f.name for f in dataclasses.fields(Schedule)]
    bad = sorted(set(fields) - set(names))
    if bad:
        raise InputError(f"unknown schedule field {bad[0]!r} (choose from: {', '.join(names)})")
    return dataclasses.replace(base, **fields)


def as_sizes(sizes: Any) -> np.ndarray:
    """Message sizes in bytes as a 1-D float array; :class:`InputError` on negative or non-finite sizes.

    >>> as_sizes(4096).tolist()
    [4096.0]
    """
    try:
        m = np.atleast_1d(np.asarray(sizes, dtype=float))
    except (TypeError, ValueError):
        raise InputError(f"message sizes must be numbers of bytes, got {sizes!r}") from None
    if m.ndim != 1:
        raise InputError("message sizes must be a flat list of byte counts")
    bad = ~np.isfinite(m) | (m < 0)
    if bad.any():
        raise InputError(f"message size {m[bad][0]:g} is not a non-negative number of bytes")
    return m


def common_start_us(profile: Profile, sizes: Any) -> np.ndarray:
    """What a common-start measurement adds to a message, per size (µs): a receive posted at the instant the message
    is sent (every rank starting together, as collectives are timed on real MPI) takes longer than the isolated
    message ``S + X + R`` describes. From the profile's ``extensions.common_start`` (measured by the calibration:
    common-start minus isolated one-way time, per size), interpolated linearly in size and held beyond the ends;
    zeros when the profile has none or it is malformed.

    >>> from hnowmodel.params import paper_profile
    >>> p = Profile.from_dict({**paper_profile().to_dict(), "extensions": {"common_start":
    ...     {"sizes_bytes": [0, 1000], "extra_us": [0.4, 0.2]}}})
    >>> common_start_us(p, [0, 500, 4000]).tolist()
    [0.4, 0.30000000000000004, 0.2]
    """
    m = as_sizes(sizes)
    cs = profile.extensions.get("common_start") if isinstance(profile.extensions, Mapping) else None
    try:
        xs = np.asarray(cs["sizes_bytes"], dtype=float)
        ys = np.asarray(cs["extra_us"], dtype=float)
        ok = xs.ndim == 1 and xs.size == ys.size and xs.size > 0 and np.all(np.diff(xs) > 0)
        ok = ok and bool(np.all(np.isfinite(ys)))
    except (TypeError, KeyError, ValueError):
        ok = False
    if not ok:
        return np.zeros(m.shape, dtype=float)
    return np.interp(m.astype(float), xs, ys)
