"""Pool planning (Banikazemi et al., Fig. 8, generalised): which mix of node types to run a job on.

Given the nodes available per type and the job size N, every mix (c_t <= available_t, sum c_t = N) is scored by
the predicted time of the collective over its best tree (:func:`hnowmodel.search.best_tree`, root on the fastest
type present). Without a target the fastest mix wins; with ``target_us`` the mix that meets the target with the
fewest ranks of the fastest type (the scarce ones) wins, ties to the faster. Type speeds and tree times are
evaluated at ``size`` (the regimes in force there; :func:`~hnowmodel.search.best_tree` evaluates at the size).
A pool counts nodes of one rank each (every mix is a layout with a host per rank); a pool of hosts with several
slots is not planned.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..params import Profile
from ..trees import type_speed_order
from .best import best_tree

__all__ = ["PlanChoice", "plan"]


@dataclass(frozen=True)
class PlanChoice:
    """A mix of node types (counts per type), its predicted time (µs) and the tree method used."""

    mix: dict[str, int]
    time_us: float
    method: str
    meets_target: bool | None = None

    def to_dict(self) -> dict:
        return {
            "mix": dict(self.mix),
            "time_us": self.time_us,
            "method": self.method,
            "meets_target": self.meets_target,
        }


def plan(
    profile: Profile,
    pool: Mapping[str, int],
    ranks: int,
    op: str = "bcast",
    size: float = 0.0,
    target_us: float | None = None,
    method: str = "auto",
    reduce_us_per_byte: Any = None,
) -> tuple[PlanChoice, list[PlanChoice]]:
    """The chosen mix and every candidate (sorted by time); an operation whose algorithms are message schedules is
    scored by its fastest algorithm (``method`` its name; ``reduce_us_per_byte``: a reduction's γ, None: the
    profile's).

    >>> from hnowmodel.params import paper_profile
    >>> best, _ = plan(paper_profile(), {"fast": 4, "slow": 8}, 6, "bcast", 0)
    >>> best.mix
    {'fast': 4, 'slow': 2}
    """
    for t, c in pool.items():
        if t not in profile.types:
            raise InputError(f"--pool names unknown node type {t!r} (profile has: {', '.join(profile.types)})")
        if c < 0:
            raise InputError(f"--pool {t}={c}: counts must be >= 0")
    if ranks < 1:
        raise InputError(f"--ranks {ranks}: must be >= 1")
    if sum(pool.values()) < ranks:
        raise InputError(f"the pool has {sum(pool.values())} nodes, fewer than --ranks {ranks}")
    order = [t for t in type_speed_order(profile, size) if t in pool]
    cands: list[PlanChoice] = []
    for mix in itertools.product(*(range(pool[t] + 1) for t in order)):
        if sum(mix) != ranks:
            continue
        layout = [t for t, c in zip(order, mix, strict=True) for _ in range(c)]  # fastest type first: root
        res = best_tree(profile, layout, op=op, size=size, method=method, reduce_us_per_byte=reduce_us_per_byte)
        ok = None if target_us is None else res.time_us <= target_us
        cands.append(PlanChoice(dict(zip(order, mix, strict=True)), res.time_us, res.method, ok))
    cands.sort(key=lambda c: c.time_us)
    if target_us is None:
        return cands[0], cands
    meeting = [c for c in cands if c.meets_target]
    if not meeting:
        return cands[0], cands  # nothing meets it: the fastest, flagged meets_target=False
    return min(meeting, key=lambda c: (c.mix[order[0]], c.time_us)), cands
