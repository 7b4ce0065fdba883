"""The fastest algorithm, and its parameters, for an operation whose algorithms are message schedules (reduce,
allreduce, allgather, reduce_scatter, alltoall) on a heterogeneous layout.

What is searched, for each of the operation's algorithms (:mod:`hnowmodel.schedules.catalog`):

- **the rank order**: which rank takes which position of the schedule (``perm[p]``: the rank at position p; what
  ``MPI_Comm_split`` keys or a hostfile's order give). On a ring it decides which links the ring crosses, on a
  rooted algorithm which rank is its root (position 0). The starts are the current order and the order by hosts
  (each host's ranks together, so consecutive ranks share a host; the hosts by their type's speed, fastest first,
  so a root lands on the fastest host and a ring crosses each slow link as few times as the types allow). From the
  better start: every distinct order up to :data:`ORDERS_ALL_MAX` ranks (exact), pairwise swaps of ranks
  (:func:`~hnowmodel.search.rank_order.pairwise_swaps`) up to :data:`ORDER_SWAP_MAX_RANKS`, else orders of whole
  hosts (:func:`~hnowmodel.search.rank_order.best_host_order`) up to :data:`HOST_SWAP_MAX_HOSTS` hosts.
- **two-level compositions** where every host holds the same number (> 1) of ranks: the ranks of each host
  combine into the host's first rank (a binomial reduce, or a binomial gather), the hosts' leaders run the
  algorithm among themselves (on the combined blocks), and each host's leader passes the result down (a binomial
  bcast or scatter), as the operation's registry entry says (``two_level``: reduce, allreduce, allgather and
  reduce_scatter have one, alltoall none). Named ``two-level:LOW/ALGORITHM/DOWN``.
- **k**: none of the catalogue's schedules has a radix (there is no k-nomial reduce or k-ary recursive exchange
  among them), so there is no k to choose.

Every candidate is predicted by the operation's model variant (closed form or flow engine, on the same schedules
as ``hm.predict``) and each MPI library's default for the operation (:func:`hnowmodel.ops.native_predict`, in the
current order) joins them, so the choice is never predicted slower than a library's default. A root given
(``root=r``) stays the root (position 0 is rank r); ``root=None`` lets the search choose it.

>>> import hnowmodel as hm
>>> best = best_algorithm(hm.paper_profile(), ["slow", "fast", "fast", "slow"], "reduce", 1024,
...                       reduce_us_per_byte=0.001)
>>> best.method, best.params["root"], best.time_us <= min(best.defaults_us.values())
('linear', 1, True)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ops as _ops
from ..errors import InputError
from ..layout import Layout, hosts_of, one_per_host
from ..libraries import run_by
from ..params import Profile
from ..schedules.generator import Algorithm
from ..schedules.hierarchy import two_level
from ..schedules.steps import MessageSchedule
from ..trees import type_speed_order
from .rank_order import best_host_order, pairwise_swaps
from .result import BestTree

__all__ = [
    "best_algorithm",
    "ORDERS_ALL_MAX",
    "ORDER_SWAP_MAX_RANKS",
    "HOST_SWAP_MAX_HOSTS",
    "SEARCH_MAX_MESSAGES",
    "host_speed_order",
    "predict_choice",
]

#: Up to this many ranks every distinct rank order is tried (6! = 720 at most; ranks of one type on one host, or
#: of one type when every rank has its own host, are interchangeable and tried once).
ORDERS_ALL_MAX = 6
#: Up to this many ranks pairwise swaps of ranks (O(n²) predictions per round) improve the better start.
ORDER_SWAP_MAX_RANKS = 16
#: Up to this many hosts (and beyond :data:`ORDER_SWAP_MAX_RANKS` ranks) orders of whole hosts are searched
#: (every order up to 6 hosts, else pairwise swaps: O(hosts²) predictions of the whole schedule per round).
HOST_SWAP_MAX_HOSTS = 8
#: A schedule with more messages than this (an alltoall's p² on thousands of ranks: seconds per prediction) is
#: predicted in its starting orders only, without a search.
SEARCH_MAX_MESSAGES = 200_000


def host_speed_order(profile: Profile, layout: Sequence[str], size: float, root: int | None = None) -> np.ndarray:
    """The ranks grouped by host (each host's ranks in rank order), hosts by their type's speed at ``size`` bytes
    (fastest first, then by host number); ``root`` (if given) first, its host's ranks after it.

    >>> from hnowmodel.params import paper_profile
    >>> host_speed_order(paper_profile(), Layout(["slow", "slow", "fast", "fast"], [0, 0, 1, 1]), 0).tolist()
    [2, 3, 0, 1]
    """
    speed = {t: i for i, t in enumerate(type_speed_order(profile, size))}
    hosts = hosts_of(layout)
    lead = -1 if root is None else int(hosts[root])
    key = [(hosts[r] != lead, speed[layout[r]], hosts[r], r != root, r) for r in range(len(layout))]
    return np.array(sorted(range(len(layout)), key=lambda r: key[r]), dtype=np.int64)


def _rotation(n: int, root: int | None) -> np.ndarray:
    """The current order with ``root`` at position 0 (relative ranks, as the libraries' rooted algorithms count)."""
    return (np.arange(n) + (root or 0)) % n


def _distinct_orders(layout: Sequence[str], root: int | None):
    """Every rank order (``root``, if given, at position 0), each class of interchangeable ranks once: ranks of one
    type on one host (plain layouts: of one type)."""
    n = len(layout)
    cls = (
        list(layout)
        if not isinstance(layout, Layout)
        else [(t, int(h)) for t, h in zip(layout, layout.hosts, strict=True)]
    )
    seen: set[tuple] = set()
    rest = [r for r in range(n) if r != root]
    for tail in itertools.permutations(rest):
        perm = (root, *tail) if root is not None else tail
        key = tuple(cls[r] for r in perm)
        if key not in seen:
            seen.add(key)
            yield np.array(perm, dtype=np.int64)


class _Scorer:
    """Predicts schedules on the layout (µs) under one variant at one size: a schedule in a rank order is the
    schedule on ``layout.take(perm)`` (position p on rank perm[p])."""

    def __init__(self, var: Any, profile: Profile, layout: Sequence[str], gamma: Any) -> None:
        self.var, self.profile, self.layout, self.gamma = var, profile, layout, gamma
        self.calls = 0
        self.memo: dict[tuple, float] = {}
        self.keep: list[MessageSchedule] = []  # the schedules scored, alive while their id() keys the memo

    def on(self, perm: Sequence[int]) -> Sequence[str]:
        lay = self.layout
        return lay.take(perm) if isinstance(lay, Layout) else [lay[int(r)] for r in perm]

    def __call__(self, sched: MessageSchedule, perm: Sequence[int] | None = None) -> float:
        key = (id(sched), None if perm is None else tuple(int(x) for x in perm))
        if key not in self.memo:  # an order met again (a start, the exhaustive search) is not predicted again
            self.calls += 1
            self.keep.append(sched)
            lay = self.layout if perm is None else self.on(perm)
            self.memo[key] = float(
                self.var.evaluate(self.profile, lay, sched, per_rank=False, reduce_us_per_byte=self.gamma)
            )
        return self.memo[key]


def _search_order(score: _Scorer, sched: MessageSchedule, layout: Sequence[str], starts, root: int | None):
    """(µs, perm, the start it came from, the search run) of the best order found for ``sched`` from ``starts``
    ((label, perm) pairs)."""
    n = len(layout)
    if sum(s.n_messages * s.repeat for s in sched.steps) > SEARCH_MAX_MESSAGES:  # seconds per prediction
        label, p = starts[0]
        return score(sched, p), tuple(int(x) for x in p), label, f"none (over {SEARCH_MAX_MESSAGES} messages)"
    got = [(score(sched, p), tuple(int(x) for x in p), label) for label, p in starts]
    c0, perm0, label = min(got, key=lambda g: g[0])
    if n <= ORDERS_ALL_MAX:
        best = (c0, perm0)
        for p in _distinct_orders(layout, root):
            c = score(sched, p)
            if c < best[0] * (1 - 1e-12):
                best = (c, tuple(int(x) for x in p))
        return (*best, label if best[1] == perm0 else "searched", f"every order of the {n} ranks (exact)")
    if n <= ORDER_SWAP_MAX_RANKS:
        perm = np.array(perm0)
        c = pairwise_swaps(perm, c0, lambda p: score(sched, p), layout, not one_per_host(layout),
                           0 if root is not None else -1, 20)  # fmt: skip
        return (
            (c, tuple(int(x) for x in perm), label, "pairwise swaps")
            if c < c0
            else (c0, perm0, label, "pairwise swaps")
        )
    if isinstance(layout, Layout) and 1 < layout.n_hosts <= HOST_SWAP_MAX_HOSTS:
        start = np.array(perm0)
        hosts = layout.hosts[start]
        order0 = list(dict.fromkeys(int(h) for h in hosts))  # the start's hosts, in the order it meets them
        blocks = {h: start[hosts == h] for h in order0}

        def perm_of(order: Sequence[int]) -> np.ndarray:
            return np.concatenate([blocks[order0[i]] for i in order])

        order, c, _, how = best_host_order(lambda o: score(sched, perm_of(o)), len(order0), root is not None)
        if c < c0:
            return c, tuple(int(x) for x in perm_of(order)), label, how
        return c0, perm0, label, how
    return c0, perm0, label, "the starts only (too many ranks and hosts for a search)"


def _defaults(op: str, profile: Profile, layout: Sequence[str], size: float, root: int, var: str, gamma: Any,
              libraries: Sequence[str], current: dict[str, float]) -> dict[str, tuple[str, float]]:  # fmt: skip
    """library -> (its default algorithm's name, µs) in the current order, for those hnow predicts here; a default
    that runs one of the unrooted algorithms of ``current`` (name -> µs in the current order, as
    :func:`hnowmodel.ops.native_predict` predicts it) takes that time instead of a second prediction."""
    out = {}
    for lib in libraries:
        nat = _ops.get(op).native.get(lib)
        run = None if nat is None else nat.on(layout, int(size))  # what that default runs here
        model = "" if run is None else getattr(run[0], "name", run[0])
        mine = run_by(profile, lib)  # the library's own protocol (Open MPI's rendezvous): not current's times then
        try:
            t = [current[model]] if mine is profile and isinstance(model, str) and model in current else None
            if t is None:
                t = _ops.native_predict(op, lib, mine, layout, [size], root=root, variant=var, reduce_us_per_byte=gamma)
        except InputError:  # that default refuses this layout or size (e.g. a power of two only)
            continue
        if t is not None and math.isfinite(float(t[0])):
            out[lib] = (
                f"{nat.algorithm} ({model})" if model and model != nat.algorithm else nat.algorithm,
                float(t[0]),
            )
    return out


def _plain_candidates(o: _ops.Operation, score: _Scorer, profile: Profile, layout: Sequence[str], size: float,
                      root: int | None, keep: Any = None):  # fmt: skip
    """(µs, name, params, perm, how) of each of ``o``'s algorithms (those named in ``keep``, None: all) in its best
    order; refusals as text."""
    n = len(layout)
    cands, skipped, current = [], [], {}
    for name, alg in o.algorithms.items():
        if keep is not None and name not in keep:
            continue
        try:
            sched = alg.schedule(n, size, 0) if alg.rooted else alg.schedule(n, size)
        except InputError as e:  # this algorithm does not run here (ranks, elements)
            skipped.append(f"{name} ({e})")
            continue
        r = root if alg.rooted else None  # an unrooted algorithm's order has no position to keep
        starts = [
            ("current order", _rotation(n, r)),
            ("by hosts, fastest first", host_speed_order(profile, layout, size, r)),
        ]
        c, perm, how, searched = _search_order(score, sched, layout, starts, r)
        if not alg.rooted:
            current[name] = score(sched, starts[0][1])  # scored already (memo): what the library defaults reuse
        params: dict[str, Any] = {"order": how, "search": searched}
        if alg.rooted:
            params["root"] = perm[0]
        cands.append((c, name, params, perm, how))
    return cands, skipped, current


def _two_level_candidates(o: _ops.Operation, score: _Scorer, layout: Sequence[str], size: float, first: np.ndarray,
                          keep: Any = None):  # fmt: skip
    """(µs, name, params, perm, how) of each two-level composition (those named in ``keep``, None: all), hosts in
    the order of ``first`` (its first rank the root); [] unless every host holds the same number (> 1) of ranks."""
    if o.two_level is None or not isinstance(layout, Layout) or layout.one_per_host:
        return []
    if len(set(layout.slots.tolist())) != 1:
        return []
    hosts = layout.hosts[first]
    groups = np.array([first[hosts == h] for h in dict.fromkeys(int(x) for x in hosts)], dtype=np.int64)
    out = []
    for alg in o.algorithms.values():
        try:
            name, sched = two_level(o.two_level, alg, groups, size)
        except InputError:  # that algorithm does not run on these leaders (a power of two only)
            continue
        if keep is not None and name not in keep:
            continue
        params: dict[str, Any] = {"levels": name.split(":", 1)[1], "leaders": [int(x) for x in groups[:, 0]]}
        if alg.rooted:
            params["root"] = int(first[0])
        out.append((score(sched), name, params, tuple(range(len(layout))), "by hosts"))
    return out


def best_algorithm(
    profile: Profile,
    layout: Sequence[str],
    op: str,
    size: float = 0,
    root: int | None = None,
    variant: str | None = None,
    reduce_us_per_byte: Any = None,
    libraries: Sequence[str] | None = None,
    candidates: Sequence[str] | None = None,
) -> BestTree:
    """The fastest algorithm of ``op`` (whose algorithms are message schedules) with its rank order, root and levels
    (the module's docstring), under ``variant`` (None: the operation's default for ``profile``) at ``size`` bytes
    (the operation's m); ``root``: the root of a rooted algorithm (None: chosen); ``reduce_us_per_byte``: γ (None:
    the profile's); ``libraries``: the MPI libraries whose defaults join the candidates and are compared (None:
    every one that pins ``op``); ``candidates``: the names of the algorithms (and ``two-level:…`` compositions) to
    search, e.g. those an MPI library can be told to run (None: all; the libraries' defaults join them anyway).
    ``method`` names the algorithm, ``params`` its parameters, ``perm`` the rank order
    (``perm[p]``: the rank at position p), ``compared`` each algorithm's best time, ``defaults_us`` the libraries'
    defaults (µs, current order)."""
    o = _ops.get(op)
    if o.movement is not None:
        raise InputError(f"{op} runs trees: best_tree chooses its tree")
    n = len(layout)
    if root is not None and not 0 <= root < n:
        raise InputError(f"root {root} is not a rank in 0..{n - 1}")
    var = o.variant_for(profile, variant)
    gamma = o.reduce_costs(profile, [size], reduce_us_per_byte)[0]
    if var.evaluate is None or not (var.shared_hosts or one_per_host(layout)):
        o.predict(profile, layout, next(iter(o.algorithms)), [size], variant=var.name, reduce_us_per_byte=gamma)
    score = _Scorer(var, profile, layout, gamma)
    keep = None if candidates is None else frozenset(candidates)
    cands, skipped, current = _plain_candidates(o, score, profile, layout, size, root, keep)
    cands += _two_level_candidates(o, score, layout, size, host_speed_order(profile, layout, size, root), keep)
    libs = _ops.native_libraries(op) if libraries is None else tuple(libraries)
    r0 = 0 if root is None else root
    defaults = _defaults(op, profile, layout, size, r0, var.name, gamma, libs, current)
    natives = [
        (t, f"native:{a}", {"library": lib, "root": r0}, tuple(range(n)), "current order")
        for lib, (a, t) in defaults.items()
    ]
    if not cands + natives:
        raise InputError(f"no {op} algorithm runs on {n} ranks at {size:g} B: {'; '.join(skipped)}")
    # the earliest on ties: the algorithms before the libraries' defaults (which run one of them, or a composition)
    t, name, params, perm, _ = min(cands + natives, key=lambda c: c[0])
    compared: dict[str, float] = {}
    for c in cands:
        if c[1] != name and c[0] < compared.get(c[1], math.inf):
            compared[c[1]] = c[0]
    dflt = {lib: v for lib, (_, v) in defaults.items()}
    dnames = {lib: a for lib, (a, _) in defaults.items()}
    return BestTree(None, t, name, op, int(size), False, compared, params, perm, dflt, dnames)


def predict_choice(
    profile: Profile,
    layout: Sequence[str],
    best: BestTree,
    sizes: Any,
    variant: str | None = None,
    reduce_us_per_byte: Any = None,
) -> np.ndarray:
    """Predicted time (µs per size) of what :func:`best_algorithm` chose (``best``) on ``layout``: the algorithm in
    its rank order, the two-level composition on its hosts' leaders, or the library default, at each of ``sizes``
    (bytes) under ``variant`` (None: the operation's default for ``profile``).

    >>> import hnowmodel as hm
    >>> lay = ["slow", "fast", "fast", "slow"]
    >>> best = best_algorithm(hm.paper_profile(), lay, "allgather", 1024)
    >>> float(predict_choice(hm.paper_profile(), lay, best, [1024])[0]) == best.time_us
    True
    """
    o = _ops.get(best.op)
    kw = {"variant": variant, "reduce_us_per_byte": reduce_us_per_byte}
    if best.method.startswith("native:"):
        lib, root = best.params["library"], best.params["root"]
        mine = run_by(profile, lib)
        return _ops.native_predict(best.op, lib, mine, layout, sizes, root=root, **kw)  # type: ignore[return-value]
    if best.method.startswith("two-level:"):
        up = o.algorithm(best.params["levels"].split("/")[1])
        hosts = hosts_of(layout)
        groups = [
            [lead, *(r for r in np.flatnonzero(hosts == hosts[lead]) if r != lead)] for lead in best.params["leaders"]
        ]
        alg = Algorithm(best.method, "two-level", lambda n, m: two_level(o.two_level, up, groups, m)[1])
        return o.predict(profile, layout, alg, sizes, **kw)
    perm = list(best.perm or range(len(layout)))
    lay = layout.take(perm) if isinstance(layout, Layout) else [layout[r] for r in perm]
    return o.predict(profile, lay, best.method, sizes, root=0, **kw)
