"""The MPI library's own collectives of the operations whose algorithms are message schedules (their registry
entries have no tree movement): ``MPI_Reduce``, ``MPI_Allreduce``, ``MPI_Reduce_scatter_block`` (MPI_SUM over
doubles) and ``MPI_Allgather``, ``MPI_Alltoall`` (bytes), with the set-up/check interface of the tree executor
(:class:`calibrate.treeexec.TreeExecutor`), for ``python -m calibrate measure``.

``m`` is what the operation's registry entry says, in bytes: a reduction's vector (reduce, allreduce: ``m / 8``
doubles each rank contributes), a reduce-scatter's result block (each rank contributes ``p`` blocks of ``m / 8``
doubles), an allgather's block (each rank's ``m`` bytes), an alltoall's block (``m`` bytes to each rank). Every
value is a small whole number, so each sum is exact and the check compares it exactly.

>>> contribution(2, 0, 4).tolist()
[2.0, 3.0, 4.0, 5.0]
>>> expected_sum(3, 0, 4).tolist()
[3.0, 6.0, 9.0, 12.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hnowmodel.schedules.catalog import ELEM_BYTES

from .treeexec import payload_block

__all__ = ["NativeDataExecutor", "contribution", "expected_sum"]


def contribution(rank: int, block: int, count: int) -> np.ndarray:
    """The ``count`` doubles rank ``rank`` contributes to block ``block`` of a reduction: ``i % 7 + rank + 3·block``."""
    return (np.arange(count) % 7 + rank + 3 * block).astype(np.float64)


def expected_sum(n: int, block: int, count: int) -> np.ndarray:
    """The sum over ``n`` ranks of :func:`contribution` for ``block``."""
    return (n * (np.arange(count) % 7 + 3 * block) + n * (n - 1) // 2).astype(np.float64)


class NativeDataExecutor:
    """The library's reduce, allreduce, reduce_scatter (block), allgather and alltoall on ``comm``, ``m`` bytes as
    the registry defines ``m`` (module docstring); buffers are allocated once, at :meth:`setup`."""

    def __init__(self, comm: Any, root: int, m: int) -> None:
        self.comm, self.root, self.m = comm, root, int(m)
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.count = self.m // ELEM_BYTES
        self.send = self.recv = np.zeros(0)

    def reduce(self) -> None:
        from mpi4py import MPI

        self.comm.Reduce(self.send, self.recv if self.rank == self.root else None, MPI.SUM, self.root)

    def allreduce(self) -> None:
        from mpi4py import MPI

        self.comm.Allreduce(self.send, self.recv, MPI.SUM)

    def reduce_scatter(self) -> None:
        from mpi4py import MPI

        self.comm.Reduce_scatter_block(self.send, self.recv, MPI.SUM)

    def allgather(self) -> None:
        self.comm.Allgather(self.send, self.recv)

    def alltoall(self) -> None:
        self.comm.Alltoall(self.send, self.recv)

    def setup(self, op: str) -> None:
        """The send buffer's payload and a zeroed receive buffer for ``op``."""
        self.send, self.recv = getattr(self, f"_buffers_{op}")(self.size, self.m, self.count, self.rank)

    def check(self, op: str) -> str:
        """'' when this rank holds what ``op`` promises, else what went wrong."""
        ok = getattr(self, f"_holds_{op}")(self.size, self.m, self.count, self.rank)
        return "" if ok else f"native {op} delivered wrong data ({self.m} B) on rank {self.rank}"

    # ---- per operation: (n ranks, m bytes, c doubles, this rank) -> buffers / whether the result is right --------
    def _buffers_reduce(self, n: int, m: int, c: int, r: int) -> tuple[np.ndarray, np.ndarray]:
        return contribution(r, 0, c), np.zeros(c)

    _buffers_allreduce = _buffers_reduce

    def _buffers_reduce_scatter(self, n: int, m: int, c: int, r: int) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate([contribution(r, b, c) for b in range(n)]), np.zeros(c)

    def _buffers_allgather(self, n: int, m: int, c: int, r: int) -> tuple[np.ndarray, np.ndarray]:
        return payload_block(r, m), np.zeros(n * m, dtype=np.uint8)

    def _buffers_alltoall(self, n: int, m: int, c: int, r: int) -> tuple[np.ndarray, np.ndarray]:
        # block j of rank r goes to rank j
        return np.concatenate([payload_block(r * n + j, m) for j in range(n)]), np.zeros(n * m, dtype=np.uint8)

    def _holds_reduce(self, n: int, m: int, c: int, r: int) -> bool:
        return r != self.root or np.array_equal(self.recv, expected_sum(n, 0, c))

    def _holds_allreduce(self, n: int, m: int, c: int, r: int) -> bool:
        return np.array_equal(self.recv, expected_sum(n, 0, c))

    def _holds_reduce_scatter(self, n: int, m: int, c: int, r: int) -> bool:
        return np.array_equal(self.recv, expected_sum(n, r, c))

    def _holds_allgather(self, n: int, m: int, c: int, r: int) -> bool:
        return all(np.array_equal(self.recv[q * m : (q + 1) * m], payload_block(q, m)) for q in range(n))

    def _holds_alltoall(self, n: int, m: int, c: int, r: int) -> bool:
        return all(np.array_equal(self.recv[q * m : (q + 1) * m], payload_block(q * n + r, m)) for q in range(n))
