"""Open MPI's export backend (format ``ompi-rules``): a coll/tuned rules file (Open MPI 5.0.x's text format, checked
as Open MPI reads it, which otherwise drops a bad file without a word: :mod:`.rules`) that changes
communicators of exactly that many ranks and hands every other case - sizes above the largest one asked for, other
communicator sizes, sizes where the default is kept - back to the fixed rules (algorithm 0); and the settings that
make Open MPI use it (``ompi-env.txt``).

The candidates are what coll/tuned can be told to run by a rules file: bcast basic_linear, pipeline, chain with
1..8 chains, binary_tree, binomial, knomial with one radix for the job (an MCA parameter, not the file: the default 4,
or the radix 2..8 whose choices gain most where no k-nomial bcast of the fixed rules runs with it on these ranks,
:func:`choose_ompi`); scatter and gather basic_linear and binomial;
for reduce, allreduce, allgather, reduce_scatter (MPI_Reduce_scatter_block) and alltoall every tuned algorithm hnow
models (:mod:`.tuned`: each is written as ``(number, 0, 0)``, as the fixed rules run it); no segmentation. Each
operation's rules are looked up with its own message size (:func:`.rules.message_size`: the vector for reduce and
allreduce, a block times the ranks for allgather, alltoall and reduce_scatter_block).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ... import ops as _ops
from ...errors import InputError
from ...export.choose import (
    Default,
    LibraryFormat,
    NativeChoice,
    OpChoice,
    choose,
    export_layout,
    range_entries,
    table_rows,
    usage_text,
)
from ...layout import Layout
from ...params import Profile
from ...sizes import format_size
from .. import run_by
from ..native import NativeAlgorithm
from . import fixed as ompi_fixed
from . import hanrules
from . import rules as ompi_rules
from .algorithms import HAN_OPS, OMPI_KNOMIAL_RADICES, OMPI_KNOMIAL_RADIX, han_runs
from .tuned import MCA_NAMES

__all__ = [
    "OMPI_RULES_FORMAT",
    "OmpiSelection",
    "OmpiBackend",
    "choose_ompi",
    "han_runs",
    "han_op_to_tuned",
    "ompi_env_text",
    "ompi_files",
    "FORMAT",
]

#: The leaves that keep coll/han for an operation at a size (where han is Open MPI's default): its default
#: algorithm, its simple allreduce (:mod:`.hanrules`; a tuned leaf hands the size to tuned there).
HAN_LEAF, HAN_SIMPLE_LEAF = hanrules.HAN, hanrules.HAN_SIMPLE
_HAN_KEEPS = (HAN_LEAF, HAN_SIMPLE_LEAF)
#: The file of coll/han's rules (per size: han or tuned), written beside the rules file where one is needed.
HAN_RULES_FILE = "ompi-han-rules.conf"
#: coll/han's number for coll/tuned among the components a level can run (``COMPONENT_T`` in coll_han_dynamic.h).
_HAN_TUNED = 3


def han_op_to_tuned(op: str) -> dict[str, str]:
    """The setting that makes coll/han hand ``op`` on the whole communicator to coll/tuned (which then reads its
    rules file): ``coll_han_<op>_dynamic_global_communicator_module`` = tuned's number.

    >>> han_op_to_tuned("bcast")
    {'OMPI_MCA_coll_han_bcast_dynamic_global_communicator_module': '3'}
    """
    return {f"OMPI_MCA_coll_han_{op}_dynamic_global_communicator_module": str(_HAN_TUNED)}


#: The rules-file format :func:`choose_ompi` writes: version 1 of Open MPI 5.0.x's text format (read by every 5.0.x;
#: the version line and max_requests, which only alltoall reads, arrived in 5.0.7).
OMPI_RULES_FORMAT = "Open MPI 5.0.x coll/tuned rules, version 1"
#: MCA parameters (as environment variables) that beat the rules file for the tree operations (unset by every
#: export, as before); :func:`_overrides` adds those of the other operations exported.
_OVERRIDES = tuple(f"OMPI_MCA_coll_tuned_{op}_algorithm" for op in ("bcast", "scatter", "gather"))
_RADIX = "OMPI_MCA_coll_tuned_bcast_algorithm_knomial_radix"
_SCATTER_NOTE = (
    "scatter: Open MPI looks the file up with the send count and type on every rank, which MPI reads at the root "
    "only: every rank must pass the root's (a rank passing 0, as mpi4py's comm.Scatter does on the other ranks, "
    "takes the rule for 0 B, runs another algorithm than the root, and the scatter crashes or hangs)"
)


@dataclass(frozen=True)
class OmpiSelection:
    """Open MPI's algorithms chosen per operation and size (``rows``) for ``layout`` (one type per rank, root 0),
    predicted under ``variants[op]``, and the coll/tuned rules file that runs them: ``rules`` (what it says),
    ``text`` (the file, checked as Open MPI reads it and read back). ``entries[op]`` lists what the file changes:
    ``(from_bytes, upto_bytes, algorithm)`` per range, bytes per rank (empty: the op is not in the file and Open
    MPI's fixed rules run it)."""

    layout: tuple[str, ...]
    variants: Mapping[str, str]
    rows: tuple[NativeChoice, ...]
    entries: Mapping[str, tuple[tuple[int, int, str], ...]]
    rules: ompi_rules.Rules
    text: str
    notes: tuple[str, ...] = ()
    #: Whether coll/han is Open MPI's default on these ranks (the same number on every host, :func:`han_runs`): then
    #: han stays on, and only the operations in ``han_left`` go to coll/tuned (and its file).
    han_default: bool = False
    han_left: tuple[str, ...] = ()
    #: The radix of every k-nomial bcast the job runs (``coll_tuned_bcast_algorithm_knomial_radix``).
    knomial_radix: int = OMPI_KNOMIAL_RADIX
    #: coll/han's rules file (:mod:`.hanrules`): per operation han runs by default and changed at some size, which
    #: component runs each size (han, han's simple allreduce, tuned with the file); "" where none changes.
    han_text: str = ""
    han_entries: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)

    @property
    def uses_knomial(self) -> bool:
        """Whether the file runs bcast's k-nomial tree (whose radix comes from an MCA parameter, not the file)."""
        bcast = self.rules.collectives.get(ompi_rules.COLLECTIVE_IDS["bcast"], ())
        return any(r.algorithm == 7 for cr in bcast for r in cr.rules)

    def to_dict(self) -> dict[str, Any]:
        return {
            "library": "Open MPI",
            "rules_format": OMPI_RULES_FORMAT,
            "comm_size": len(self.layout),
            "layout": list(self.layout),
            "variants": dict(self.variants),
            "rows": [r.to_dict() for r in self.rows],
            "entries": range_entries(self.entries),
            "han_default": self.han_default,
            "han_left": list(self.han_left),
            "han_rules": {op: [list(r) for r in rules] for op, rules in self.han_entries.items()},
            "knomial_radix": self.knomial_radix,
            "notes": list(self.notes),
        }

    def table_rows(self) -> list[dict[str, Any]]:
        """The rows as a readable table: per op and size range, default and chosen algorithm, µs, gain %."""
        return table_rows(self.rows, {op for op, e in self.entries.items() if e})


