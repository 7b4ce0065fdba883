"""The one chooser of an MPI library's algorithm per operation and message size, over a small per-library
:class:`Backend` (MPICH's selection JSON: :mod:`hnowmodel.libraries.mpich.export`; Open MPI's rules file:
:mod:`hnowmodel.libraries.openmpi.export`; Intel MPI's strings: :mod:`hnowmodel.libraries.intelmpi.export`), and
what each library's backend gives the export (:class:`LibraryFormat`: its ``FORMAT``).

For each operation and size, every algorithm the library can be told to run that hnow models
(:func:`hnowmodel.ops.native_choices`) is predicted under the profile's default variant (root 0), and the fastest
is chosen against what the library runs there by default (:meth:`Backend.default`); ties go to the default.
Adjacent sizes with the same leaf (what the file says) make one range, up to its largest size. The backend then
renders the file and reads it back (:meth:`Backend.render`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .. import ops as _ops
from ..errors import InputError
from ..layout import Layout, parse_layout
from ..libraries.native import NativeAlgorithm
from ..params import Profile
from ..sizes import format_size
from ..tables import table_text
from ..trees import make_tree

__all__ = [
    "NativeChoice",
    "Default",
    "Pick",
    "OpChoice",
    "Backend",
    "choose",
    "fastest",
    "export_layout",
    "table_rows",
    "range_entries",
    "usage_text",
    "LibraryFormat",
]


@dataclass(frozen=True)
class NativeChoice:
    """One operation at one message size: the algorithm the library runs by default there (``default``, with its
    predicted µs, None when hnow does not model it) and the one chosen (``chosen``: an algorithm name of
    :func:`hnowmodel.ops.native_choices`, or the default kept), predicted µs of every candidate, and the size
    range the choice is written for (``from_bytes``..``upto_bytes``)."""

    op: str
    size_bytes: int
    default: str
    default_us: float | None
    chosen: str
    chosen_us: float | None
    from_bytes: int
    upto_bytes: int
    candidates_us: Mapping[str, float]

    @property
    def gain_pct(self) -> float | None:
        """How much less time the choice is predicted to take than the default, in % of the default."""
        if self.default_us is None or self.chosen_us is None or not self.default_us:
            return None
        return 100.0 * (self.default_us - self.chosen_us) / self.default_us

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "size_bytes": self.size_bytes,
            "from_bytes": self.from_bytes,
            "upto_bytes": self.upto_bytes,
            "default": self.default,
            "default_us": self.default_us,
            "chosen": self.chosen,
            "chosen_us": self.chosen_us,
            "gain_pct": self.gain_pct,
            "candidates_us": dict(self.candidates_us),
        }


@dataclass(frozen=True)
class Default:
    """What a library runs by default for one operation and size: the modelled algorithm (``algorithm``; None when
    hnow does not model it, then ``name`` says what it is and ``label`` how the note names it) and the ``leaf`` a
    file says where the default is kept."""

    algorithm: NativeAlgorithm | None
    leaf: Any
    name: str = ""
    label: str = ""


@dataclass(frozen=True)
class Pick:
    """The choice at one size: the algorithm chosen and the ``leaf`` the file says for it, the default, their µs
    and every candidate's."""

    size: int
    chosen: str
    leaf: Any
    default: str
    default_us: float | None
    chosen_us: float | None
    cand_us: Mapping[str, float]


@dataclass(frozen=True)
class OpChoice:
    """The choices for one operation: per size (``picks``, increasing) and per range (``ranges``:
    ``(from_bytes, upto_bytes, pick)``, the pick of the range's largest size), and the table's ``rows``."""

    op: str
    variant: str
    picks: tuple[Pick, ...]
    ranges: tuple[tuple[int, int, Pick], ...]
    rows: tuple[NativeChoice, ...]


class Backend(Protocol):
    """One MPI library's side of an export: what it can be told to run, what it runs by default, the leaf its file
    says for an algorithm, and its file (made, read back and explained). Optional: ``constrain(op, picks)``, and
    ``schedules`` (True: its file selects the message-schedule operations' algorithms too; without it
    :func:`choose` refuses them in one line)."""

    #: The library's name in :func:`hnowmodel.ops.native_choices` (``MPICH``, ``Open MPI``).
    library: str

    def candidates(self, op: str) -> Sequence[NativeAlgorithm]:
        """The algorithms a file can select for ``op``, in registry order."""

    def default(self, op: str, n: int, size: int, choices: Sequence[NativeAlgorithm]) -> Default:
        """What the library runs for ``op`` on ``n`` ranks at ``size`` bytes per rank without the file."""

    def leaf(self, nat: NativeAlgorithm) -> Any:
        """What the file says to run ``nat``."""

    def render(self, layout: tuple[str, ...], chosen: Sequence[OpChoice], notes: Sequence[str]) -> Any:
        """The library's selection (with ``to_dict`` and ``table_rows``): the file that runs ``chosen`` on exactly
        ``len(layout)`` ranks, read back as the library reads it (every size runs what was chosen, everything else
        the default)."""


