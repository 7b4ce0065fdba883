"""bcast and scatter through the fluid network: each rank, once it holds its data, posts its sends to its children."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..runopts import Schedule
from ..trees import Tree
from .costs import MessageCosts
from .network import FlowRecord, Network, send

__all__ = ["downward"]


def downward(
    sim: Network, cost: MessageCosts, tree: Tree, edge_bytes: np.ndarray, m: float, schedule: Schedule
) -> np.ndarray:
    """bcast/scatter: each rank, once it holds its data, posts its sends to its children in send order (each after
    its ``S``, the ones after its first to another host also after that one's :meth:`MessageCosts.first_send_busy`;
    a child on its own host gets its message through shared memory, :func:`~hnowmodel.flow.network.send`); the root's
    copy of its own block (``schedule.root_copy``) comes after its sends, or before them with ``copy_first``
    (Open MPI). Each rank's time (µs) when it holds its data."""
    root_copy, copy_first = schedule.root_copy, schedule.copy_first
    done = np.full(tree.n, np.nan)
    done[tree.root] = 0.0
    children = tree.children

    def holds(p: int, t: float) -> None:
        kids = children[p]
        sizes = [float(edge_bytes[c]) for c in kids]
        posted, acc = cost.posts(p, t, sizes, kids)
        for c, b, at in zip(kids, sizes, posted, strict=True):
            send(sim, cost, at, p, c, b, cost.rendezvous(b), arrived(p, c, b))
        if p == tree.root and root_copy:
            done[p] = acc if copy_first else acc + cost.copy(p, m)

    def arrived(p: int, c: int, b: float) -> Callable:
        def on_done(t_end: float, f: Any) -> None:
            t_del = t_end + cost.latency(p, c, b)
            sim.records.append(FlowRecord(p, c, b, float(f.start), float(t_end), float(t_del), f.rdv))
            done[c] = t_del + cost.recv(c, b, p)
            sim.at(done[c], lambda: holds(c, done[c]))

        return on_done

    start = cost.copy(tree.root, m) if root_copy and copy_first else 0.0
    sim.at(start, lambda: holds(tree.root, start))
    sim.run()
    return done
