"""Testbed files (``hnowmodel.testbed/1``): an emulated heterogeneous cluster for one machine.

Same ``types``/``network``/``links`` as a profile, plus ``ranks`` (the node type of each rank) and ``time_scale``.
The emulating transport that makes ranks behave like their types is :mod:`calibrate.testbed_transport` (the MPI side);
this module only reads, validates and describes testbeds, so that ``hnow`` checks a testbed file before any MPI
job starts. The calibration never reads a testbed's parameters; only tests and experiments compare against
:meth:`Testbed.profile`.

>>> tb = load_testbed("paper")
>>> tb.layout_for(3), tb.time_scale
(('fast', 'fast', 'fast'), 30.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import InputError, ProfileError
from .io import read_json
from .layout import parse_layout
from .params import Link, NodeType, Profile, paper_profile, parse_links, parse_network, parse_types

__all__ = ["Testbed", "TESTBED_SCHEMA", "PAPER_TIME_SCALE", "load_testbed", "paper_testbed"]

TESTBED_SCHEMA = "hnowmodel.testbed/1"
#: Default time scale of the built-in testbed: large enough that sleep/wake-up jitter (~0.1 ms real on a loaded
#: 2-core machine) stays around 1 % of the shortest model time, small enough that a 16 KiB slow send lasts < 0.1 s.
PAPER_TIME_SCALE = 30.0


@dataclass(frozen=True)
class Testbed:
    """An emulated cluster: node types, network, per-pair links, the type of each rank, and the time scale."""

    types: Mapping[str, NodeType]
    network: Link
    links: Mapping[tuple[str, str], Link] = field(default_factory=dict)
    ranks: tuple[str, ...] = ()
    time_scale: float = PAPER_TIME_SCALE
    name: str = "testbed"

    def with_ranks(self, layout: Sequence[str] | str) -> Testbed:
        """The same testbed with another rank layout (a parsed layout or a spec such as ``FFSS``)."""
        if isinstance(layout, str):
            layout = parse_layout(layout, list(self.types))
        for t in layout:
            if t not in self.types:
                raise InputError(f"testbed {self.name!r}: unknown node type {t!r} (has: {', '.join(self.types)})")
        return replace(self, ranks=tuple(layout))

    def layout_for(self, n: int) -> tuple[str, ...]:
        """The type of each of ``n`` ranks: the testbed's ``ranks`` list, cycled when the job is larger."""
        if not self.ranks:
            raise InputError(f"testbed {self.name!r} lists no ranks")
        return tuple(self.ranks[i % len(self.ranks)] for i in range(n))

    def profile(self) -> Profile:
        """The true parameters as a profile. For tests and experiments only: calibration must measure them."""
        return Profile(dict(self.types), self.network, dict(self.links), provenance={"source": f"testbed {self.name}"})

    def to_dict(self) -> dict[str, Any]:
        """The ``hnowmodel.testbed/1`` document (regime-free: one line per parameter)."""
        doc: dict[str, Any] = {
            "schema": TESTBED_SCHEMA,
            "name": self.name,
            "types": {n: t.to_flat_dict() for n, t in self.types.items()},
            "network": self.network.to_flat_dict(),
        }
        if self.links:
            doc["links"] = [{"from": a, "to": b, **lk.to_flat_dict()} for (a, b), lk in self.links.items()]
        doc["ranks"] = list(self.ranks)
        doc["time_scale"] = self.time_scale
        return doc


def paper_testbed() -> Testbed:
    """Table 1's two node types and the paper's network (Table-2 convention), 4 fast then 4 slow ranks."""
    p = paper_profile()
    return Testbed(dict(p.types), p.network, {}, ("fast",) * 4 + ("slow",) * 4, PAPER_TIME_SCALE, "paper")


def load_testbed(spec: str | Testbed) -> Testbed:
    """``"paper"`` or a ``hnowmodel.testbed/1`` JSON file; errors name the file and the bad field."""
    if isinstance(spec, Testbed):
        return spec
    if spec == "paper":
        return paper_testbed()
    doc = read_json(spec, "testbed")
    where = f"testbed {spec!r}"
    if not isinstance(doc, dict):
        raise ProfileError(f"{where}: expected a JSON object")
    if doc.get("schema") != TESTBED_SCHEMA:
        raise ProfileError(f"{where}.schema: expected {TESTBED_SCHEMA!r}, got {doc.get('schema')!r}")
    unknown = sorted(set(doc) - {"schema", "types", "network", "links", "ranks", "time_scale", "name"})
    if unknown:
        raise ProfileError(f"{where}: unknown key {unknown[0]!r}")
    for key in ("types", "network", "ranks"):
        if key not in doc:
            raise ProfileError(f"{where}.{key}: missing")
    # the emulator's semantics are one line per parameter (docs/file-formats.md, "Testbed"): no regimes in a testbed
    types = parse_types(doc["types"], f"{where}.types", allow_regimes=False)
    network = parse_network(doc["network"], f"{where}.network", allow_regimes=False)
    links = parse_links(doc.get("links"), types, f"{where}.links", allow_regimes=False)
    ranks = doc["ranks"]
    if not isinstance(ranks, list) or not ranks:
        raise ProfileError(f"{where}.ranks: expected a non-empty list of type names")
    for i, t in enumerate(ranks):
        if t not in types:
            raise ProfileError(f"{where}.ranks[{i}]: unknown node type {t!r} (has: {', '.join(types)})")
    scale = doc.get("time_scale", PAPER_TIME_SCALE)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale) or scale <= 0:
        raise ProfileError(f"{where}.time_scale: expected a positive number, got {scale!r}")
    return Testbed(types, network, links, tuple(ranks), float(scale), str(doc.get("name", spec)))