def _overrides(sel: OmpiSelection) -> tuple[str, ...]:
    """The MCA parameters to unset for ``sel``: the tree operations', then each other exported operation's forced
    algorithm (``coll_tuned_<name>_algorithm``, e.g. ``reduce_scatter_block``)."""
    more = (f"OMPI_MCA_coll_tuned_{MCA_NAMES[op]}_algorithm" for op in sel.variants if op in MCA_NAMES)
    return tuple(dict.fromkeys((*_OVERRIDES, *more)))


def _layout_summary(layout: Sequence[str]) -> str:
    counts = {t: layout.count(t) for t in dict.fromkeys(layout)}
    kinds = ", ".join(f"{c} {t}" for t, c in counts.items())
    return f"{kinds} ({' '.join(layout)})" if len(layout) <= 16 else kinds


def _header(n: int, layout: Sequence[str], entries: Mapping[str, Any]) -> list[str]:
    return [
        f"Open MPI coll/tuned rules written by hnow export ({OMPI_RULES_FORMAT}).",
        f"Chosen for communicators of exactly {n} ranks, root 0: {_layout_summary(layout)}.",
        "Read with OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_dynamic_rules_filename=<this file>",
        "(ompi-env.txt has every setting). Algorithm 0 hands a range to Open MPI's fixed rules (its default).",
        "Message sizes: bytes for bcast, the vector for reduce and allreduce; block bytes x ranks for scatter, gather,",
        "allgather, alltoall and reduce_scatter_block (the call's count x type on every rank; ranges below: per rank).",
        *(
            f"{op} {format_size(lo)}-{format_size(hi)}{_per_rank(op)}: {alg}"
            for op, ent in entries.items()
            for lo, hi, alg in ent
        ),
    ]