def _constrained(backend: Backend, op: str, picks: list[Pick]) -> list[Pick]:
    """``picks`` as ``backend`` can run them together (its optional ``constrain(op, picks)``: a library that can
    change an operation only at every size at once keeps its default at all of them otherwise)."""
    fn = getattr(backend, "constrain", None)
    return picks if fn is None else list(fn(op, picks))


def export_layout(profile: Profile, layout: Sequence[str] | None) -> tuple[Layout, list[str] | None]:
    """``layout`` checked (default: the profile's calibration layout, with its hosts when the profile tells hosts
    apart) and, for the profile's own layout, the host of each rank its ``nodes`` record (None when they do not)."""
    hosts = None
    if layout is None:
        layout = profile.host_layout or ()
        if not layout:
            raise InputError("--layout is required (the profile records no calibration layout)")
        nodes = sorted(profile.nodes, key=lambda nd: nd.get("rank", 0))
        if nodes and all("host" in nd for nd in nodes):
            hosts = [str(nd["host"]) for nd in nodes]
    out = parse_layout(layout, profile.type_names)
    if len(out) < 2:
        raise InputError(f"--layout: an export needs at least 2 ranks, got {len(out)}")
    return out, hosts


def _op_names(ops: Sequence[str], library: str, schedules: bool = False) -> list[str]:
    names = list(dict.fromkeys(ops))
    if not names:
        raise InputError("--ops: give at least one operation")
    for op in names:
        if _ops.get(op).movement is None and not schedules:  # the backend writes the tree operations only
            raise InputError(f"export of {op}: not yet supported")
        if not _ops.native_choices(op, library):
            raise InputError(f"--ops: hnow does not model {library}'s own {op}")
    return names


def _sizes(sizes: Any) -> list[int]:
    """The sizes to choose for, sorted and once each; whole bytes >= 1 (an empty collective returns at once).
    Stricter than :func:`hnowmodel.sizes.parse_sizes` (no 0, no text): the CLI parses, this checks."""
    out = sorted(set(sizes))
    if not out:
        raise InputError("--sizes: give the message sizes to choose for (e.g. --sizes 16K,64K,256K)")
    for m in out:
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise InputError(
                f"--sizes: {m!r} is not a size an algorithm is chosen for (whole bytes >= 1; an empty collective "
                "returns at once)"
            )
    return [int(m) for m in out]


def _distinct(
    op: str, choices: Sequence[NativeAlgorithm], layout: Sequence[str]
) -> tuple[list[NativeAlgorithm], dict[str, str]]:
    """The algorithms of ``choices`` that run differently on ``layout``'s ranks (kary:K for every K >= n-1 is one
    tree, a node-aware tree on one rank per host is its flat one, ...: predicted and offered once, the first in
    registry order), and each algorithm's representative."""
    n = len(layout)
    cands: list[NativeAlgorithm] = []
    keys: list[Any] = []
    alias: dict[str, str] = {}
    runs_schedule = _ops.get(op).schedule_algorithm
    for nat in choices:
        by_name = nat.varies or runs_schedule(nat.model_tree)  # no one tree: its rules (or schedule) tell it apart
        key = (
            nat.model_tree if by_name else make_tree(nat.model_tree, n, layout=layout),
            nat.schedule,
            nat.by_size,
            nat.per_layout,
        )  # the tree(s) or the message schedule's name, and what a predictor is told
        same = next((c for c, k in zip(cands, keys, strict=True) if k == key), None)
        alias[nat.algorithm] = nat.algorithm if same is None else same.algorithm
        if same is None:
            keys.append(key)
            cands.append(nat)
    return cands, alias


def _predicted(op: str, library: str, profile: Profile, layout: Any, sizes: list[int], variant: str, nat: Any):
    """µs of ``nat`` at each of ``sizes``, NaN where its message schedule does not run (MPICH's Rabenseifner
    allreduce below as many elements as the largest power of two <= n, a recursive doubling allgather on n not a
    power of two: the model refuses those sizes). A tree algorithm runs everywhere."""
    args = (op, library, profile, layout)
    try:
        return _ops.native_predict(*args, sizes, variant=variant, algorithm=nat)
    except InputError:
        if _ops.get(op).movement is not None and _ops.get(op).schedule_algorithm(nat.model_tree) is None:
            raise  # a tree algorithm runs at every size: the error is the request's
    out = np.full(len(sizes), np.nan)
    for i, m in enumerate(sizes):
        try:
            out[i] = _ops.native_predict(*args, [m], variant=variant, algorithm=nat)[0]
        except InputError:
            pass  # it does not run at m: no candidate there
    return out


