"""What the searches return: :class:`BestTree`, the chosen tree or algorithm, its predicted time (µs) and what it
was compared with.

>>> BestTree(None, 90.0, "ring", "allgather", 1024, False, {"brucks": 100.0}).gain_pct
10.0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..trees import Tree

__all__ = ["BestTree"]


def _pct(ref: float, t: float) -> float:
    """How much faster (%) ``t`` is than ``ref`` (both µs)."""
    return 100.0 * (ref - t) / ref if ref else 0.0


@dataclass(frozen=True)
class BestTree:
    """A chosen tree, its predicted time (µs), how it was found, and the standard trees' times for comparison. For
    an operation whose algorithms are message schedules (no tree runs it) ``tree`` is None and ``method`` names the
    chosen algorithm; ``compared`` holds the others' best times, ``params`` the chosen algorithm's parameters (the
    rank order's origin, a rooted algorithm's ``root``, a two-level composition's ``levels`` and host leaders, a
    library default's ``library``), ``perm`` its rank order (``perm[p]``: the rank at position p, what
    ``MPI_Comm_split`` keys or a hostfile's order give), ``defaults_us`` each MPI library's default (µs, current
    order) and ``default_names`` what that default runs."""

    tree: Tree | None
    time_us: float
    method: str
    op: str
    size: int
    exact: bool
    compared: dict[str, float] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    perm: tuple[int, ...] | None = None
    defaults_us: dict[str, float] = field(default_factory=dict)
    default_names: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "op": self.op,
            "size": self.size,
            "method": self.method,
            "exact": self.exact,
            "time_us": self.time_us,
        }
        if self.tree is None:
            out["algorithm"] = self.method
            out["params"] = dict(self.params)
            out["order"] = None if self.perm is None else list(self.perm)
            out["defaults"] = {
                lib: {"algorithm": self.default_names.get(lib, ""), "time_us": t} for lib, t in self.defaults_us.items()
            }
            out["gain_vs_default_pct"] = self.gain_vs_default_pct
        else:
            out["parent"] = self.tree.parent.tolist()
            out["children"] = [list(c) for c in self.tree.children]
        out["compared_us"] = dict(self.compared)
        out["gain_vs_best_compared_pct"] = self.gain_pct
        return out

    @property
    def gain_pct(self) -> float | None:
        """How much faster (%) than the best of the compared standard trees; None if none was compared."""
        if not self.compared:
            return None
        return _pct(min(self.compared.values()), self.time_us)

    @property
    def gain_vs_default_pct(self) -> dict[str, float]:
        """How much faster (%) than each MPI library's default (library -> %; empty when none is predicted).

        >>> BestTree(None, 75.0, "ring", "allgather", 8, False, defaults_us={"MPICH": 100.0}).gain_vs_default_pct
        {'MPICH': 25.0}
        """
        return {lib: _pct(t, self.time_us) for lib, t in self.defaults_us.items()}