def _per_rank(op: str) -> str:
    """What a range of ``op`` is in the header: the message or vector, or a rank's block (`` per rank``)."""
    return "" if ompi_rules.message_size(op, 2, 1) == 1 else " per rank"


def _read_back(text: str, rules: ompi_rules.Rules, n: int, chosen: Sequence[OpChoice], per_op: Mapping) -> None:
    """Read ``text`` as Open MPI does: it must say ``rules``, run what was chosen at every size (the fixed rules
    where the default is kept), and change nothing on other communicator sizes or above the largest size."""
    fixed = ompi_rules.FIXED
    back = ompi_rules.validate(text)
    if back != rules:
        raise InputError("internal: the rules file does not read back as written")
    for oc in chosen:
        for p in oc.picks:
            if p.leaf in _HAN_KEEPS:  # coll/han runs it: the file is not read for it
                continue
            op, m = oc.op, p.size
            must = ompi_rules.runs(None, op, n, m) if p.leaf == fixed else ompi_rules.canonical(op, *p.leaf)
            got = ompi_rules.runs(back, op, n, m)
            if got != must:
                raise InputError(f"internal: the rules file runs {got} for {op} at {m} B, not {must}")
            for other in (n - 1, n + 1):  # other communicator sizes keep the fixed rules
                if other >= 2 and ompi_rules.runs(back, op, other, m) != ompi_rules.runs(None, op, other, m):
                    raise InputError(f"internal: the rules file changes {op} on {other} ranks")
    for op, ent in per_op.items():  # above the largest size: the fixed rules again
        above = ent[-1][0]
        if ompi_rules.runs(back, op, n, above) != ompi_rules.runs(None, op, n, above):
            raise InputError(f"internal: the rules file changes {op} above {above - 1} B")


def _han_ranges(oc: OpChoice) -> tuple[tuple[int, str], ...]:
    """``oc``'s sizes as coll/han's rules (``(from_bytes, leaf)``, equal neighbours joined): han, han's simple
    allreduce, or tuned (with its file) where a tuned algorithm is chosen; han again above the largest size."""
    out: list[tuple[int, str]] = []
    for lo, _, p in oc.ranges:
        leaf = p.leaf if p.leaf in _HAN_KEEPS else hanrules.TUNED
        if not out or out[-1][1] != leaf:
            out.append((0 if not out else lo, leaf))
    if out[-1][1] != HAN_LEAF:
        out.append((oc.ranges[-1][1] + 1, HAN_LEAF))
    return tuple(out)


