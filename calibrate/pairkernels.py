"""The C kernels run by two ranks on their own communicator while every other rank sleeps.

On a network of hosts sharing two cores, a rank that busy-polls while two others measure delays their messages by
whole scheduler time slices: :class:`PairKernels` gives every measured pair its own communicator and parks the
other ranks in a sleeping ``Ibarrier`` (:func:`calibrate.transport.sleep_wait`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .protocol import PAIR_BYSTANDER_SLEEP_S
from .transport import sleep_wait

__all__ = ["PairKernels", "group_call"]


class PairKernels:
    """The C kernels run by two ranks on their own two-rank communicator while every other rank sleeps.

    ``call(a, b, name, *args)`` is collective over the whole communicator: ranks ``a`` and ``b`` run
    ``Kernels.<name>`` on their pair communicator (world ranks translated), the others wait in a sleeping
    ``Ibarrier``; every rank returns the kernel's result on the rank that measures (None elsewhere). The pair
    communicators are made once per unordered pair (``MPI_Comm_split``, collective)."""

    def __init__(self, comm: Any) -> None:
        from .ckernels import Kernels

        self.comm = comm
        self.rank = comm.Get_rank()
        self.world = Kernels(comm)  # collectives over every rank, and the local copy
        self._subs: dict[tuple[int, int], Any] = {}

    def _sub(self, a: int, b: int) -> tuple[Any, tuple[int, int]]:
        from mpi4py import MPI

        from .ckernels import Kernels

        key = (min(a, b), max(a, b))
        if key not in self._subs:
            color = 0 if self.rank in key else MPI.UNDEFINED
            sub = self.comm.Split(color, key=self.rank)
            self._subs[key] = Kernels(sub) if sub != MPI.COMM_NULL else None
        return self._subs[key], key

    def call(self, a: int, b: int, name: Any, *args: Any, **kw: Any) -> Any:
        """``name``: a kernel's name, or a Python function ``f(pair_comm, a, b, *args, **kw)`` run by the pair."""
        k, key = self._sub(a, b)
        out = None
        if self.rank in key:
            fn = name if callable(name) else getattr(k, name)
            pre = (k.comm,) if callable(name) else ()
            out = fn(*pre, key.index(a), key.index(b), *args, **kw)
        sleep_wait(self.comm.Ibarrier(), *PAIR_BYSTANDER_SLEEP_S)
        return out

    def free(self) -> None:
        for k in self._subs.values():
            if k is not None:
                k.comm.Free()
        self._subs.clear()


def group_call(pk: PairKernels, members: Sequence[int], fn: Callable[[Any], Any], owner: int | None = None) -> Any:
    """Run ``fn(sub_comm)`` on the ranks ``members`` (their own communicator, ranks in ``members``' order) while the
    others sleep; every rank returns what ``fn`` returned on ``owner`` (default ``members[0]``). Collective."""
    from mpi4py import MPI

    comm = pk.comm
    inside = pk.rank in members
    sub = comm.Split(0 if inside else MPI.UNDEFINED, key=list(members).index(pk.rank) if inside else 0)
    out = None
    if inside:
        out = fn(sub)
        sub.Free()
    sleep_wait(comm.Ibarrier(), *PAIR_BYSTANDER_SLEEP_S)
    return comm.bcast(out, root=members[0] if owner is None else owner)
