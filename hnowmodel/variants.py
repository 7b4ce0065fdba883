"""The one registry of model variants: every way hnow predicts a collective is an entry here.

A :class:`Variant` serves data movements (:mod:`hnowmodel.movement`: one message down a tree, a subtree's blocks
down or up), each with its predictor, and so every operation whose entry in :mod:`hnowmodel.ops` names that movement:
a variant never names an operation. It says whether the exact tree search proves an optimum under it
(:mod:`hnowmodel.search.exact`: eq. 7, the ``paper`` variant's one message down) and whether it is a flow-level
variant (it shares links, needs the profile's link capacities, and the search improves its trees locally under it).
Every predictor has one signature::

    predictor(profile, layout, tree, sizes, schedule, *, per_rank=False, root=0) -> np.ndarray  # µs

taking from the :class:`~hnowmodel.runopts.Schedule` what it models (the root's copy, the receive order, ...) and
ignoring the rest; :meth:`Variant.predict` calls it and adds what the schedule adds beyond the model (the
common-start extra). Which variant an operation uses by default is the operation's (:mod:`hnowmodel.ops`).
A variant says whether it models several ranks per host (``shared_hosts``: a
:class:`~hnowmodel.layout.Layout` with hosts; docs/model.md, "Hosts"); one that does not refuses such a layout
with one line instead of predicting as if every rank had a host of its own.

Adding a variant is one entry in :data:`VARIANTS` plus its predictors; nothing else compares variant names.

>>> [v.name for v in VARIANTS.values() if v.serves(SUBTREE_UP)]
['link', 'paper', 'flow', 'flow-weighted']
>>> get("paper").exact_for(ONE_DOWN), get("paper").exact_for(SUBTREE_UP), get("flow-rr").flow_level
(True, False, True)
>>> import hnowmodel as hm
>>> float(get("paper").predict(ONE_DOWN, hm.paper_profile(), ["fast", "fast"], "binomial", [0])[0])
170.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any

import numpy as np

from . import closedform as _closedform
from . import flow as _flow
from .errors import InputError, LayoutError
from .layout import hosts_of, one_per_host
from .movement import ONE_DOWN, SUBTREE_DOWN, SUBTREE_UP, Movement
from .params import Profile
from .runopts import Schedule, as_schedule, as_sizes
from .schedules import closed as _closed
from .schedules import flows as _flows
from .schedules.fromtree import tree_schedule
from .schedules.generator import Algorithm
from .trees import Tree

__all__ = [
    "Predictor",
    "Evaluator",
    "Variant",
    "BoundPredictor",
    "VARIANTS",
    "names",
    "get",
    "serving",
    "check",
    "registered",
]

#: ``f(profile, layout, tree, sizes, schedule, *, per_rank=False, root=0) -> µs`` (one per size, or
#: ``(len(sizes), n)`` with ``per_rank``).
Predictor = Callable[..., np.ndarray]
#: ``f(profile, layout, schedule, *, per_rank=False, reduce_us_per_byte=0.0) -> µs``: a variant's evaluation of a
#: :class:`~hnowmodel.schedules.steps.MessageSchedule` (the completion, or each rank's time with ``per_rank``).
Evaluator = Callable[..., Any]


def _movement(what: Any) -> Movement | None:
    """The :class:`~hnowmodel.movement.Movement` of ``what``: a movement, or anything that names one (an
    :class:`hnowmodel.ops.Operation`; None for an operation whose algorithms are all message schedules); an
    operation's *name* is the registry's to resolve (:mod:`hnowmodel.ops`)."""
    if isinstance(what, Movement):
        return what
    if hasattr(what, "movement") and hasattr(what, "algorithms"):
        mv = what.movement
        return mv if isinstance(mv, Movement) else None
    raise InputError(f"a model variant serves data movements: give an operation or a movement, got {what!r}")


def _label(what: Any) -> str:
    """How an error names ``what``: the operation's name, else its movement's."""
    name = getattr(what, "name", None)
    return name if isinstance(name, str) else _movement(what).label  # type: ignore[union-attr]


def _has_algorithms(what: Any) -> bool:
    """Whether ``what`` (an operation) has algorithms given as message schedules."""
    return bool(getattr(what, "algorithms", None))


@dataclass(frozen=True)
class Variant:
    """One model variant: its ``name``, a one-line ``summary``, its predictor for each data movement it serves
    (``predictors``, :class:`~hnowmodel.movement.Movement` -> :data:`Predictor`: an operation is served through its
    movement, so a variant never names operations), the movements whose exact tree search is exact under it
    (``exact``), whether it is ``flow_level`` (links shared by concurrent messages: it needs the profile's per-byte
    link costs as capacities, and trees are improved by a local search under it) and whether its predictors model
    several ranks on a host (``shared_hosts``; else :meth:`predict` refuses such a layout). ``evaluate``: its engine
    over a message schedule (:data:`Evaluator`; None: it predicts trees only), which serves every algorithm an
    operation gives as a schedule (:meth:`predict_algorithm`). Every method that takes ``what`` takes an operation
    (:func:`hnowmodel.ops.get`) or a movement."""

    name: str
    summary: str
    predictors: Mapping[Movement, Predictor]
    exact: frozenset[Movement] = field(default_factory=frozenset)
    flow_level: bool = False
    shared_hosts: bool = True
    evaluate: Evaluator | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "predictors", MappingProxyType(dict(self.predictors)))
        object.__setattr__(self, "exact", frozenset(self.exact))
        if not self.predictors and self.evaluate is None:
            raise ValueError(f"variant {self.name}: serves no data movement and evaluates no schedule")
        if not all(isinstance(m, Movement) for m in (*self.predictors, *self.exact)):
            raise ValueError(f"variant {self.name}: predictors and exact are keyed by data movements (Movement)")
        stray = [m.label for m in self.exact if m not in self.predictors]
        if stray:
            raise ValueError(f"variant {self.name}: exact for {stray[0]}, which it does not serve")

    @property
    def movements(self) -> tuple[Movement, ...]:
        """The data movements this variant serves."""
        return tuple(self.predictors)

    def serves(self, what: Any) -> bool:
        """Whether this variant predicts ``what``: its trees (through its movement) or, for an operation whose
        algorithms are schedules, those."""
        mv = _movement(what)
        return (mv is not None and mv in self.predictors) or (self.evaluate is not None and _has_algorithms(what))

    def exact_for(self, what: Any) -> bool:
        """Whether the exact tree search (eq. 7) proves an optimum for ``what`` under this variant."""
        return _movement(what) in self.exact

    def predictor(self, what: Any) -> Predictor:
        """The bare predictor of ``what`` (no common-start extra; :meth:`predict` adds it)."""
        mv = _movement(what)
        if mv is None:
            raise InputError(f"{_label(what)} has no tree algorithms (its algorithms: {', '.join(what.algorithms)})")
        try:
            return self.predictors[mv]
        except KeyError:
            served = ", ".join(m.label for m in self.movements)
            raise InputError(
                f"model variant {self.name!r} does not predict {_label(what)} ({_movement(what).label}; it serves: "
                f"{served})"
            ) from None

    def _check_hosts(self, layout: Sequence[str], label: str, able: Callable[[Variant], bool]) -> None:
        """:class:`~hnowmodel.errors.LayoutError` when this variant does not model several ranks on a host and
        ``layout`` has them, naming the variants ``able`` accepts that do (``label``: what is predicted)."""
        if self.shared_hosts or one_per_host(layout):
            return
        others = ", ".join(v.name for v in VARIANTS.values() if v.shared_hosts and able(v)) or "none"
        raise LayoutError(
            f"model variant {self.name!r} does not model several ranks on a host (the layout has {len(layout)} "
            f"ranks on {int(hosts_of(layout).max()) + 1} hosts); {label} variants that do: {others}"
        )

    def predict(
        self,
        what: Any,
        profile: Profile,
        layout: Sequence[str],
        tree: Tree | str,
        sizes: Any,
        schedule: Schedule | None = None,
        *,
        per_rank: bool = False,
        root: int = 0,
    ) -> np.ndarray:
        """Predicted time (µs per size; ``per_rank``: ``(len(sizes), n)``) of ``what`` (an operation or a movement)
        over ``tree`` run as ``schedule`` says (None: the tree executor's), with what the schedule adds beyond the
        model (the common-start extra, to every entry) included. A layout with several ranks on a host is refused
        (:class:`~hnowmodel.errors.LayoutError`) by a variant that does not model hosts."""
        self._check_hosts(layout, _label(what), lambda v: v.serves(what))
        sched = as_schedule(schedule)
        t = self.predictor(what)(profile, layout, tree, sizes, sched, per_rank=per_rank, root=root)
        if sched.common_start:
            extra = sched.extra_us(profile, sizes)
            t = t + (extra[:, None] if per_rank else extra)
        return t

    def predict_algorithm(
        self,
        profile: Profile,
        layout: Sequence[str],
        algorithm: Algorithm,
        sizes: Any,
        *,
        per_rank: bool = False,
        root: int = 0,
        reduce_us_per_byte: Any = 0.0,
    ) -> np.ndarray:
        """Predicted time (µs per size; ``per_rank``: ``(len(sizes), n)``) of an algorithm given as a message
        schedule (:class:`~hnowmodel.schedules.generator.Algorithm`), built for ``layout``'s ranks at each size
        (bytes per rank's block) and evaluated by this variant's engine (``evaluate``); ``reduce_us_per_byte``: γ,
        one rate or one per node type (µs per byte reduced), or a list of those, one per size. A variant that
        evaluates no schedule says which do."""
        if self.evaluate is None:
            able = ", ".join(v.name for v in VARIANTS.values() if v.evaluate is not None)
            raise InputError(
                f"model variant {self.name!r} predicts trees only, not the algorithm {algorithm.name!r} (variants "
                f"that evaluate message schedules: {able})"
            )
        self._check_hosts(layout, algorithm.name, lambda v: v.evaluate is not None)
        n, m = len(layout), as_sizes(sizes)
        gammas = reduce_us_per_byte if isinstance(reduce_us_per_byte, list) else [reduce_us_per_byte] * m.size
        if len(gammas) != m.size:
            raise InputError(f"reduce_us_per_byte: {len(gammas)} rates for {m.size} sizes")
        got = [
            self.evaluate(profile, layout, algorithm.schedule(n, float(mi), root), per_rank=per_rank,
                          reduce_us_per_byte=g)
            for mi, g in zip(m, gammas, strict=True)
        ]  # fmt: skip
        if per_rank:
            return np.array(got, dtype=float).reshape(m.size, n)
        return np.array(got, dtype=float)


@dataclass(frozen=True)
class BoundPredictor:
    """A variant's prediction of one operation (or movement) ``what``, as a function: ``f(profile, layout, tree,
    sizes, schedule=None, *, per_rank=False, root=0)`` (:meth:`Variant.predict`); the schedule's fields may also be
    given as keywords (the old form, e.g. ``root_copy=True``)."""

    variant: Variant
    what: Any

    def __call__(
        self,
        profile: Profile,
        layout: Sequence[str],
        tree: Tree | str,
        sizes: Any,
        schedule: Schedule | None = None,
        *,
        per_rank: bool = False,
        root: int = 0,
        **fields: Any,
    ) -> np.ndarray:
        sched = as_schedule(schedule, **fields)
        return self.variant.predict(self.what, profile, layout, tree, sizes, sched, per_rank=per_rank, root=root)


#: The tree engines of each data movement: the paper's closed form, and the flow engine's.
_PAPER = {ONE_DOWN: _closedform.bcast, SUBTREE_DOWN: _closedform.scatter, SUBTREE_UP: _closedform.gather}
_FLOW = {ONE_DOWN: _flow.bcast, SUBTREE_DOWN: _flow.scatter, SUBTREE_UP: _flow.gather}
_DOWN = (ONE_DOWN, SUBTREE_DOWN)


def _closed_evaluate(profile: Profile, layout: Sequence[str], schedule: Any, *, per_rank: bool = False, **kw: Any):
    """The closed-form engine over a message schedule (:func:`hnowmodel.schedules.closed.evaluate`)."""
    return _closed.evaluate(profile, layout, schedule, per_rank=per_rank, **kw)


def _flow_evaluate(
    profile: Profile, layout: Sequence[str], schedule: Any, *, per_rank: bool = False, sharing: str, **kw: Any
):
    """The flow engine over a message schedule (:func:`hnowmodel.schedules.flows.evaluate`)."""
    run = _flows.evaluate(profile, layout, schedule, sharing=sharing, **kw)
    return run.done_us if per_rank else run.completion_us


def _windowed_tree(move: Movement, sharing: str) -> Callable[..., np.ndarray]:
    """The flow engine's tree predictor of ``move`` under ``sharing``, except on a profile with TCP windows
    (:attr:`~hnowmodel.params.NetworkTerms.windows`) under the tandem's ``rr``: there the tree runs as its message
    schedule (:func:`~hnowmodel.schedules.fromtree.tree_schedule`) through the windowed tandem, whose FIFO egress
    and windows say how a root's messages share its link (docs/model.md, "TCP windows"), in place of the fitted
    queued bytes."""
    tree_fn = partial(_FLOW[move], sharing=sharing)
    if sharing != _flows.TANDEM or move.toward_root:
        return tree_fn

    def predict(
        profile: Profile,
        layout: Sequence[str],
        tree: Tree | str,
        sizes: Any,
        schedule: Schedule | None = None,
        *,
        per_rank: bool = False,
        root: int = 0,
        **fields: Any,
    ) -> np.ndarray:
        if profile.network_terms.windows is None:
            return tree_fn(profile, layout, tree, sizes, schedule, per_rank=per_rank, root=root, **fields)
        run = as_schedule(schedule, **fields)

        def one(t: Tree, m: float) -> Any:
            sched = tree_schedule(t, move, m, run, profile=profile)
            if _flows.windowed(profile, sched) is None:  # too many pieces: the tree engine's queued bytes
                return _flow.simulate(move, profile, layout, t, m, root=root, schedule=run, sharing=sharing)
            return _flows.evaluate(profile, layout, sched, sharing=sharing)

        return _flow.over_sizes(one, profile, layout, tree, sizes, per_rank, root)

    return predict


def _flow_entry(name: str, sharing: str, moves: Sequence[Movement], summary: str, schedules: bool = False) -> Variant:
    """A flow-level variant: :mod:`hnowmodel.flow`'s predictors under the link sharing ``sharing`` (and, with
    ``schedules``, the flow engine over message schedules under the same sharing)."""
    fns = {mv: _windowed_tree(mv, sharing) for mv in moves}
    ev = partial(_flow_evaluate, sharing=sharing) if schedules else None
    return Variant(name, summary, fns, flow_level=True, evaluate=ev)


#: Every model variant, by name, in the order they are offered (an operation's variants in this order).
VARIANTS: Mapping[str, Variant] = MappingProxyType(
    {
        v.name: v
        for v in (
            Variant(
                "link",
                "eq. 10-12 with the receiver's link carrying one message at a time",
                {SUBTREE_UP: partial(_closedform.gather, one_at_a_time=True)},
            ),
            Variant(
                "paper",
                "the paper's equations (eq. 6-12): store-and-forward, one send after another",
                _PAPER,
                exact=frozenset({ONE_DOWN}),
                evaluate=_closed_evaluate,
            ),
            _flow_entry("flow", "maxmin", tuple(_FLOW), "flow-level network, max-min fair link sharing", True),
            _flow_entry(
                "flow-weighted", "weighted", tuple(_FLOW), "flow-level network, max-min weighted by lone rates", True
            ),
            _flow_entry("flow-fifo", "fifo", _DOWN, "a sender's egress as a FIFO queue"),
            _flow_entry("flow-rr", "rr", _DOWN, "a sender's egress served round-robin", True),
        )
    }
)


def names(registry: Mapping[str, Variant] = VARIANTS) -> tuple[str, ...]:
    """Every variant's name, in registry order."""
    return tuple(registry)


