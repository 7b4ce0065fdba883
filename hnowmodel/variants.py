"""The one registry of model variants: every way hnow predicts a collective is an entry here.

A :class:`Variant` names the operations it serves, each with its predictor, says whether the exact tree search
proves an optimum under it (:mod:`hnowmodel.search.exact`: eq. 7, the ``paper`` variant's bcast) and whether it is
a flow-level variant (it shares links, needs the profile's link capacities, and the search improves its trees
locally under it). Every predictor has one signature::

    predictor(profile, layout, tree, sizes, schedule, *, per_rank=False, root=0) -> np.ndarray  # µs

taking from the :class:`~hnowmodel.schedule.Schedule` what it models (the root's copy, the receive order, ...) and
ignoring the rest; :meth:`Variant.predict` calls it and adds what the schedule adds beyond the model (the
common-start extra). Which variant an operation uses by default is the operation's (:mod:`hnowmodel.ops`).
A variant says whether it models several ranks per host (``shared_hosts``: a
:class:`~hnowmodel.layout.Layout` with hosts; docs/model.md, "Hosts"); one that does not refuses such a layout
with one line instead of predicting as if every rank had a host of its own.

Adding a variant is one entry in :data:`VARIANTS` plus its predictor; nothing else compares variant names.

>>> [v.name for v in VARIANTS.values() if v.serves("gather")]
['link', 'paper', 'flow', 'flow-weighted']
>>> get("paper").exact_for("bcast"), get("paper").exact_for("gather"), get("flow-rr").flow_level
(True, False, True)
>>> import hnowmodel as hm
>>> float(get("paper").predict("bcast", hm.paper_profile(), ["fast", "fast"], "binomial", [0])[0])
170.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import Any

import numpy as np

from . import flow as _flow
from . import predict as _predict
from .errors import InputError, LayoutError
from .layout import hosts_of, one_per_host
from .params import Profile
from .schedule import Schedule, as_schedule
from .trees import Tree

__all__ = ["Predictor", "Variant", "BoundPredictor", "VARIANTS", "names", "get", "for_op", "check", "registered"]

#: ``f(profile, layout, tree, sizes, schedule, *, per_rank=False, root=0) -> µs`` (one per size, or
#: ``(len(sizes), n)`` with ``per_rank``).
Predictor = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Variant:
    """One model variant: its ``name``, a one-line ``summary``, its predictor for each operation it serves
    (``predictors``, op name -> :data:`Predictor`), the operations whose exact tree search is exact under it
    (``exact_ops``), whether it is ``flow_level`` (links shared by concurrent messages: it needs the profile's
    per-byte link costs as capacities, and trees are improved by a local search under it) and whether its
    predictors model several ranks on a host (``shared_hosts``; else :meth:`predict` refuses such a layout)."""

    name: str
    summary: str
    predictors: Mapping[str, Predictor]
    exact_ops: frozenset[str] = field(default_factory=frozenset)
    flow_level: bool = False
    shared_hosts: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "predictors", MappingProxyType(dict(self.predictors)))
        object.__setattr__(self, "exact_ops", frozenset(self.exact_ops))
        if not self.predictors:
            raise ValueError(f"variant {self.name}: serves no operation")
        stray = sorted(self.exact_ops - set(self.predictors))
        if stray:
            raise ValueError(f"variant {self.name}: exact for {stray[0]}, which it does not serve")

    @property
    def ops(self) -> tuple[str, ...]:
        """The operations this variant serves."""
        return tuple(self.predictors)

    def serves(self, op: str) -> bool:
        return op in self.predictors

    def exact_for(self, op: str) -> bool:
        """Whether the exact tree search (eq. 7) proves an optimum for ``op`` under this variant."""
        return op in self.exact_ops

    def predictor(self, op: str) -> Predictor:
        """The bare predictor of ``op`` (no common-start extra; :meth:`predict` adds it)."""
        try:
            return self.predictors[op]
        except KeyError:
            raise InputError(
                f"model variant {self.name!r} does not predict {op} (it serves: {', '.join(self.ops)})"
            ) from None

    def predict(
        self,
        op: str,
        profile: Profile,
        layout: Sequence[str],
        tree: Tree | str,
        sizes: Any,
        schedule: Schedule | None = None,
        *,
        per_rank: bool = False,
        root: int = 0,
    ) -> np.ndarray:
        """Predicted time (µs per size; ``per_rank``: ``(len(sizes), n)``) of ``op`` over ``tree`` run as
        ``schedule`` says (None: the tree executor's), with what the schedule adds beyond the model (the
        common-start extra, to every entry) included. A layout with several ranks on a host is refused
        (:class:`~hnowmodel.errors.LayoutError`) by a variant that does not model hosts."""
        if not self.shared_hosts and not one_per_host(layout):
            able = ", ".join(v.name for v in VARIANTS.values() if v.shared_hosts and v.serves(op)) or "none"
            raise LayoutError(
                f"model variant {self.name!r} does not model several ranks on a host (the layout has "
                f"{len(layout)} ranks on {int(hosts_of(layout).max()) + 1} hosts); {op} variants that do: {able}"
            )
        sched = as_schedule(schedule)
        t = self.predictor(op)(profile, layout, tree, sizes, sched, per_rank=per_rank, root=root)
        if sched.common_start:
            extra = sched.extra_us(profile, sizes)
            t = t + (extra[:, None] if per_rank else extra)
        return t


@dataclass(frozen=True)
class BoundPredictor:
    """A variant's prediction of one operation, as a function: ``f(profile, layout, tree, sizes, schedule=None, *,
    per_rank=False, root=0)`` (:meth:`Variant.predict`); the schedule's fields may also be given as keywords (the
    old form, e.g. ``root_copy=True``)."""

    variant: Variant
    op: str

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
        return self.variant.predict(self.op, profile, layout, tree, sizes, sched, per_rank=per_rank, root=root)


def _flow_entry(name: str, sharing: str, ops: Sequence[str], summary: str) -> Variant:
    """A flow-level variant: :mod:`hnowmodel.flow`'s predictors under the link sharing ``sharing``."""
    fns = {"bcast": _flow.bcast, "scatter": _flow.scatter, "gather": _flow.gather}
    return Variant(name, summary, {op: partial(fns[op], sharing=sharing) for op in ops}, flow_level=True)


