"""Trees built for the node types of a layout: :func:`hierarchical` (the paper's Fig. 6c) and the speed order of
the types it groups by (:func:`type_speed_order`).

>>> from hnowmodel.params import paper_profile
>>> hierarchical(["fast", "slow", "fast"], paper_profile()).children[0]
(2, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import TreeError
from .generic import binomial
from .tree import Tree, _check_n_root, from_children

__all__ = ["type_speed_order", "hierarchical"]


def type_speed_order(profile: Any, m: float = 0.0) -> list[str]:
    """Node type names from fastest to slowest: by send plus receive overhead at ``m`` bytes (name breaks ties).

    >>> from hnowmodel.params import paper_profile
    >>> type_speed_order(paper_profile())
    ['fast', 'slow']
    """
    return sorted(profile.types, key=lambda t: (profile.types[t].send_us(m) + profile.types[t].recv_us(m), t))


def hierarchical(layout: Sequence[str], profile: Any, root: int = 0, m: float = 0.0) -> Tree:
    """The paper's hierarchical tree (Fig. 6c): the root reaches the ranks of the fastest type by a binomial tree
    among them; then each of those sends, one after another, to its share of the other ranks.

    The fastest type is the one with the smallest send + receive overhead at ``m`` bytes. The root heads the
    fast group whatever its own type. Slower ranks are dealt out round-robin, slowest types first, to the fast
    ranks in the order they receive, so early receivers serve the ranks that need the most time.

    >>> from hnowmodel.params import paper_profile
    >>> hierarchical(["fast", "fast", "slow", "slow"], paper_profile()).children
    ((1, 2), (3,), (), ())
    """
    if profile is None or layout is None:
        raise TreeError("tree 'hierarchical' needs a layout and a profile (it groups ranks by node type)")
    n = len(layout)
    _check_n_root(n, root)
    speed = type_speed_order(profile, m)
    fastest = speed[0]
    rank_of_type = {t: i for i, t in enumerate(speed)}
    fast = [root] + [r for r in range(n) if r != root and layout[r] == fastest]
    others = sorted((r for r in range(n) if r != root and layout[r] != fastest), key=lambda r: -rank_of_type[layout[r]])
    inner = binomial(len(fast), 0)
    children: list[list[int]] = [[] for _ in range(n)]
    for i, kids in enumerate(inner.children):
        children[fast[i]] = [fast[j] for j in kids]
    # fast ranks in the order their binomial tree reaches them (depth, then send position)
    reached = [fast[i] for i in np.lexsort((inner.childrank, inner.depth)).tolist()]
    for i, r in enumerate(others):
        children[reached[i % len(reached)]].append(r)
    return from_children(children, "hierarchical")
