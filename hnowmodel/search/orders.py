"""Exact orders for the sequential scatter and gather: which rank the root serves first.

Scatter (eq. 9): the i-th rank served finishes at ``i*S_root(m) + X(m) + R_i(m)``. The completion time is the
largest of these; by an exchange argument (swapping two neighbours in the order never helps when the one with
the larger tail ``X + R`` goes first), serving ranks in *decreasing* ``X_root,i(m) + R_i(m)`` is optimal -
the slowest receivers first. Ties keep rank order.

Gather (eq. 10-12): the root takes messages in arrival order, and arrival order follows the senders' send
overheads, whatever order the tree lists them in; the best listing is therefore *increasing* ``S_j(m) + X(m)``
(the order in which the messages will arrive), which is what a root posting receives in a fixed order should
use (``t_i = max(t_(i-1), a_i) + R``: an exchange argument again shows earliest-arrival-first is optimal).
Both rules are checked against brute force over all permutations in the tests. Every edge of a sequential tree
carries ``m`` bytes, so the parameters are those in force at ``m`` (:meth:`~hnowmodel.params.Profile.at`).

Hosts: a rank on the root's host is reached through shared memory - its tail is the shm ``X + R``, its arrival the
shm ``S + X`` (``profile.shm``). The scatter rule stays optimal when the root's sends differ in length (a
same-host send costs the shm ``S``): it is Jackson's rule for one machine with delivery times, whose optimum
orders by decreasing tail whatever the processing times.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import ops as _ops
from ..errors import InputError
from ..layout import hosts_of
from ..params import Profile
from ..trees import Tree, sequential

__all__ = ["best_sequential_order", "best_sequential"]


def best_sequential_order(
    profile: Profile, layout: Sequence[str], op: str, size: float = 0.0, root: int = 0
) -> list[int]:
    """Ranks other than the root in the order the root should serve them (scatter) or list them (gather).

    >>> from hnowmodel.params import paper_profile
    >>> best_sequential_order(paper_profile(), ["fast", "fast", "slow", "slow"], "scatter", 1000)
    [2, 3, 1]
    """
    movement = _ops.get(op).movement
    if movement is None:
        raise InputError(f"{op} runs no tree (its algorithms are message schedules): no sequential order to choose")
    toward_root = movement.toward_root
    profile = profile.at(size)
    others = [r for r in range(len(layout)) if r != root]
    rt = layout[root]
    hosts = hosts_of(layout)
    local = {r for r in others if hosts[r] == hosts[root]}  # through shared memory
    shm = profile.shm_costs(rt) if local else None
    if toward_root:  # gather: the order the messages arrive in
        arrive = {
            r: shm.node.send_us(size) + shm.link.us(size)
            if r in local
            else profile.types[layout[r]].send_us(size) + profile.link(layout[r], rt).us(size)
            for r in others
        }
        return sorted(others, key=lambda r: (arrive[r], r))
    # scatter, bcast: the slowest receivers first
    tail = {
        r: shm.link.us(size) + shm.node.recv_us(size)
        if r in local
        else profile.link(rt, layout[r]).us(size) + profile.types[layout[r]].recv_us(size)
        for r in others
    }
    return sorted(others, key=lambda r: (-tail[r], r))


def best_sequential(profile: Profile, layout: Sequence[str], op: str, size: float = 0.0, root: int = 0) -> Tree:
    """The sequential tree with :func:`best_sequential_order`."""
    t = sequential(len(layout), root, best_sequential_order(profile, layout, op, size, root))
    return Tree(t.parent, t.childrank, "sequential:best")