_ALL = ("bcast", "scatter", "gather")

#: Every model variant, by name, in the order they are offered (an operation's variants in this order).
VARIANTS: Mapping[str, Variant] = MappingProxyType(
    {
        v.name: v
        for v in (
            Variant(
                "link",
                "eq. 10-12 with the receiver's link carrying one message at a time",
                {"gather": partial(_predict.gather, one_at_a_time=True)},
            ),
            Variant(
                "paper",
                "the paper's equations (eq. 6-12): store-and-forward, one send after another",
                {"bcast": _predict.bcast, "scatter": _predict.scatter, "gather": _predict.gather},
                exact_ops=frozenset({"bcast"}),
            ),
            _flow_entry("flow", "maxmin", _ALL, "flow-level network, max-min fair link sharing"),
            _flow_entry("flow-weighted", "weighted", _ALL, "flow-level network, max-min weighted by lone rates"),
            _flow_entry("flow-fifo", "fifo", ("bcast", "scatter"), "a sender's egress as a FIFO queue"),
            _flow_entry("flow-rr", "rr", ("bcast", "scatter"), "a sender's egress served round-robin"),
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


def for_op(op: str, registry: Mapping[str, Variant] = VARIANTS) -> tuple[str, ...]:
    """The names of the variants that serve ``op``, in registry order.

    >>> for_op("bcast")
    ('paper', 'flow', 'flow-weighted', 'flow-fifo', 'flow-rr')
    """
    return tuple(name for name, v in registry.items() if v.serves(op))


def check(op: str, name: str, registry: Mapping[str, Variant] = VARIANTS) -> Variant:
    """The variant ``name`` for ``op``; :class:`InputError` names the variants that serve ``op``."""
    v = registry.get(name) if isinstance(name, str) else None
    if v is None or not v.serves(op):
        raise InputError(f"unknown {op} model variant {name!r} (choose from: {', '.join(for_op(op, registry))})")
    return v


def registered(variant: Variant, registry: Mapping[str, Variant] = VARIANTS) -> Mapping[str, Variant]:
    """A copy of ``registry`` with ``variant`` added (or replacing the one of its name): how a new variant joins,
    shown without touching :data:`VARIANTS` (a new built-in variant is one more entry in its literal)."""
    return MappingProxyType({**registry, variant.name: variant})
