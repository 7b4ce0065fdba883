"""Intel MPI's export backend (format ``impi-env``): ``I_MPI_ADJUST_<OP>`` strings (bcast, scatter, gather, and
the message schedule operations: reduce, allreduce, allgather, reduce_scatter as ``I_MPI_ADJUST_REDUCE_SCATTER_BLOCK``,
alltoall) that run the chosen algorithm per message-size range on communicators of exactly the exported number of
ranks, and leave every other case - sizes above the largest one asked for, other communicator sizes, sizes where the
default is kept - to Intel MPI's own choice (its tuning file), as Intel's reference says the strings are read.
Intel MPI 2021.16 was seen reading them otherwise: where no rule holds it ran the last rule's algorithm
(docs/intel-mpi.md, "Export"); the read-back here follows the reference.

The strings' syntax, and reading them back, are :mod:`.adjust`'s. The message size is the bytes per rank, hnow's
``m`` (bcast: the message; scatter: a rank's block, ``send_count × type`` at the root; gather: ``recv_count × type``;
reduce, allreduce: the vector; allgather, alltoall: one block; reduce_scatter: the result block; checked on the
wire for allgather only: a rule ``4096-4096`` held at ``m`` = 4096 on 4 ranks).

The candidates are Intel MPI's algorithms hnow models (:func:`hnowmodel.ops.native_choices` with a ``leaf``, their
``I_MPI_ADJUST`` number: :mod:`.algorithms`, :mod:`.schedules`). The default is Intel MPI's tuning file's choice,
modelled where it is known what runs (its ``by_size``, :class:`.rows.TuningRows`: bcast, scatter, gather on 6 ranks,
the others on 2 and 4, and reduce, allreduce, allgather and reduce_scatter at some sizes on 12, one rank per host);
elsewhere it is kept (not modelled, with a note) (docs/intel-mpi.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from ...layout import Layout, one_per_host
from ...params import Profile
from ...sizes import format_size
from ..native import NativeAlgorithm
from .adjust import TUNING_DEFAULT, AdjustRule, adjust_runs, adjust_variable, format_adjust, parse_adjust

__all__ = [
    "ImpiSelection",
    "ImpiBackend",
    "choose_impi",
    "impi_files",
    "FORMAT",
]

_LABEL = "(its tuning file's choice, not known for this many ranks and size)"


@dataclass(frozen=True)
class ImpiSelection:
    """Intel MPI's algorithms chosen per operation and size (``rows``) for ``layout`` (one type per rank, root 0),
    predicted under ``variants[op]``, and the ``I_MPI_ADJUST_<OP>`` strings that run them (``strings``: variable ->
    value; only the operations the strings change). ``entries[op]`` lists what they change: ``(from_bytes,
    upto_bytes, algorithm)`` per range, bytes per rank (empty: Intel MPI's own choice everywhere)."""

    layout: tuple[str, ...]
    variants: Mapping[str, str]
    rows: tuple[NativeChoice, ...]
    entries: Mapping[str, tuple[tuple[int, int, str], ...]]
    strings: Mapping[str, str]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "library": "Intel MPI",
            "comm_size": len(self.layout),
            "layout": list(self.layout),
            "variants": dict(self.variants),
            "rows": [r.to_dict() for r in self.rows],
            "entries": range_entries(self.entries),
            "strings": dict(self.strings),
            "notes": list(self.notes),
        }

    def table_rows(self) -> list[dict[str, Any]]:
        """The rows as a readable table: per op and size range, default and chosen algorithm, µs, gain %."""
        return table_rows(self.rows, {op for op, e in self.entries.items() if e})


def _read_back(strings: Mapping[str, str], n: int, chosen: Sequence[OpChoice], filled: Mapping[Any, int]) -> None:
    """Read each string as Intel MPI's reference says it is read: every size runs what was chosen (the library's own
    choice where the default is kept, or the number ``filled[(op, size)]`` that runs the default's algorithm there),
    sizes above the largest one keep the library's choice, and so do other process counts under a one-rule string
    (several rules carry no process count: :meth:`ImpiBackend.render`)."""
    for oc in chosen:
        rules = parse_adjust(strings.get(adjust_variable(oc.op), ""))
        for p in oc.picks:
            want = filled.get((oc.op, p.size)) if p.leaf == TUNING_DEFAULT else p.leaf
            got = adjust_runs(rules, n, p.size)
            if got != want:
                raise InputError(f"internal: {adjust_variable(oc.op)} runs {got} for {oc.op} at {p.size} B, not {want}")
            for other in (n - 1, n + 1) if len(rules) == 1 else ():  # several rules hold on every process count
                if other >= 2 and adjust_runs(rules, other, p.size) is not None:
                    raise InputError(f"internal: {adjust_variable(oc.op)} changes {oc.op} on {other} ranks")
        if adjust_runs(rules, n, oc.ranges[-1][1] + 1) is not None:
            raise InputError(f"internal: {adjust_variable(oc.op)} changes {oc.op} above {oc.ranges[-1][1]} B")


