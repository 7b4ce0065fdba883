"""Job shapes to tune for (``--shapes``): how many hosts, how many ranks on each, and each host's node type.

A shape is written ``HxK`` (``H`` hosts × ``K`` ranks per host), ``calibrated`` (the hosts and slots the profile
was calibrated on) or ``@FILE`` (a hostfile with slots, hydra ``host:K`` or Open MPI ``host slots=K``, each host
known to the profile by name). ``HxK`` takes its host types from the **calibrated pool**: the profile's hosts in
rank order (``nodes``), cycled — host ``i`` of the shape has the type of calibrated host ``i mod P`` (P calibrated
hosts), so a shape of a multiple of P hosts has the pool's proportions exactly and every shape keeps the pool's
order (the mix of fast and slow hosts a launcher meets in a hostfile). Hosts beyond the first cycle are named after
the calibrated host whose type they take, with ``.2``, ``.3``, … (put your hosts of that type in their place).

A profile without host terms (``hnowmodel.profile/2``: one rank per host was measured) tunes shapes of one rank per
host only; several ranks per host need a calibration that told hosts apart (``shm`` costs for each type).

>>> from hnowmodel.params import Profile, paper_profile
>>> doc = paper_profile().to_dict()
>>> doc["nodes"] = [{"rank": 0, "host": "f1", "type": "fast"}, {"rank": 1, "host": "s1", "type": "slow"}]
>>> (s,) = parse_shapes("3x1", Profile.from_dict(doc))
>>> s.label, s.ranks, [(h.name, h.type, h.slots) for h in s.hosts]
('3x1', 3, [('f1', 'fast', 1), ('s1', 'slow', 1), ('f1.2', 'fast', 1)])
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jobs.hostfile import HostEntry, format_hostfile, read_hostfile
from ..layout import Layout
from ..params import Profile

__all__ = [
    "ShapeHost",
    "Shape",
    "pool",
    "check_shape_syntax",
    "parse_shapes",
    "calibrated_shape",
    "shape_profile",
    "shape_from_layout",
    "oversubscribed",
    "ranks_per_host",
]

_HXK = re.compile(r"^(\d+)\s*[xX×]\s*(\d+)$")


@dataclass(frozen=True)
class ShapeHost:
    """One host of a shape: its ``name``, its node ``type``, how many ranks it runs (``slots``) and its logical CPUs
    (``cores``: what the calibration recorded for the host whose type it takes; None when it did not)."""

    name: str
    type: str
    slots: int = 1
    cores: int | None = None


@dataclass(frozen=True)
class Shape:
    """A job shape: its ``label`` (``12x1``, ``calibrated``, a hostfile's name) and its hosts in rank-filling
    order (ranks fill each host's slots in turn, as a hostfile with slots places them)."""

    label: str
    hosts: tuple[ShapeHost, ...]

    @property
    def ranks(self) -> int:
        """How many ranks the shape runs."""
        return sum(h.slots for h in self.hosts)

    @property
    def one_per_host(self) -> bool:
        """True when every host runs one rank."""
        return all(h.slots == 1 for h in self.hosts)

    @property
    def rank_hosts(self) -> tuple[str, ...]:
        """The host of each rank, in rank order."""
        return tuple(h.name for h in self.hosts for _ in range(h.slots))

    @property
    def layout(self) -> Layout:
        """The node type of each rank with its host.

        >>> Shape("x", (ShapeHost("a", "fast", 2), ShapeHost("b", "slow"))).layout.hosts.tolist()
        [0, 0, 1]
        """
        types = [h.type for h in self.hosts for _ in range(h.slots)]
        hosts = [i for i, h in enumerate(self.hosts) for _ in range(h.slots)]
        return Layout(types, hosts, [h.name for h in self.hosts])

    def hostfile(self) -> str:
        """The shape as a hydra hostfile (``host:K`` per host, in order)."""
        return format_hostfile(tuple(HostEntry(h.name, h.slots) for h in self.hosts), "hydra")

    def describe(self) -> str:
        """One line: ranks, hosts and the types in order."""
        kinds = " ".join(f"{h.name}={h.type}" + (f"×{h.slots}" if h.slots > 1 else "") for h in self.hosts)
        return f"{self.label}: {self.ranks} ranks on {len(self.hosts)} hosts ({kinds})"


def pool(profile: Profile) -> tuple[ShapeHost, ...]:
    """The calibrated hosts in rank order with their types and slots (from ``nodes``). A profile without host terms
    counts every rank as a host of its own (as its model does); two such ranks named alike get ``-RANK``."""
    nodes = sorted(profile.nodes, key=lambda n: n.get("rank", 0))
    if not nodes:
        raise InputError(
            "--shapes: the profile records no calibrated hosts (its 'nodes'): calibrate on the hosts to tune for"
        )
    names = [str(n.get("host", f"rank{i}")) for i, n in enumerate(nodes)]
    if not (profile.shm or profile.nic):
        dup = {x for x in names if names.count(x) > 1}
        return tuple(
            ShapeHost(f"{x}-{i}" if x in dup else x, str(n["type"]), 1, n.get("cores"))
            for i, (x, n) in enumerate(zip(names, nodes, strict=True))
        )
    out: dict[str, ShapeHost] = {}
    for x, n in zip(names, nodes, strict=True):
        h = out.get(x)
        out[x] = ShapeHost(x, str(n["type"]), 1, n.get("cores")) if h is None else replace(h, slots=h.slots + 1)
    return tuple(out.values())


def calibrated_shape(profile: Profile) -> Shape:
    """The shape the profile was calibrated on."""
    return Shape("calibrated", pool(profile))


def _from_pool(label: str, n_hosts: int, per_host: int, hosts: tuple[ShapeHost, ...]) -> Shape:
    out = []
    for i in range(n_hosts):
        h = hosts[i % len(hosts)]
        cycle = i // len(hosts)
        out.append(ShapeHost(h.name if cycle == 0 else f"{h.name}.{cycle + 1}", h.type, per_host, h.cores))
    return Shape(label, tuple(out))


def _from_hostfile(path: str, profile: Profile) -> Shape:
    known = {h.name: h for h in pool(profile)}
    hosts = []
    for e in read_hostfile(path):
        if e.host not in known:
            raise InputError(
                f"--shapes @{path}: host {e.host!r} is not one the profile was calibrated on "
                f"({', '.join(known)}): its node type is unknown"
            )
        hosts.append(ShapeHost(e.host, known[e.host].type, e.slots, known[e.host].cores))
    return Shape(Path(path).name, tuple(hosts))


def shape_from_layout(label: str, layout: Layout) -> Shape:
    """The shape of a job's layout (its hosts, named as the layout names them, else ``h1``, ``h2``, …)."""
    lay = layout if isinstance(layout, Layout) else Layout(layout)
    names = lay.host_names or tuple(f"h{i + 1}" for i in range(lay.n_hosts))
    slots = lay.slots.tolist()
    return Shape(label, tuple(ShapeHost(n, t, k) for n, t, k in zip(names, lay.host_types, slots, strict=True)))


def _check(shape: Shape, profile: Profile) -> Shape:
    """``shape`` when the profile can predict it: its types known, shared memory known where ranks share a host."""
    missing = sorted({h.type for h in shape.hosts} - set(profile.type_names))
    if missing:
        raise InputError(f"--shapes {shape.label}: the profile has no node type {', '.join(map(repr, missing))}")
    shared = sorted({h.type for h in shape.hosts if h.slots > 1} - set(profile.shm))
    if shared:
        raise InputError(
            f"--shapes {shape.label}: several ranks per host of type {', '.join(map(repr, shared))}, but the "
            "profile has no shared-memory costs for it (calibrate with several ranks on a host)"
        )
    if shape.ranks < 2:
        raise InputError(f"--shapes {shape.label}: a shape needs at least 2 ranks")
    return shape


def ranks_per_host(item: str) -> int | None:
    """The ``K`` of an ``HxK`` item of ``--shapes`` (None for another form).

    >>> ranks_per_host("4x3"), ranks_per_host("calibrated")
    (3, None)
    """
    m = _HXK.match(item.strip())
    return int(m.group(2)) if m else None


def check_shape_syntax(text: Any) -> list[str]:
    """The items of ``--shapes`` (a comma list, or a sequence), each checked for its form only (before a
    calibration: the types are checked by :func:`parse_shapes`); ``["calibrated"]`` for None or nothing.

    >>> check_shape_syntax("12x1, 4x3")
    ['12x1', '4x3']
    >>> check_shape_syntax("12by1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hnowmodel.errors.InputError: --shapes '12by1': expected HOSTSxRANKS_PER_HOST (e.g. 12x1,4x3), ...
    """
    parts = (text or "").split(",") if isinstance(text, str) or text is None else [str(x) for x in text]
    items = [x.strip() for x in parts if x.strip()] or ["calibrated"]
    for item in items:
        m = _HXK.match(item)
        if item == "calibrated" or (item.startswith("@") and len(item) > 1):
            continue
        if not m:
            raise InputError(
                f"--shapes {item!r}: expected HOSTSxRANKS_PER_HOST (e.g. 12x1,4x3), 'calibrated' or @HOSTFILE"
            )
        if int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise InputError(f"--shapes {item!r}: hosts and ranks per host must be >= 1")
    dup = next((x for x in items if items.count(x) > 1), None)
    if dup is not None:
        raise InputError(f"--shapes: {dup!r} given twice")
    return items


def parse_shapes(text: Any, profile: Profile) -> tuple[Shape, ...]:
    """The shapes of ``--shapes`` (a comma list of ``HxK``, ``calibrated``, ``@HOSTFILE``; None or empty: the
    calibrated shape), each checked against the profile (:class:`InputError`, one line, otherwise)."""
    out: list[Shape] = []
    for item in check_shape_syntax(text):
        m = _HXK.match(item)
        if item == "calibrated":
            shape = calibrated_shape(profile)
        elif item.startswith("@"):
            shape = _from_hostfile(item[1:], profile)
        else:
            n_hosts, per_host = int(m.group(1)), int(m.group(2))
            shape = _from_pool(f"{n_hosts}x{per_host}", n_hosts, per_host, pool(profile))
        out.append(_check(shape, profile))
    labels = [s.label for s in out]
    dup = next((x for x in labels if labels.count(x) > 1), None)
    if dup is not None:
        raise InputError(f"--shapes: {dup!r} given twice")
    return tuple(out)


def oversubscribed(shapes: Sequence[Shape]) -> str | None:
    """One warning line naming the shapes that put more ranks on a host than it has cores (allowed: the ranks
    share cores, and the model, calibrated with a core each, may then predict them faster than they run), or None.

    >>> s = Shape("2x4", (ShapeHost("a", "fast", 4, 2), ShapeHost("b", "slow", 4, None)))
    >>> oversubscribed([s])
    'warning: more ranks per host than the host has cores: 2x4 (a: 4 ranks on 2 cores); allowed, the ranks share cores'
    """
    said = []
    for s in shapes:
        over = [f"{h.name}: {h.slots} ranks on {h.cores} cores" for h in s.hosts if h.cores and h.slots > h.cores]
        if over:
            said.append(f"{s.label} ({', '.join(over[:3])}{', …' if len(over) > 3 else ''})")
    if not said:
        return None
    return f"warning: more ranks per host than the host has cores: {'; '.join(said)}; allowed, the ranks share cores"


def shape_profile(profile: Profile, shape: Shape) -> Profile:
    """``profile`` as if it had been calibrated on ``shape``: the same costs (per node type), the shape's ranks,
    hosts and types as its ``nodes`` (what :func:`hnowmodel.export.export` chooses rank orders and algorithms for).
    """
    nodes = tuple(
        {"rank": r, "host": name, "type": t}
        for r, (name, t) in enumerate(zip(shape.rank_hosts, shape.layout, strict=True))
    )
    return replace(profile, nodes=nodes)