def _skipped(op: str, t: float) -> bool:
    """A candidate left out at one size: its message schedule does not run there, or it is an algorithm whose steps
    depend on the hosts and size that hnow does not model there (NaN from :func:`_predicted`)."""
    return bool(np.isnan(t))


#: A candidate replaces the library's default only where it is predicted faster by more than this fraction: below
#: it the model cannot tell them apart (its error on the virtual clusters is a few %, docs/accuracy.md), and on
#: Open MPI 4 x 3 a pairwise alltoall predicted 0.1 % faster than the default measured 20 % slower (docs/tune.md).
KEEP_DEFAULT_WITHIN = 0.01


def fastest(cand_us: Mapping[str, float], default: str) -> str:
    """The fastest candidate; ``default`` where it is within :data:`KEEP_DEFAULT_WITHIN` of it; other ties (within a
    relative 1e-9: the same time reached by other sums) to the registry's order.

    >>> fastest({"a": 2.0, "b": 1.0 + 1e-12, "c": 1.0}, "b"), fastest({"a": 1.005, "b": 1.0}, "a")
    ('b', 'a')
    """
    order = list(cand_us)
    best = min(cand_us.values())
    if default in cand_us and cand_us[default] <= best * (1 + KEEP_DEFAULT_WITHIN):
        return default
    ties = [a for a in order if cand_us[a] <= best * (1 + 1e-9)]
    return min(ties, key=lambda a: order.index(a))


def _ranges(op: str, picked: Sequence[Pick]) -> tuple[list[NativeChoice], list[tuple[int, int, Pick]]]:
    """Adjacent sizes with the same leaf make one range, from just above the previous range (0 for the first) up
    to its largest size: the rows, and ``(from_bytes, upto_bytes, pick)`` per range."""
    groups: list[list[Pick]] = []
    for p in picked:
        if groups and json.dumps(groups[-1][0].leaf, sort_keys=True) == json.dumps(p.leaf, sort_keys=True):
            groups[-1].append(p)
        else:
            groups.append([p])
    rows, ranges = [], []
    lo = 0
    for g in groups:
        hi = g[-1].size
        rows += [NativeChoice(op, p.size, p.default, p.default_us, p.chosen, p.chosen_us, lo, hi, p.cand_us) for p in g]
        ranges.append((lo, hi, g[-1]))
        lo = hi + 1
    return rows, ranges


def _pick(d: Default, backend: Backend, m: int, cands: Any, alias: Mapping[str, str], cand_us: Any) -> Pick:
    """The choice at ``m`` bytes against the default ``d``: the fastest candidate, or the default (its leaf kept)
    where it is as fast or is not modelled (or not predicted there)."""
    if d.algorithm is None or alias.get(d.algorithm.algorithm) not in cand_us:
        name = d.name or d.algorithm.algorithm  # type: ignore[union-attr]
        return Pick(m, name, d.leaf, name, None, None, cand_us)
    dflt = d.algorithm.algorithm
    best = fastest(cand_us, alias[dflt])
    if best == alias[dflt]:
        return Pick(m, dflt, d.leaf, dflt, cand_us[alias[dflt]], cand_us[alias[dflt]], cand_us)
    nat = next(c for c in cands if c.algorithm == best)
    return Pick(m, best, backend.leaf(nat), dflt, cand_us[alias[dflt]], cand_us[best], cand_us)


def choose(
    backend: Backend, profile: Profile, layout: Sequence[str], ops: Sequence[str], sizes: Sequence[int]
) -> tuple[list[OpChoice], list[str]]:
    """For each of ``ops`` and ``sizes`` (bytes per rank) on ``layout`` (checked), the fastest algorithm
    ``backend``'s library can be told to run (predicted under :func:`hnowmodel.ops.default_variant`, root 0)
    against its default: per op, the picks and their ranges; and the notes (defaults hnow does not model)."""
    n = len(layout)
    op_names = _op_names(ops, backend.library, getattr(backend, "schedules", False))
    size_list = _sizes(sizes)
    out: list[OpChoice] = []
    notes: list[str] = []
    for op in op_names:
        variant = _ops.default_variant(op, profile)
        choices = backend.candidates(op)
        cands, alias = _distinct(op, choices, layout)
        if _ops.get(op).reduction:
            _ops.get(op).reduce_costs(profile, size_list)  # refused in one line when the profile has no γ
        times = {
            nat.algorithm: _predicted(op, backend.library, profile, layout, size_list, variant, nat) for nat in cands
        }
        picks = []
        for i, m in enumerate(size_list):
            d = backend.default(op, n, m, choices)
            runs = {name: float(t[i]) for name, t in times.items() if not _skipped(op, t[i])}
            if d.algorithm is None or alias.get(d.algorithm.algorithm) not in runs:  # not modelled (there)
                notes.append(f"{op} at {format_size(m)}: {backend.library}'s default {d.label} is not modelled; kept")
            picks.append(_pick(d, backend, m, cands, alias, runs))
        picks = _constrained(backend, op, picks)
        rows, ranges = _ranges(op, picks)
        out.append(OpChoice(op, variant, tuple(picks), tuple(ranges), tuple(rows)))
    return out, notes