def _default_number(op: str, n: int, size: int, one_per_host: bool) -> NativeAlgorithm | None:
    """The pinned algorithm (one with an ``I_MPI_ADJUST`` number) that runs what Intel MPI's default is modelled to
    run for ``op`` on ``n`` ranks at ``size`` bytes (the same tree or schedule, the same way), None where the default
    is not modelled there or no number runs it (a pipelined bcast or reduce: Intel's own)."""
    dflt = _ops.get(op).native.get(ImpiBackend.library)
    model = None if dflt is None else dflt.tree_at(n, size, one_per_host)  # by its rows (a bcast's: no number)
    if model is None:
        return None
    return next(
        (
            c
            for c in _ops.native_choices(op, ImpiBackend.library)
            if c.leaf and c.schedule == dflt.schedule and c.tree_at(n, size, one_per_host) == model
        ),
        None,
    )


def _merged(rules: list[tuple[int, int, int, str]]) -> list[tuple[int, int, int, str]]:
    """``(from, upto, number, name)`` ranges with adjacent ones of the same number joined (fewer rules).

    >>> _merged([(0, 10, 3, "ring"), (11, 20, 3, "ring"), (21, 30, 1, "x"), (40, 50, 1, "x")])
    [(0, 20, 3, 'ring'), (21, 30, 1, 'x'), (40, 50, 1, 'x')]
    """
    out: list[tuple[int, int, int, str]] = []
    for r in rules:
        if out and out[-1][2] == r[2] and out[-1][1] + 1 == r[0]:
            out[-1] = (out[-1][0], r[1], r[2], out[-1][3])
        else:
            out.append(r)
    return out


@dataclass(frozen=True)
class ImpiBackend:
    """Intel MPI for :func:`hnowmodel.export.choose.choose`: a leaf is an ``I_MPI_ADJUST`` algorithm number, and
    :data:`TUNING_DEFAULT` where the default (the tuning file's choice, not modelled) is kept."""

    library: str = "Intel MPI"
    #: whether the exported layout has one rank per host (the default's trees were read so; else not modelled)
    one_per_host: bool = True
    #: the exported layout, when it says its hosts (the default on hosts of several ranks: its own rows)
    layout: Any = None
    #: its strings select the message-schedule operations' algorithms too (I_MPI_ADJUST_ALLREDUCE, ...)
    schedules: bool = True

    def candidates(self, op: str) -> Sequence[NativeAlgorithm]:
        """What a string can pin (a ``leaf``: an ``I_MPI_ADJUST`` number), and the default (the tuning file's choice,
        kept by no rule)."""
        dflt = _ops.get(op).native.get(self.library)
        return [c for c in _ops.native_choices(op, self.library) if c.leaf or c is dflt]

    def default(self, op: str, n: int, size: int, choices: Sequence[NativeAlgorithm]) -> Default:
        """The tuning file's choice: modelled where the default's
        :attr:`~hnowmodel.libraries.native.NativeAlgorithm.by_size` knows which tree runs on ``n`` ranks at ``size``
        bytes, else kept with a note."""
        dflt = _ops.get(op).native.get(self.library)
        if dflt is not None and self.layout is not None and dflt.per_layout is not None:
            known = dflt.on(self.layout, size) is not None  # by the layout's hosts
        else:
            known = dflt is not None and dflt.tree_at(n, size, self.one_per_host) is not None
        if known:
            return Default(dflt, TUNING_DEFAULT, dflt.algorithm)
        return Default(None, TUNING_DEFAULT, "tuning-file", _LABEL)

    def leaf(self, nat: NativeAlgorithm) -> Any:
        return int(nat.leaf or TUNING_DEFAULT)  # the default has no number: TUNING_DEFAULT, no rule

    def render(self, layout: tuple[str, ...], chosen: Sequence[OpChoice], notes: Sequence[str]) -> ImpiSelection:
        """The strings that run the choices on exactly ``len(layout)`` ranks, read back as Intel MPI's reference
        reads them. An operation's string has no gap among the sizes asked for where the default is modelled and
        a number runs it: Intel MPI 2021.16 runs the last rule's algorithm where no rule holds (docs/intel-mpi.md,
        "Export"), so a size where the default is kept gets the rule that runs the default's algorithm; where no
        number runs it, a note says that the string may run another algorithm there."""
        n = len(layout)
        entries: dict[str, tuple[tuple[int, int, str], ...]] = {}
        strings: dict[str, str] = {}
        filled: dict[tuple[str, int], int] = {}
        notes = list(notes)
        for oc in chosen:
            kept = []
            if any(p.leaf != TUNING_DEFAULT for _, _, p in oc.ranges):
                for lo, hi, p in oc.ranges:
                    if p.leaf != TUNING_DEFAULT:
                        kept.append((lo, hi, int(p.leaf), p.chosen))
                    elif (same := _default_number(oc.op, n, p.size, self.one_per_host)) is not None:
                        kept.append((lo, hi, int(same.leaf or 0), f"{same.algorithm} (the default's)"))
                        filled.update({(oc.op, q.size): int(same.leaf or 0) for q in oc.picks if lo <= q.size <= hi})
                    else:
                        notes.append(
                            f"{oc.op} {format_size(lo)}-{format_size(hi)}: the default is kept, but no rule runs it; "
                            "Intel MPI 2021.16 may run another rule's algorithm there"
                        )
            entries[oc.op] = tuple((lo, hi, name) for lo, hi, _, name in kept)
            kept = _merged(kept)
            if kept:
                # one rule: for exactly n ranks; several: no process count, which 2021.16 misread (docs/intel-mpi.md)
                procs = (n, n) if len(kept) == 1 else (None, None)
                strings[adjust_variable(oc.op)] = format_adjust(
                    [AdjustRule(k, lo, hi, *procs) for lo, hi, k, _ in kept]
                )
                if len(kept) > 1:
                    why = "Intel MPI 2021.16 ran the last rule's algorithm at every size with it"
                    notes.append(
                        f"{oc.op}: several rules, written without @{n}-{n} ({why}): on every communicator size"
                    )
        _read_back(strings, n, chosen, filled)
        variants = {oc.op: oc.variant for oc in chosen}
        rows = tuple(r for oc in chosen for r in oc.rows)
        return ImpiSelection(layout, variants, rows, entries, strings, tuple(notes))