def _han_header(n: int, layout: Sequence[str]) -> list[str]:
    return [
        "Open MPI coll/han rules written by hnow export (coll_han_dynamic_file.c's format, Open MPI 5.0.x).",
        f"Chosen for communicators of exactly {n} ranks: {_layout_summary(layout)}; every other size runs han's",
        "default. Read with OMPI_MCA_coll_han_use_dynamic_file_rules=1 OMPI_MCA_coll_han_dynamic_rules_filename=<this",
        "file>; 'tuned' hands a size to coll/tuned, which reads ompi-rules.conf. Message sizes: bytes per rank.",
    ]


def _read_back_han(text: str, n: int, chosen: Sequence[OpChoice]) -> None:
    """Read coll/han's rules ``text`` as Open MPI does: every size runs what was chosen (han, han's simple
    allreduce, or tuned), other communicator sizes and sizes above the largest han's default."""
    if not chosen:
        return
    back = hanrules.read_han_rules(text)
    for oc in chosen:
        for p in oc.picks:
            must = p.leaf if p.leaf in _HAN_KEEPS else hanrules.TUNED
            if hanrules.runs(back, oc.op, n, p.size) != must:
                raise InputError(f"internal: the han rules run {oc.op} at {p.size} B otherwise than chosen")
            if any(hanrules.runs(back, oc.op, other, p.size) != HAN_LEAF for other in (n - 1, n + 1)):
                raise InputError(f"internal: the han rules change {oc.op} on other communicator sizes")
        if hanrules.runs(back, oc.op, n, oc.ranges[-1][1] + 1) != HAN_LEAF:
            raise InputError(f"internal: the han rules change {oc.op} above the largest size")


