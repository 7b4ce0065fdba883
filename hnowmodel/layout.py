"""Layouts: the node type of each rank and, for jobs with several ranks per host, the host of each rank.

Accepted forms (docs/file-formats.md, "Layout"): ``FFSS`` (first letter of each type name, case-insensitive),
``fast,fast,slow`` (``fast*4,slow*4`` repeats), or ``@file.json`` (a JSON list of type names, or an object with
``"ranks"``, ``"nodes"`` or ``"hosts"``). Several ranks on one host: ``FF.S.SS`` (a ``.`` between hosts) or
``fast/2,slow,slow/2`` (``TYPE/SLOTS``, one host; ``fast/2*3``: three such hosts). Every rank of a host has the
host's type (a node type describes a machine: its CPU and its NIC). Ranks fill hosts in order (block placement,
what ``mpiexec -ppn`` does); a ``"nodes"`` file may place them anyhow.

>>> parse_layout("FFSS", ["fast", "slow"])
('fast', 'fast', 'slow', 'slow')
>>> parse_layout("fast*2,slow", ["fast", "slow"])
('fast', 'fast', 'slow')
>>> lay = parse_layout("FF.S.SS", ["fast", "slow"])
>>> lay, lay.hosts.tolist(), lay.slots.tolist()
(('fast', 'fast', 'slow', 'slow', 'slow'), [0, 0, 1, 2, 2], [2, 1, 2])
>>> layout_string(parse_layout("fast/2*2,slow", ["fast", "slow"]))
'FF.FF.S'

Ranks placed on named hosts (a virtual cluster, a hostfile, an ``srun`` allocation) take their host's node type, by
host name (:func:`layout_from_hosts`: a profile's calibrated hosts, and a ``types`` map for hosts it has not seen):

>>> lay = layout_from_hosts(["a", "b", "b", "b"], {"a": "slow", "b": "fast"}, ["fast", "slow"])
>>> layout_string(lay), lay.host_names
('S.FFF', ('a', 'b'))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .errors import LayoutError
from .io import read_json

__all__ = [
    "Layout",
    "parse_layout",
    "layout_string",
    "hosts_of",
    "one_per_host",
    "layout_from_hosts",
    "parse_host_types",
    "merge_host_types",
]


class Layout(tuple):
    """The node type of each rank (a tuple of type names, as a layout has always been) and the host of each rank:
    ``hosts[i]`` is rank ``i``'s host, numbered 0, 1, … in order of first appearance.

    Equal to a plain tuple of type names only when every rank has a host of its own, so layouts that differ only in
    their hosts are different keys. Slicing gives a plain tuple; :meth:`take` keeps the hosts.

    >>> lay = Layout(["f", "f", "s"], hosts=[7, 7, 3])
    >>> lay.hosts.tolist(), lay.n_hosts, lay.host_types, lay.one_per_host, lay == ("f", "f", "s")
    ([0, 0, 1], 2, ('f', 's'), False, False)
    >>> Layout(["f", "s"]) == ("f", "s")
    True
    """

    hosts: np.ndarray
    host_names: tuple[str, ...] | None

    def __new__(
        cls, types: Sequence[str], hosts: Sequence[int] | None = None, host_names: Sequence[str] | None = None
    ) -> Layout:
        self = super().__new__(cls, [str(t) for t in types])
        n = len(self)
        h = np.arange(n, dtype=np.int64) if hosts is None else np.asarray(hosts).astype(np.int64).reshape(-1)
        if h.shape[0] != n:
            raise LayoutError(f"layout: {h.shape[0]} hosts given for {n} ranks")
        if n:  # renumber hosts 0, 1, ... in order of first appearance, whatever numbers the caller used
            _, first, inv = np.unique(h, return_index=True, return_inverse=True)
            new_id = np.empty(first.size, dtype=np.int64)
            new_id[np.argsort(first, kind="stable")] = np.arange(first.size)
            h = new_id[inv.reshape(-1)]
            types_arr = np.asarray(self, dtype=object)
            leader = np.asarray(first)[inv.reshape(-1)]
            bad = np.flatnonzero(types_arr != types_arr[leader])
            if bad.size:
                r, f = int(bad[0]), int(leader[bad[0]])
                raise LayoutError(
                    f"layout rank {r}: type {self[r]!r} on the host of rank {f} (type {self[f]!r}); every rank of a "
                    "host has the host's type"
                )
        h.setflags(write=False)
        k = int(h.max()) + 1 if n else 0
        if host_names is not None:
            host_names = tuple(str(x) for x in host_names)
            if len(host_names) != k or len(set(host_names)) != k:
                raise LayoutError(f"layout: {len(host_names)} host names for {k} hosts (one distinct name each)")
        self.hosts = h
        self.host_names = host_names
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Layout, (tuple(self), self.hosts.tolist(), self.host_names))

    def __eq__(self, other: object) -> bool:
        if not tuple.__eq__(self, other):
            return False
        return np.array_equal(self.hosts, hosts_of(other))  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        if self.one_per_host:
            return tuple.__hash__(self)
        return hash((tuple(self), self.hosts.tobytes()))

    def __repr__(self) -> str:
        return tuple.__repr__(self)

    @property
    def n_hosts(self) -> int:
        """How many hosts the ranks are on."""
        return int(self.hosts.max()) + 1 if len(self) else 0

    @property
    def one_per_host(self) -> bool:
        """True when every rank has a host of its own (the paper's setting)."""
        return self.n_hosts == len(self)

    @property
    def slots(self) -> np.ndarray:
        """Ranks per host, host by host."""
        return np.bincount(self.hosts, minlength=self.n_hosts)

    @property
    def host_types(self) -> tuple[str, ...]:
        """The node type of each host."""
        first = np.unique(self.hosts, return_index=True)[1]
        return tuple(self[int(i)] for i in first)

    @property
    def leaders(self) -> np.ndarray:
        """The lowest rank of each host, host by host."""
        return np.unique(self.hosts, return_index=True)[1].astype(np.int64)

    def take(self, ranks: Sequence[int]) -> Layout:
        """The layout of ``ranks`` (in that order), each keeping its host: a rank order, or a sub-job.

        >>> Layout(["f", "f", "s"], hosts=[0, 0, 1]).take([2, 0, 1]).hosts.tolist()
        [0, 1, 1]
        """
        idx = np.asarray(ranks, dtype=np.int64)
        names = None if self.host_names is None else self.host_names
        sub = Layout([self[int(i)] for i in idx], self.hosts[idx])
        if names is not None:
            order = np.unique(self.hosts[idx], return_index=True)
            first_hosts = self.hosts[idx][np.sort(order[1])]
            sub = Layout(sub, sub.hosts, [names[int(x)] for x in first_hosts])
        return sub


def hosts_of(layout: Sequence[str]) -> np.ndarray:
    """The host of each rank: ``layout.hosts`` for a :class:`Layout`, else one host per rank.

    >>> hosts_of(["f", "s"]).tolist()
    [0, 1]
    """
    h = getattr(layout, "hosts", None)
    return h if h is not None else np.arange(len(layout), dtype=np.int64)


def one_per_host(layout: Sequence[str]) -> bool:
    """True when ``layout`` has one rank per host (every plain sequence of type names has).

    >>> one_per_host(["f", "f"]), one_per_host(Layout(["f", "f"], hosts=[0, 0]))
    (True, False)
    """
    return not isinstance(layout, Layout) or layout.one_per_host


def _check(names: Sequence[str], type_names: Sequence[str], hosts: Sequence[int] | None = None) -> Layout:
    for i, t in enumerate(names):
        if t not in type_names:
            raise LayoutError(f"layout rank {i}: unknown node type {t!r} (known: {', '.join(type_names)})")
    if not names:
        raise LayoutError("layout is empty")
    return Layout(names, hosts)


def _from_doc(doc: Any, src: str, type_names: Sequence[str]) -> Layout:
    """A layout file's document: a list of type names, or ``{"ranks": [...]}``, ``{"nodes": [{"rank", "host",
    "type"}]}`` (a profile's, hosts by name), or ``{"hosts": [{"type", "slots", "name"?}]}`` (ranks fill hosts in
    order)."""
    hosts: list[int] | None = None
    if isinstance(doc, dict):
        if "ranks" in doc:
            doc = doc["ranks"]
        elif "nodes" in doc:
            nodes = doc["nodes"]
            if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
                raise LayoutError(f"layout file {src!r}: 'nodes' must be a list of objects")
            nodes = sorted(nodes, key=lambda n: n.get("rank", 0))
            doc = [n.get("type") for n in nodes]
            if all("host" in n for n in nodes):
                names = [str(n["host"]) for n in nodes]
                hosts = [names.index(x) for x in names]
        elif "hosts" in doc:
            entries = doc["hosts"]
            if not isinstance(entries, list) or not entries:
                raise LayoutError(f"layout file {src!r}: 'hosts' must be a non-empty list")
            doc, hosts = [], []
            for j, e in enumerate(entries):
                slots = e.get("slots", 1) if isinstance(e, dict) else None
                if not isinstance(e, dict) or not isinstance(e.get("type"), str):
                    raise LayoutError(f"layout file {src!r}: hosts[{j}] needs a 'type'")
                if isinstance(slots, bool) or not isinstance(slots, int) or not 1 <= slots <= 1 << 20:
                    raise LayoutError(
                        f"layout file {src!r}: hosts[{j}].slots must be a whole number ≥ 1, got {slots!r}"
                    )
                doc += [e["type"]] * slots
                hosts += [j] * slots
        else:
            raise LayoutError(f"layout file {src!r}: expected a list or an object with 'ranks', 'nodes' or 'hosts'")
    if not isinstance(doc, list) or not all(isinstance(t, str) for t in doc):
        raise LayoutError(f"layout file {src!r}: expected a list of type names")
    return _check(doc, type_names, hosts)


def _names_form(spec: str, type_names: Sequence[str]) -> Layout:
    """``fast*2,slow/2``: comma-separated items ``NAME[/SLOTS][*COUNT]`` (COUNT hosts of SLOTS ranks each)."""
    out: list[str] = []
    hosts: list[int] = []
    for item in spec.split(","):
        item = item.strip()
        head, _, count = item.partition("*")
        name, _, slots = head.partition("/")
        try:
            k = int(count) if count else 1
            s = int(slots) if slots else 1
        except ValueError:
            raise LayoutError(f"layout item {item!r}: repeat count and slots must be integers") from None
        if k < 0:
            raise LayoutError(f"layout item {item!r}: repeat count must be >= 0")
        if s < 1:
            raise LayoutError(f"layout item {item!r}: slots must be >= 1")
        if name not in type_names:
            raise LayoutError(f"layout item {item!r}: unknown node type {name!r} (known: {', '.join(type_names)})")
        for _ in range(k):
            h = (hosts[-1] + 1) if hosts else 0
            out += [name] * s
            hosts += [h] * s
    return _check(out, type_names, hosts)


def _letters_form(spec: str, type_names: Sequence[str]) -> Layout:
    """``FFSS`` (a host per rank) or ``FF.S.SS`` (a ``.`` between hosts)."""
    letters: dict[str, str] = {}
    for t in type_names:
        c = t[0].upper()
        if c in letters:
            raise LayoutError(
                f"layout {spec!r}: types {letters[c]!r} and {t!r} share the letter {c!r}; use names, e.g. {t},{t}"
            )
        letters[c] = t
    grouped = "." in spec
    out: list[str] = []
    hosts: list[int] = []
    h = 0
    for i, c in enumerate(spec):
        if c == "." and grouped:
            if not out or spec[i - 1] == "." or i == len(spec) - 1:
                raise LayoutError(f"layout {spec!r}: an empty host at position {i} ('.' separates hosts)")
            h += 1
            continue
        if c.upper() not in letters:
            known = ", ".join(f"{k}={v}" for k, v in letters.items())
            raise LayoutError(f"layout {spec!r}: letter {c!r} at rank {len(out)} names no node type (known: {known})")
        out.append(letters[c.upper()])
        hosts.append(h if grouped else len(out) - 1)
    return _check(out, type_names, hosts)


def parse_layout(spec: str | Sequence[str], type_names: Sequence[str]) -> Layout:
    """Turn a layout spec into a :class:`Layout` (the type of each rank, and its host); :class:`LayoutError` names
    the bad part. A sequence is taken as it is (a :class:`Layout` keeps its hosts)."""
    type_names = list(type_names)
    if not isinstance(spec, str):
        return _check(list(spec), type_names, getattr(spec, "hosts", None))
    spec = spec.strip()
    if spec.startswith("@"):
        return _from_doc(read_json(spec[1:], "layout file"), spec[1:], type_names)
    if "," in spec or "*" in spec or "/" in spec or spec in type_names:
        return _names_form(spec, type_names)
    return _letters_form(spec, type_names)


def layout_string(layout: Sequence[str]) -> str:
    """Short form of a layout: first letters if they are unambiguous (a ``.`` between hosts when a host has several
    ranks), else comma-joined names (``NAME/SLOTS`` per host).

    >>> layout_string(["fast", "slow", "slow"])
    'FSS'
    >>> layout_string(Layout(["fast", "fast", "slow"], hosts=[0, 0, 1]))
    'FF.S'
    """
    first = {t: t[0].upper() for t in set(layout)}
    hosts = hosts_of(layout)
    grouped = len(layout) and int(hosts.max()) + 1 < len(layout)
    if grouped and (np.diff(hosts) < 0).any():  # ranks not in blocks by host: no short form, name each rank's host
        return ",".join(f"{t}@{h}" for t, h in zip(layout, hosts.tolist(), strict=True))
    if len(set(first.values())) == len(first):
        if not grouped:
            return "".join(first[t] for t in layout)
        return ".".join(
            "".join(first[layout[int(r)]] for r in np.flatnonzero(hosts == h)) for h in range(hosts.max() + 1)
        )
    if not grouped:
        return ",".join(layout)
    lay = layout if isinstance(layout, Layout) else Layout(layout, hosts)
    return ",".join(f"{t}/{s}" if s > 1 else t for t, s in zip(lay.host_types, lay.slots.tolist(), strict=True))


def _ranks_text(ranks: Sequence[int]) -> str:
    """``rank 3`` or ``ranks 4-6`` (``ranks 1,3`` when not consecutive)."""
    r = [int(x) for x in ranks]
    if len(r) == 1:
        return f"rank {r[0]}"
    if r == list(range(r[0], r[-1] + 1)):
        return f"ranks {r[0]}-{r[-1]}"
    return "ranks " + ",".join(map(str, r))


def layout_from_hosts(
    rank_hosts: Sequence[str],
    host_types: Mapping[str, str],
    type_names: Sequence[str],
    hint: str = "name its node type in a types map (HOST=TYPE)",
) -> Layout:
    """The layout of ranks placed on named hosts (``rank_hosts[i]``: rank ``i``'s host, in any order): each rank has
    its host's node type, looked up by host name in ``host_types`` (host -> type: the hosts a profile was calibrated
    on, and any the user named), and the ranks on one host share it (``host_names``: the hosts by first rank).

    A host missing from ``host_types`` is a :class:`LayoutError` naming it and its ranks (``hint``: how to name
    it); so is a type not in ``type_names``.

    >>> lay = layout_from_hosts(["f1", "m1", "m1"], {"f1": "fast", "m1": "medium", "s9": "slow"}, ["fast", "medium"])
    >>> lay, lay.hosts.tolist(), lay.host_names
    (('fast', 'medium', 'medium'), [0, 1, 1], ('f1', 'm1'))
    >>> layout_from_hosts(["f1", "n7", "n7"], {"f1": "fast"}, ["fast"], "give --types n7=TYPE")
    Traceback (most recent call last):
    ...
    hnowmodel.errors.LayoutError: host 'n7' (ranks 1-2): no node type known for it (the profile was not calibrated \
on it); give --types n7=TYPE
    """
    names = [str(h) for h in rank_hosts]
    if not names:
        raise LayoutError("layout is empty (no ranks placed on hosts)")
    order = list(dict.fromkeys(names))
    for h in order:
        if h not in host_types:
            ranks = [i for i, x in enumerate(names) if x == h]
            raise LayoutError(
                f"host {h!r} ({_ranks_text(ranks)}): no node type known for it (the profile was not calibrated on "
                f"it); {hint}"
            )
        if host_types[h] not in type_names:
            raise LayoutError(
                f"host {h!r}: unknown node type {host_types[h]!r} (known: {', '.join(map(str, type_names))})"
            )
    return Layout([host_types[h] for h in names], [order.index(h) for h in names], order)


def _types_doc(doc: Any, src: str) -> dict[str, str]:
    if not isinstance(doc, Mapping):
        raise LayoutError(f"{src}: expected an object of host name -> node type, got {type(doc).__name__}")
    out: dict[str, str] = {}
    for host, t in doc.items():
        if not isinstance(host, str) or not host.strip():
            raise LayoutError(f"{src}: host names must be non-empty strings, got {host!r}")
        if not isinstance(t, str) or not t.strip():
            raise LayoutError(f"{src}: host {host!r}: the node type must be a non-empty string, got {t!r}")
        out[host.strip()] = t.strip()
    return out


def parse_host_types(spec: str | Mapping[str, str] | None, src: str = "--types") -> dict[str, str]:
    """A map host name -> node type from ``HOST=TYPE[,HOST=TYPE…]``, ``@file.json`` (a JSON object of host names
    and type names) or a mapping (checked the same); None gives ``{}``. Type names are checked where they are used
    (:func:`layout_from_hosts`), against the profile's.

    >>> parse_host_types("n05=fast, n06=slow")
    {'n05': 'fast', 'n06': 'slow'}
    >>> parse_host_types("n05")
    Traceback (most recent call last):
    ...
    hnowmodel.errors.LayoutError: --types item 'n05': expected HOST=TYPE (or @file.json)
    """
    if spec is None:
        return {}
    if not isinstance(spec, str):
        return _types_doc(spec, src)
    text = spec.strip()
    if text.startswith("@"):
        return _types_doc(read_json(text[1:], f"{src} file"), f"{src} file {text[1:]!r}")
    out: dict[str, str] = {}
    for item in text.split(","):
        host, eq, t = (x.strip() for x in item.partition("="))
        if not eq or not host or not t:
            raise LayoutError(f"{src} item {item.strip()!r}: expected HOST=TYPE (or @file.json)")
        if host in out and out[host] != t:
            raise LayoutError(f"{src}: host {host!r} given two types, {out[host]!r} and {t!r}")
        out[host] = t
    return out


def merge_host_types(*maps: tuple[str, Mapping[str, str]]) -> dict[str, str]:
    """One map host -> node type from several ``(source, map)`` pairs (the profile's calibrated hosts, a cluster
    spec's ``types``, ``--types``); a host two sources type differently is a :class:`LayoutError` naming both.

    >>> merge_host_types(("the profile", {"a": "fast"}), ("--types", {"b": "slow", "a": "fast"}))
    {'a': 'fast', 'b': 'slow'}
    >>> merge_host_types(("the profile", {"a": "fast"}), ("--types", {"a": "slow"}))
    Traceback (most recent call last):
    ...
    hnowmodel.errors.LayoutError: host 'a': the profile says node type 'fast', --types says 'slow'
    """
    out: dict[str, str] = {}
    said: dict[str, str] = {}
    for source, m in maps:
        for host, t in m.items():
            if host in out and out[host] != t:
                raise LayoutError(f"host {host!r}: {said[host]} says node type {out[host]!r}, {source} says {t!r}")
            out.setdefault(host, t)
            said.setdefault(host, source)
    return out
