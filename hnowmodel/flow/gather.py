"""gather under the flow model: ranks send their subtree's data up once they hold it; parents post their receives
as the schedule says (:data:`hnowmodel.runopts.RECV_ORDERS`), and rendezvous, struct-datatype and synchronous
messages flow only into a posted receive."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..runopts import Schedule
from ..trees import Tree
from .costs import MessageCosts
from .network import FlowRecord, Network, send

__all__ = ["upward"]


def _receive_orders(tree: Tree, recv_order: str) -> list[list[int]] | None:
    if recv_order in ("posted", "arrival"):
        return None
    kids = tree.children
    if recv_order == "tree":
        return [list(k) for k in kids]
    size, pos = tree.subtree_size, tree.childrank
    return [sorted(k, key=lambda c: (int(size[c]), -int(pos[c]))) for k in kids]


class _Upward:
    """One gather under the flow model: the state of every parent (offered messages, receive in progress, receives
    done, when it may post its first receive) and the events that move it (see :func:`upward`)."""

    def __init__(self, sim: Network, cost: MessageCosts, tree: Tree, m: float, schedule: Schedule) -> None:
        n = tree.n
        self.sim, self.cost, self.tree, self.schedule = sim, cost, tree, schedule
        self.relay_from = cost.struct_rendezvous_from() if schedule.relay_waits else math.inf
        self.ready = np.zeros(n)
        self.children = tree.children
        self.orders = _receive_orders(tree, schedule.recv_order)
        self.nbytes = tree.subtree_size.astype(float) * m
        # per parent: offered messages (child -> (offer time, seq, kind)), whether a receive is in progress, how
        # many receives are done, and from when it may post its first receive
        self.offered: list[dict[int, tuple[float, int, str]]] = [{} for _ in range(n)]
        self.busy = [False] * n
        self.got = [0] * n
        self.first_post = [0.0] * n
        if schedule.root_copy:
            self.first_post[tree.root] = cost.copy(tree.root, m)
        self.seq = 0

    def send_up(self, j: int, t: float) -> None:
        """Rank ``j`` holds its subtree's data at ``t``: it sends it to its parent."""
        sim, cost, sched = self.sim, self.cost, self.schedule
        p, b = int(self.tree.parent[j]), float(self.nbytes[j])
        t_post = t + cost.send(j, b, p)
        relay_struct = sched.relay_waits and self.children[j] and b >= self.relay_from
        # flows only into the parent's posted receive (sync: once the parent has signalled that it is posted)
        waits = sched.sync or cost.rendezvous(b) or relay_struct
        if waits and sched.recv_order != "posted":
            sim.at(t_post, lambda: self.offer(p, j, "rdv", t_post))
            return
        # eager, or every receive already posted (from first_post[p]): the data flows now
        t_flow = max(t_post, self.first_post[p]) if waits else t_post

        def delivered(t_end: float, f: Any) -> None:
            t_del = t_end + cost.latency(j, p, b)
            sim.records.append(FlowRecord(j, p, b, float(f.start), float(t_end), float(t_del), bool(waits)))
            sim.at(t_del, lambda: self.offer(p, j, "eager", t_del))

        send(sim, cost, t_flow, j, p, b, bool(waits), delivered)

    def offer(self, p: int, j: int, kind: str, t: float) -> None:
        """Child ``j``'s message (delivered eagerly, or a rendezvous request) is at parent ``p`` from ``t``."""
        self.offered[p][j] = (t, self.seq, kind)
        self.seq += 1
        self.match(p)

    def _next(self, p: int) -> int | None:
        """The child whose message parent ``p`` receives next, or None while it has not offered it yet."""
        if self.orders is None:
            offered = self.offered[p]
            return min(offered, key=lambda c: offered[c][:2]) if offered else None
        j = self.orders[p][self.got[p]]
        return j if j in self.offered[p] else None

    def match(self, p: int) -> None:
        """Parent ``p`` receives its next message if it is free, may post, and the message is there."""
        sim, cost = self.sim, self.cost
        if self.busy[p] or self.got[p] == len(self.children[p]):
            return
        if sim.now < self.first_post[p]:
            sim.at(self.first_post[p], lambda: self.match(p))
            return
        j = self._next(p)
        if j is None:
            return
        _, _, kind = self.offered[p].pop(j)
        self.busy[p] = True
        b = float(self.nbytes[j])
        if kind == "eager":
            t_done = sim.now + cost.recv(p, b, j)
            sim.at(t_done, lambda: self.complete(p, t_done))
            return

        def through(t_end: float, f: Any) -> None:
            t_del = t_end + cost.latency(j, p, b)
            sim.records.append(FlowRecord(j, p, b, float(f.start), float(t_end), float(t_del), True))
            t_done = t_del + cost.recv(p, b, j)
            sim.at(t_done, lambda: self.complete(p, t_done))

        send(sim, cost, sim.now, j, p, b, True, through)

    def complete(self, p: int, t: float) -> None:
        """Parent ``p`` finished a receive at ``t``."""
        self.busy[p] = False
        self.got[p] += 1
        if self.got[p] == len(self.children[p]):
            self.ready[p] = max(t, self.first_post[p])
            if p != self.tree.root:
                self.send_up(p, self.ready[p])
        else:
            self.match(p)

    def start(self) -> None:
        """Every leaf sends at 0; a root without children is ready after its copy."""
        root = self.tree.root
        for j in range(self.tree.n):
            if not self.children[j] and j != root:
                self.send_up(j, 0.0)
        if not self.children[root]:
            self.ready[root] = self.first_post[root]


def upward(sim: Network, cost: MessageCosts, tree: Tree, m: float, schedule: Schedule) -> np.ndarray:
    """gather: a rank sends its subtree's data to its parent once it has received all of its children's; a parent
    takes its messages in ``schedule.recv_order``, after its copy of its own block with ``root_copy``;
    ``relay_waits``: a rank with children sends a struct datatype, which waits for the parent's posted receive from
    the profile's struct rendezvous size (:attr:`~hnowmodel.params.NetworkTerms.struct_rendezvous_from`); ``sync``:
    every message waits so. Each rank's time (µs) when it holds its subtree's data (leaves 0)."""
    run = _Upward(sim, cost, tree, m, schedule)
    sim.at(0.0, run.start)
    sim.run()
    return run.ready