@dataclass(frozen=True)
class OmpiBackend:
    """Open MPI for :func:`hnowmodel.export.choose.choose`: what its fixed rules run
    (:func:`.rules.default_algorithm`); a leaf is a rule ``(algorithm, faninout, segsize)``, and
    :data:`.rules.FIXED` where the default is kept. ``han_default``: coll/han, not tuned, runs by
    default on ``layout``'s ranks (:func:`han_runs`) with its own settings (``native:han:default``, modelled where
    hnow knows its levels' algorithms) for the operations han implements (:data:`.algorithms.HAN_OPS`): a candidate
    and the default, leaf :data:`HAN_LEAF` (allreduce: han's simple algorithm too, :data:`HAN_SIMPLE_LEAF`); a size
    where a tuned algorithm is chosen goes to tuned and its file by coll/han's own rules file (:mod:`.hanrules`).
    The others (alltoall, reduce_scatter_block) tuned runs on the whole communicator, with the file, wherever han is
    on."""

    library: str = "Open MPI"
    han_default: bool = False
    layout: Any = None
    #: its file selects the message-schedule operations' algorithms too (allreduce, ...)
    schedules: bool = True
    #: the radix of the k-nomial bcast it offers (its rules-file leaf is the one of every radix: the job's MCA
    #: parameter says which runs)
    radix: int = OMPI_KNOMIAL_RADIX

    def _han_runs(self, op: str) -> bool:
        """Whether coll/han, not tuned, runs ``op`` by default here."""
        return self.han_default and op in HAN_OPS

    def _han(self, op: str) -> NativeAlgorithm | None:
        return _ops.native_for("native:han:default", op, "Open MPI")

    def candidates(self, op: str) -> Sequence[NativeAlgorithm]:
        tuned = [c for c in _ops.native_choices(op, "Open MPI") if c.leaf]
        if op == "bcast" and self.radix != OMPI_KNOMIAL_RADIX:
            mine = _ops.native_for(f"native:knomial:{self.radix}", op, "Open MPI")
            tuned = [replace(mine, leaf=c.leaf) if c.algorithm.startswith("knomial:") else c for c in tuned]
        if not self._han_runs(op):
            return tuned
        hans = [self._han(op), _ops.native_for("native:han:simple", op, "Open MPI")]
        return tuned + [h for h in hans if h is not None]

    def default(self, op: str, n: int, size: int, choices: Sequence[NativeAlgorithm]) -> Default:
        if self._han_runs(op):
            han = self._han(op)
            if han is not None and han.on(self.layout, size) is not None:
                return Default(han, HAN_LEAF, han.algorithm, "coll/han (its own settings)")
            return Default(None, HAN_LEAF, "han", "coll/han (its own settings; its levels' algorithms not modelled)")
        number = ompi_rules.default_algorithm(op, n, size)
        # what runs without the export: the registry's (its k-nomial of the default radix), not this radix's
        by_rule = {tuple(c.leaf): c for c in _ops.native_choices(op, "Open MPI") if c.leaf is not None}
        name = ompi_rules.algorithm_name(op, number)
        nat = by_rule.get(ompi_rules.canonical(op, number))
        if nat is not None and nat.varies and nat.on(("?",) * n if self.layout is None else self.layout, size) is None:
            nat = None  # it runs another algorithm at this size (tuned's ring allreduce on fewer elements than ranks)
        return Default(nat, ompi_rules.FIXED, name, f"{name} ({number})")

    def leaf(self, nat: NativeAlgorithm) -> Any:
        named = {"han:default": HAN_LEAF, "han:simple": HAN_SIMPLE_LEAF}
        return named[nat.algorithm] if nat.algorithm in named else tuple(nat.leaf)

    def render(self, layout: tuple[str, ...], chosen: Sequence[OpChoice], notes: Sequence[str]) -> OmpiSelection:
        """The rules file that runs the choices on exactly ``len(layout)`` ranks, read back as Open MPI reads it."""
        n, fixed = len(layout), ompi_rules.FIXED
        entries: dict[str, tuple[tuple[int, int, str], ...]] = {}
        per_op: dict[str, list[tuple[int, tuple[int, int, int]]]] = {}
        for oc in chosen:
            entries[oc.op] = tuple((lo, hi, p.chosen) for lo, hi, p in oc.ranges if p.leaf not in (fixed, *_HAN_KEEPS))
            if entries[oc.op]:
                # a size coll/han keeps is not looked up in this file: the fixed rules there
                per_op[oc.op] = [(lo, fixed if p.leaf in _HAN_KEEPS else tuple(p.leaf)) for lo, _, p in oc.ranges]
                per_op[oc.op].append((oc.ranges[-1][1] + 1, fixed))
        notes = [*notes, _SCATTER_NOTE] if entries.get("scatter") else list(notes)
        rules = ompi_rules.for_comm_size(n, per_op)
        text = ompi_rules.format_rules(rules, _header(n, layout, entries))
        _read_back(text, rules, n, chosen, per_op)
        variants = {oc.op: oc.variant for oc in chosen}
        rows = tuple(r for oc in chosen for r in oc.rows)
        left = tuple(
            oc.op for oc in chosen if self._han_runs(oc.op) and all(p.leaf not in _HAN_KEEPS for p in oc.picks)
        )
        sel = OmpiSelection(layout, variants, rows, entries, rules, text, tuple(notes), self.han_default, left)
        han = {oc.op: _han_ranges(oc) for oc in chosen if self._han_runs(oc.op)}
        han = {op: r for op, r in han.items() if r != ((0, HAN_LEAF),)}
        han_text = hanrules.han_rules_text(n, han, _han_header(n, layout)) if han else ""
        _read_back_han(han_text, n, [oc for oc in chosen if oc.op in han])
        return replace(sel, knomial_radix=self.radix, han_text=han_text, han_entries=han)