def get(name: str, registry: Mapping[str, Variant] = VARIANTS) -> Variant:
    """The variant called ``name``; :class:`InputError` names the valid ones."""
    try:
        return registry[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown model variant {name!r} (choose from: {', '.join(registry)})") from None


def serving(what: Any, registry: Mapping[str, Variant] = VARIANTS) -> tuple[str, ...]:
    """The names of the variants that serve ``what`` (an operation or a movement), in registry order.

    >>> from hnowmodel.movement import ONE_DOWN
    >>> serving(ONE_DOWN)
    ('paper', 'flow', 'flow-weighted', 'flow-fifo', 'flow-rr')
    """
    return tuple(name for name, v in registry.items() if v.serves(what))


def check(what: Any, name: str, registry: Mapping[str, Variant] = VARIANTS) -> Variant:
    """The variant ``name`` for ``what`` (an operation or a movement); :class:`InputError` names the variants that
    serve it."""
    v = registry.get(name) if isinstance(name, str) else None
    if v is None or not v.serves(what):
        choices = ", ".join(serving(what, registry))
        raise InputError(f"unknown {_label(what)} model variant {name!r} (choose from: {choices})")
    return v


def registered(variant: Variant, registry: Mapping[str, Variant] = VARIANTS) -> Mapping[str, Variant]:
    """A copy of ``registry`` with ``variant`` added (or replacing the one of its name): how a new variant joins,
    shown without touching :data:`VARIANTS` (a new built-in variant is one more entry in its literal)."""
    return MappingProxyType({**registry, variant.name: variant})