def choose_impi(
    profile: Profile,
    layout: Sequence[str] | None = None,
    *,
    ops: Sequence[str] = ("bcast", "scatter", "gather"),
    sizes: Sequence[int] = (65536,),
) -> ImpiSelection:
    """For each of ``ops`` and ``sizes`` (bytes per rank) on ``layout`` (default: the profile's calibration
    layout), the fastest algorithm Intel MPI can be told to run by ``I_MPI_ADJUST_<OP>`` that hnow models, against
    Intel MPI's default, and the strings that run the choices for a communicator of exactly that many ranks (read
    back as Intel MPI reads them)."""
    per_host = layout is None or isinstance(layout, str) or one_per_host(layout)  # a Layout knows its hosts
    layout, _ = export_layout(profile, layout)
    backend = ImpiBackend(one_per_host=per_host, layout=layout if isinstance(layout, Layout) else None)
    chosen, notes = choose(backend, profile, layout, ops, sizes)
    return backend.render(layout, chosen, notes)


def impi_env_text(sel: ImpiSelection) -> str:
    """The shell settings that make Intel MPI run ``sel``'s choices (``source`` it before ``mpiexec``)."""
    lines = [
        f"# Intel MPI algorithms written by hnow export for exactly {len(sel.layout)} ranks, root 0.",
        "# Each I_MPI_ADJUST_<OP> rule is ALG:FROM-TO@NP-NP (bytes per rank, both included); where no rule holds,",
        "# Intel MPI's reference says it chooses as without the variable (its tuning file); 2021.16 was seen running",
        "# the last rule's algorithm there instead (docs/intel-mpi.md, 'Export').",
        *(
            f"# {op} {format_size(lo)}-{format_size(hi)}{'' if op == 'bcast' else ' per rank'}: {alg}"
            for op, ent in sel.entries.items()
            for lo, hi, alg in ent
        ),
        *(f"# note: {x}" for x in sel.notes),
        *(f'export {k}="{v}"' for k, v in sel.strings.items()),
    ]
    if not sel.strings:
        lines.append("# nothing to change: Intel MPI's own choice is kept for every operation and size")
    return "\n".join(lines) + "\n"


def impi_files(sel: ImpiSelection, path: str, hostfile: str | None) -> tuple[str, str, str, dict[str, str]]:
    """``sel`` as files: ``impi-env.txt`` (twice: it is both the selection and its settings), the usage text (the
    ranks in the order of ``hostfile``, Intel's ``-machinefile``, when given) and no other file."""
    text = impi_env_text(sel)
    where = f" -machinefile {hostfile}" if hostfile else ""
    pins = " ".join(f'{k}="{v}"' for k, v in sel.strings.items())
    run = f"{pins + ' ' if pins else ''}mpiexec -n {len(sel.layout)}{where} ./app"
    words = ("Intel MPI's own choice", "no changes (Intel MPI's own choice is kept)")
    return text, text, usage_text("Intel MPI", "2021.16", sel, path, words, run, "impi-env.txt"), {}


def _choose(profile: Profile, layout: Any, ops: Sequence[str], sizes: Sequence[int], hosts: Any, req: Any) -> Any:
    return choose_impi(profile, layout, ops=ops, sizes=sizes)


#: Intel MPI's format for :func:`hnowmodel.export.export`: the settings are the selection (``impi-env.txt``, twice);
#: its hydra reads ``host:N`` from ``-machinefile`` (a ``hostfile``); it writes every operation Intel MPI's algorithms
#: are modelled for (the tree operations and the message schedule ones: ``I_MPI_ADJUST_ALLREDUCE``, ...).
FORMAT = LibraryFormat(
    "impi-env",
    "impi-env",
    "hostfile",
    "impi",
    _choose,
    impi_files,
    "Intel MPI",
    "impi-env.txt",
    "impi-env.txt",
    schedules=True,
)