def choose_ompi(
    profile: Profile,
    layout: Sequence[str] | None = None,
    *,
    ops: Sequence[str] = ("bcast", "scatter", "gather"),
    sizes: Sequence[int] = (65536,),
) -> OmpiSelection:
    """For each of ``ops`` and ``sizes`` (bytes per rank) on ``layout`` (default: the profile's calibration
    layout), the fastest algorithm Open MPI's coll/tuned can be told to run by a rules file
    (:func:`hnowmodel.ops.native_choices` with a ``rule``, predicted under :func:`hnowmodel.ops.default_variant`,
    root 0) against the one Open MPI's fixed rules run there (:func:`.rules.default_algorithm`), and
    the rules file that runs the choices for a communicator of exactly that many ranks (:mod:`.rules`).
    Where the default is chosen, or is an algorithm hnow does not model (kept, with a note), the file says
    "fixed rules" (algorithm 0), as it does above the largest size and for every other communicator size. The
    text is read back as Open MPI reads it: every size must run what was chosen, and everything else the
    default. A profile calibrated under another library is taken with Open MPI's protocol
    (:func:`hnowmodel.libraries.run_by`)."""
    profile = run_by(profile, "Open MPI")
    layout, _ = export_layout(profile, layout)
    backend = OmpiBackend(han_default=han_runs(layout), layout=layout)
    chosen, notes = choose(backend, profile, layout, ops, sizes)
    if "bcast" in [oc.op for oc in chosen] and not backend._han_runs("bcast"):
        backend, chosen, notes = _radix(backend, profile, layout, chosen, notes, sizes)
    return backend.render(layout, chosen, _han_notes(layout) + notes)


def _mean_gain(oc: OpChoice) -> float:
    """The mean predicted gain of ``oc``'s picks over the default (a fraction; 0 where a time is not predicted)."""
    gains = [1.0 - p.chosen_us / p.default_us if p.default_us and p.chosen_us is not None else 0.0 for p in oc.picks]
    return sum(gains) / len(gains)


def _radix(backend: OmpiBackend, profile: Profile, layout: Any, chosen: list[OpChoice], notes: list[str], sizes: Any):
    """The bcast choices with the k-nomial radix (an MCA parameter for the whole job: no rules file carries one)
    whose picks gain most over the default, in the mean over the sizes (ties: the default radix, which changes
    nothing else). A radix other than the default is taken only where it runs a k-nomial bcast of these ranks only
    where one was chosen: where the file hands a size to the fixed rules (a size kept, above the largest one) and
    they run a k-nomial bcast, it would run with that radix, not with the default's that was predicted (on 12 ranks
    Open MPI's fixed rules run one from 64 B to 4 KiB). The backend, the choices and the notes kept."""
    at = next(i for i, oc in enumerate(chosen) if oc.op == "bcast")
    best = (_mean_gain(chosen[at]), backend, chosen, notes)
    picks = chosen[at].picks
    size_list = [p.size for p in picks]
    variant = chosen[at].variant
    for radix in OMPI_KNOMIAL_RADICES:
        nat = _ops.native_for(f"native:knomial:{radix}", "bcast", "Open MPI")
        if radix == OMPI_KNOMIAL_RADIX or nat is None:
            continue
        us = _ops.native_predict("bcast", "Open MPI", profile, layout, size_list, variant=variant, algorithm=nat)
        if not any(p.chosen_us is not None and t < p.chosen_us for p, t in zip(picks, us, strict=True)):
            continue  # faster nowhere: nothing to choose it for (and no choice made again)
        mine = replace(backend, radix=radix)
        got, said = choose(mine, profile, layout, ["bcast"], sizes)
        if not any(p.chosen == f"knomial:{radix}" for p in got[0].picks) or _mean_gain(got[0]) <= best[0] + 1e-9:
            continue
        if _fixed_knomial(mine, layout, got[0]):
            continue
        trial = [*chosen[:at], got[0], *chosen[at + 1 :]]
        best = (_mean_gain(got[0]), mine, trial, [x for x in notes if not x.startswith("bcast ")] + said)
    return best[1:]


def _fixed_knomial(backend: OmpiBackend, layout: Any, oc: OpChoice) -> bool:
    """Whether the rules file of ``oc`` (bcast) hands a size to the fixed rules where they run a k-nomial bcast on
    ``len(layout)`` ranks (checked at every size where the file or the fixed rules change)."""
    n = len(layout)
    sel = backend.render(tuple(layout), [oc], [])
    found = sel.rules.collectives.get(ompi_rules.COLLECTIVE_IDS["bcast"], ())
    probes = {*ompi_fixed.boundaries("bcast", n), *(r.msg_bytes for cr in found if cr.comm_size == n for r in cr.rules)}
    for m in sorted(probes):
        rule = ompi_rules.select(sel.rules, "bcast", n, m)
        if (rule is None or rule.algorithm == 0) and ompi_fixed.default_algorithm("bcast", n, m) == 7:
            return True
    return False