def table_rows(rows: Sequence[NativeChoice], changed: set[str]) -> list[dict[str, Any]]:
    """``rows`` as a readable table; ops not in ``changed`` say ``(unchanged)`` for their range."""
    return [
        {
            "op": r.op,
            "range": f"{format_size(r.from_bytes)}-{format_size(r.upto_bytes)}" if r.op in changed else "(unchanged)",
            "size": format_size(r.size_bytes),
            "default": r.default,
            "default_us": r.default_us,
            "chosen": r.chosen,
            "chosen_us": r.chosen_us,
            "gain_%": r.gain_pct,
        }
        for r in rows
    ]


def range_entries(entries: Mapping[str, Sequence[tuple[int, int, str]]]) -> dict[str, list[dict[str, Any]]]:
    """A selection's ``(from_bytes, upto_bytes, algorithm)`` ranges per operation as JSON rows.

    >>> range_entries({"bcast": [(1, 4096, "binomial")]})
    {'bcast': [{'from_bytes': 1, 'upto_bytes': 4096, 'algorithm': 'binomial'}]}
    """
    return {
        op: [{"from_bytes": a, "upto_bytes": b, "algorithm": alg} for a, b, alg in ent] for op, ent in entries.items()
    }


def usage_text(
    library: str, version: str, sel: Any, path: str, words: tuple[str, str], run_line: str, env_file: str
) -> str:
    """The usage text of ``library``'s algorithm selection ``sel`` written to ``path``: the table of choices, the
    notes, what the file changes against the library's defaults (``words``: the defaults' name, and what to say
    when nothing changed), and the launch line."""
    base, unchanged = words
    variants = ", ".join(f"{op} {v}" for op, v in sel.variants.items())
    lines = [
        f"{library} {version} algorithms for {len(sel.layout)} ranks (root 0), predicted under: {variants}",
        table_text(sel.table_rows()),
    ]
    lines += [f"note: {x}" for x in sel.notes]
    changed = [op for op, e in sel.entries.items() if e]
    name = os.path.basename(path)
    lines.append(
        f"{name}: {base} with {', '.join(changed)} changed for exactly {len(sel.layout)} ranks"
        if changed
        else f"{name}: {unchanged}"
    )
    lines.append(f"{library}: {run_line}   (or source {env_file})")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class LibraryFormat:
    """One MPI library's algorithm selection format, as its export backend gives it (``FORMAT`` in
    ``hnowmodel/libraries/<lib>/export.py``; :data:`hnowmodel.export.LIBRARY_FORMATS` lists them in the order of
    :data:`hnowmodel.libraries.LIBRARIES`): its ``format`` (a key of :data:`hnowmodel.export.FORMATS`, written to
    ``file_name``), the key of its settings file (``env``, written to ``env_file_name``), the rank order format its
    launcher reads (``order_format``), the key of its selection in :meth:`hnowmodel.export.Export.to_dict`
    (``key``), how to choose (``choose(profile, layout, ops, sizes, hosts, request)`` -> a selection with
    ``to_dict()``; ``request``: :class:`hnowmodel.export.AlgorithmRequest`) and its files (``files(selection, path,
    order_path)`` -> the file, the settings file, the usage text, the texts of
    :attr:`extra_files` it needs); ``library``: whose algorithms it selects (the
    key of :attr:`hnowmodel.ops.Operation.native`), the one a rank order exported beside it is chosen for;
    ``schedules``: whether it writes the operations whose algorithms are message schedules too (allreduce, ...;
    :func:`hnowmodel.export.export` refuses them for a format that does not, in one line)."""

    format: str
    env: str
    order_format: str
    key: str
    choose: Callable[[Profile, Sequence[str] | None, Sequence[str], Sequence[int], Any, Any], Any]
    files: Callable[[Any, str, str | None], tuple[str, str, str, dict[str, str]]]
    library: str
    file_name: str
    env_file_name: str
    schedules: bool = False
    #: Files it writes besides, when a selection needs them: key -> file name (Open MPI's coll/han rules); ``files``
    #: returns their texts as a fourth item (key -> text, the ones this selection needs).
    extra_files: Mapping[str, str] = field(default_factory=dict)