def _han_notes(layout: Layout) -> list[str]:
    """What coll/han does on ``layout`` (:func:`han_runs`), as notes.

    >>> _han_notes(Layout(["f", "f", "s"], [0, 0, 1]))[0][:40]
    'coll/han does not run on these ranks (th'
    """
    if layout.one_per_host or layout.n_hosts < 2:
        return []
    if not han_runs(layout):
        return [
            "coll/han does not run on these ranks (their hosts hold different numbers of ranks: it hands every call "
            "to coll/tuned), so coll/tuned's fixed rules are Open MPI's default here"
        ]
    return [
        "Open MPI's default on these ranks (the same number on every host) is coll/han with its own settings "
        "(native:han:default: tuned's fixed rules on the hosts and on each host, 64 KiB bcast segments); han stays "
        "on, and a size of an operation goes to coll/tuned and its file where a tuned algorithm is predicted faster, "
        f"by coll/han's own rules file ({HAN_RULES_FILE})"
    ]


def _settings(sel: OmpiSelection, rules_path: str) -> dict[str, str]:
    env = {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_dynamic_rules_filename": rules_path,
    }
    if not sel.han_default:  # han where it is the default stays on: only the sizes that leave it use the file
        env["OMPI_MCA_coll"] = "^han"
    if sel.han_text:
        env["OMPI_MCA_coll_han_use_dynamic_file_rules"] = "1"
        env["OMPI_MCA_coll_han_dynamic_rules_filename"] = han_rules_path(rules_path)
    if sel.uses_knomial:
        env[_RADIX] = str(sel.knomial_radix)
    return env


def _run_line(sel: OmpiSelection, rules_path: str, rankfile: str | None) -> str:
    unset = " ".join(f"-u {v}" for v in _overrides(sel))
    sets = " ".join(f"{k}={v}" for k, v in _settings(sel, rules_path).items())
    where = f" --map-by rankfile:file={rankfile}" if rankfile else ""
    return f"env {unset} {sets} mpirun -n {len(sel.layout)}{where} ./app"


def _tuned_anyway(sel: OmpiSelection) -> list[str]:
    """The comment line on the exported operations coll/han does not implement (tuned runs them, with the file)."""
    ops = [op for op, e in sel.entries.items() if e and op not in HAN_OPS]
    said = f"# coll/han does not implement {', '.join(ops)}: tuned runs it, with the file, in any case."
    return [said] if ops else []


def ompi_env_text(sel: OmpiSelection, rules_path: str, rankfile: str | None = None) -> str:
    """The settings that make Open MPI run ``sel``'s rules file ``rules_path``: a file ``sh`` can source, with the
    one-line form (``mpirun --map-by rankfile:file=…`` when the ranks are to run in an exported order) and how to
    check what ran."""
    lines = [
        f"# Open MPI coll/tuned rules by hnow export ({len(sel.layout)} ranks; {OMPI_RULES_FORMAT}).",
        "# Every rank reads the file when coll/tuned opens (MPI_Init): put it at this path on every host. mpirun",
        "# passes OMPI_* variables on to every host by itself. Source this file, or run",
        f"#   {_run_line(sel, rules_path, rankfile)}",
        "# OMPI_MCA_coll_tuned_<op>_algorithm (other than 0) beats the file, hence the unset; coll/han, which sits",
        "# above tuned, would run multi-node collectives as steps on sub-communicators of other sizes, where the",
        *(
            [
                "# file's rules do not apply. Here coll/han is Open MPI's default (the same number of ranks on every",
                "# host): it stays on, and its own rules file hands to tuned (and so to the file) only "
                + (", ".join(f"{op} at {_tuned_sizes(sel, op)}" for op in sel.han_entries) or "nothing")
                + ".",
                *_tuned_anyway(sel),
            ]
            if sel.han_default
            else [
                "# file's rules do not apply: hence coll ^han (for the whole job: every collective then comes from",
                "# tuned).",
            ]
        ),
    ]
    if sel.uses_knomial:
        lines.append(f"# The file's knomial bcast was chosen with radix {sel.knomial_radix}, an MCA parameter.")
        if sel.knomial_radix != OMPI_KNOMIAL_RADIX:
            lines.append(
                f"# It is the job's: a k-nomial bcast Open MPI's fixed rules run on communicators of other sizes runs "
                f"with radix {sel.knomial_radix} too (not {OMPI_KNOMIAL_RADIX})."
            )
    if any(op == "scatter" for op, e in sel.entries.items() if e):
        lines += ["# " + x for x in textwrap.wrap(_SCATTER_NOTE, 110)]
    lines += [
        "# Open MPI ignores a missing or unreadable rules file without a word (hnow checked this one). To see what",
        "# ran, add --mca pml_monitoring_enable 2 --mca pml_monitoring_enable_output 2 to mpirun: every rank prints",
        "# the bytes it sent to each other rank.",
        *(f"export {k}={v}" for k, v in _settings(sel, rules_path).items()),
        f"unset {' '.join(_overrides(sel))}",
    ]
    return "\n".join(lines) + "\n"


def han_rules_path(rules_path: str) -> str:
    """Where coll/han's rules file goes: beside the rules file at ``rules_path``.

    >>> han_rules_path("<DIR>/ompi-rules.conf")
    '<DIR>/ompi-han-rules.conf'
    """
    head, sep, _ = rules_path.rpartition("/")
    return f"{head}{sep}{HAN_RULES_FILE}"


def _tuned_sizes(sel: OmpiSelection, op: str) -> str:
    """The sizes coll/han's rules hand ``op`` to tuned at, or what else they change (its simple allreduce)."""
    rules = list(sel.han_entries[op])
    spans = [f"{format_size(lo)}-{format_size(rules[i + 1][0] - 1)} ({leaf})" for i, (lo, leaf) in enumerate(rules)
             if leaf != HAN_LEAF and i + 1 < len(rules)]  # fmt: skip
    return ", ".join(spans)


def ompi_files(sel: OmpiSelection, path: str, rankfile: str | None) -> tuple[str, str, str, dict[str, str]]:
    """``sel`` as files: the rules file, ``ompi-env.txt``, the usage text (the file at ``path``; the ranks in
    the order of ``rankfile`` when given) and coll/han's rules file where one is needed (key ``ompi-han``)."""
    words = ("Open MPI's fixed rules", "no changes (Open MPI's fixed rules are predicted best)")
    usage = usage_text("Open MPI", "5.0.x", sel, path, words, _run_line(sel, path, rankfile), "ompi-env.txt")
    return sel.text, ompi_env_text(sel, path, rankfile), usage, ({"ompi-han": sel.han_text} if sel.han_text else {})


def _choose(profile: Profile, layout: Any, ops: Sequence[str], sizes: Sequence[int], hosts: Any, req: Any) -> Any:
    return choose_ompi(profile, layout, ops=ops, sizes=sizes)


#: Open MPI's format for :func:`hnowmodel.export.export`: ``ompi-rules.conf`` and ``ompi-env.txt``, its rank order a
#: ``rankfile``.
FORMAT = LibraryFormat(
    "ompi-rules",
    "ompi-env",
    "rankfile",
    "ompi",
    _choose,
    ompi_files,
    "Open MPI",
    "ompi-rules.conf",
    "ompi-env.txt",
    schedules=True,
    extra_files={"ompi-han": HAN_RULES_FILE},
)
