"""MPICH's export backend (format ``mpich-json``): MPICH's own default selection table (read from the installed
``libmpi``: :mod:`.selection`) with the chosen algorithms put in for a communicator of exactly that many
ranks, checked as MPICH reads it, and the settings that make MPICH use it (``mpich-env.txt``).

Sizes above the largest one asked for, other communicator sizes, and sizes where the library's default is an
algorithm hnow does not model (e.g. a ch4 composition whose leaders run a scatter + allgather) keep the library's
default. The message schedule operations (reduce, allreduce, allgather, reduce_scatter, alltoall) are written too:
their size keys, and the conditions an algorithm needs, as :func:`.selection.with_entries` writes them
(docs/exporting.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ... import ops as _ops
from ...errors import InputError
from ...export.choose import (
    Default,
    LibraryFormat,
    NativeChoice,
    OpChoice,
    Pick,
    choose,
    export_layout,
    fastest,
    table_rows,
    usage_text,
)
from ...params import Profile
from ..native import NativeAlgorithm
from . import ch4
from . import selection as table_io

__all__ = [
    "MpichSelection",
    "MpichBackend",
    "choose_mpich",
    "composition_pin",
    "mpich_env_text",
    "mpich_files",
    "FORMAT",
]

#: Control variables that beat MPICH's selection file for the tree operations (unset by every export, as before).
_OVERRIDES = tuple(f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM" for op in ("bcast", "scatter", "gather"))


def _overrides(sel: MpichSelection) -> tuple[str, ...]:
    """The control variables to unset for ``sel``: the tree operations', then each other exported operation's
    (``MPIR_CVAR_<COLL>_INTRA_ALGORITHM``, e.g. ``..._REDUCE_SCATTER_BLOCK_...``)."""
    more = (f"MPIR_CVAR_{table_io.collective(op).upper()}_INTRA_ALGORITHM" for op in sel.variants)
    return tuple(dict.fromkeys((*_OVERRIDES, *more)))


@dataclass(frozen=True)
class MpichSelection:
    """MPICH's algorithms chosen per operation and size (``rows``) for ``layout`` (one type per rank, root 0),
    predicted under ``variants[op]``; ``table`` is the library's default table (from ``library``, MPICH
    ``version``) with the choices put in, checked as MPICH reads it; ``entries[op]`` lists what was put in:
    ``(upto_bytes, algorithm)`` per range (empty: the default table is unchanged for that op)."""

    library: str
    version: str
    layout: tuple[str, ...]
    hierarchy: str
    variants: Mapping[str, str]
    rows: tuple[NativeChoice, ...]
    entries: Mapping[str, tuple[tuple[int, str], ...]]
    table: Mapping[str, Any]
    notes: tuple[str, ...] = ()
    #: operations whose ch4 composition the environment pins for every size (``{op: {VAR: value}}``)
    pins: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "mpich_version": self.version,
            "comm_size": len(self.layout),
            "layout": list(self.layout),
            "hierarchy": self.hierarchy,
            "variants": dict(self.variants),
            "rows": [r.to_dict() for r in self.rows],
            "entries": {op: [{"upto_bytes": b, "algorithm": a} for b, a in ent] for op, ent in self.entries.items()},
            "notes": list(self.notes),
            "pins": {op: dict(env) for op, env in self.pins.items()},
        }

    def table_rows(self) -> list[dict[str, Any]]:
        """The rows as a readable table: per op and size range, default and chosen algorithm, µs, gain %."""
        return table_rows(self.rows, {op for op, e in self.entries.items() if e})

    @property
    def device_collectives_off(self) -> bool:
        """Whether the settings switch some of MPICH's device collectives off (:attr:`device_off`)."""
        return bool(self.device_off)

    @property
    def device_off(self) -> tuple[str, ...]:
        """The settings (``VAR=value``) that switch MPICH's device collectives off where the file must apply: on one
        rank per node all of them (``MPIR_CVAR_DEVICE_COLLECTIVES=none``, as before: the device runs MPIR's own
        there); on a ``parent`` communicator only those of the operations the file changes
        (``MPIR_CVAR_<COLL>_DEVICE_COLLECTIVE=0`` under ``MPIR_CVAR_DEVICE_COLLECTIVES=percoll``, MPICH's default), so
        every other operation keeps the ch4 composition it runs by default.

        >>> sel = MpichSelection("", "", ("a", "a"), "parent", {}, (), {"bcast": ((65536, "smp"),)}, {})
        >>> sel.device_off
        ('MPIR_CVAR_DEVICE_COLLECTIVES=percoll', 'MPIR_CVAR_BCAST_DEVICE_COLLECTIVE=0')
        >>> replace(sel, hierarchy="flat", entries={}).device_off
        ('MPIR_CVAR_DEVICE_COLLECTIVES=none',)
        """
        if self.hierarchy != "parent":
            return ("MPIR_CVAR_DEVICE_COLLECTIVES=none",)
        ops = [table_io.collective(op).upper() for op, e in self.entries.items() if e]
        changed = [f"MPIR_CVAR_{coll}_DEVICE_COLLECTIVE=0" for coll in ops]
        return ("MPIR_CVAR_DEVICE_COLLECTIVES=percoll", *changed) if changed else ()


def composition_pin(nat: NativeAlgorithm) -> dict[str, str]:
    """The variable(s) that pin ``nat``'s ch4 composition for every size (``MPIR_CVAR_<COLL>_COMPOSITION``), empty
    for an algorithm that is none.

    >>> composition_pin(_algorithm("bcast", "composition:alpha"))
    {'MPIR_CVAR_BCAST_COMPOSITION': '1'}
    """
    return {k: v for k, v in nat.env.items() if k.endswith("_COMPOSITION") and v != "0"}


def _pin_text(env: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in env.items())


#: How hnow names MPICH's algorithms that ch4 compositions run (bcast's ``composition:alpha``), and MPIR's smp bcast.
_ALPHA, _SMP, _COMPOSITION = "composition:alpha", "smp", "composition:"


def _algorithm(op: str, name: str) -> NativeAlgorithm | None:
    return next((a for a in _ops.native_algorithms(op, "MPICH") if a.algorithm == name), None)


@dataclass(frozen=True)
class MpichBackend:
    """MPICH for :func:`hnowmodel.export.choose.choose`: its default table (from ``libmpi``, read when first
    needed) looked up as MPICH does for ranks whose nodes make ``hierarchy``; a leaf is ``{"algorithm=…": {…}}``.

    On a ``parent`` communicator (several nodes, some with several ranks) MPICH's default bcast is the ch4 device's
    (its own table, :attr:`.selection.DefaultTable.ch4`): composition alpha where that table says so, a
    candidate too. A file can select only MPICH's own (``MPIR_*``) algorithms, which run with the device's
    collectives off; there alpha's leaf is ``MPIR_Bcast_intra_smp``, the same two-level tree (leaders' binomial,
    then each node's), so alpha's sizes keep their tree when the file changes others."""

    libmpi: str | Path | None = None
    hierarchy: str = "flat"
    library: str = "MPICH"
    #: its file selects the message-schedule operations' algorithms too (allreduce, ...)
    schedules: bool = True

    @cached_property
    def lib(self) -> table_io.DefaultTable:
        return table_io.default_table(self.libmpi)

    def candidates(self, op: str) -> Sequence[NativeAlgorithm]:
        base = tuple(c for c in _ops.native_choices(op, "MPICH") if c.leaf)  # a default (auto) is no leaf
        alpha = _algorithm(op, _ALPHA)
        return base + (alpha,) if self.hierarchy == "parent" and alpha is not None else base

    def default(self, op: str, n: int, size: int, choices: Sequence[NativeAlgorithm]) -> Default:
        leaf = table_io.select(self.lib.table, op, comm_size=n, msg_bytes=size, hierarchy=self.hierarchy)
        if leaf is None:
            raise InputError(f"the MPICH default table selects nothing for {op} on {n} ranks at {size} B")
        comp = self._composition(op, n, size)
        if comp is not None:  # on a node-aware communicator the ch4 device's table runs
            model = ch4.composition_model(op, comp)
            if model != ch4.MPIR:  # else the netmod's call on the whole communicator: MPIR's own selection (below)
                name = f"{_COMPOSITION}{comp}"
                nat = next((c for c in choices if c.algorithm == model), None)
                if nat is None:
                    return Default(None, leaf, name, f"{name} (ch4 device)")
                return Default(nat, self.leaf(nat), name, name)
        by_leaf = {json.dumps(c.leaf, sort_keys=True): c for c in choices if c.leaf}
        nat = by_leaf.get(json.dumps(leaf, sort_keys=True))
        name = next(iter(leaf)).partition("=")[2]
        return Default(nat, leaf, name, name)

    def _composition(self, op: str, n: int, size: int) -> str | None:
        """The ch4 composition MPICH's device runs for ``op`` (``alpha``, ``beta``, ...), None where it runs MPIR's
        own selection directly (one rank per node)."""
        return ch4.composition(self.lib.ch4, op, n, size, "parent") if self.hierarchy == "parent" else None

    def leaf(self, nat: NativeAlgorithm) -> Any:
        if nat.algorithm == _ALPHA:  # with the file in force the device's collectives are off: MPIR's smp (bcast)
            smp = _algorithm("bcast", _SMP) if nat in _ops.native_algorithms("bcast", "MPICH") else None
            return None if smp is None else dict(smp.leaf)
        return None if nat.leaf is None else dict(nat.leaf)

    def constrain(self, op: str, picks: Sequence[Pick]) -> list[Pick]:
        """``picks`` as one file can run them on a node-aware communicator, where the file applies to ``op`` only
        with its device collective off (:attr:`MpichSelection.device_off`): a ch4 composition is chosen only where
        it is the default (no file selects one; the fastest other candidate instead), and ``op`` is changed only
        where every size that keeps a composition runs the same steps with the device off (bcast's composition
        alpha as MPIR's smp, predicted the same there); else every size keeps the default (nothing written)."""
        if self.hierarchy != "parent":
            return list(picks)
        pinned = self._pinned_everywhere(op, picks)
        if pinned is not None:
            return pinned
        out = [self._file_pick(op, p) for p in picks]
        if all(p.chosen == p.default for p in out) or all(self._kept_exactly(op, p) for p in out):
            return out
        return [p if p.chosen == p.default else replace(p, chosen=p.default, chosen_us=p.default_us) for p in picks]

    def _pinned_everywhere(self, op: str, picks: Sequence[Pick]) -> list[Pick] | None:
        """The picks with a ch4 composition chosen at every size, where one that the environment can pin for every
        size (``MPIR_CVAR_<COLL>_COMPOSITION``: bcast's alpha) is predicted fastest at every size asked for (ties
        included) and faster than the default at one at least, every default modelled; else None."""
        names = dict.fromkeys(a for p in picks for a in p.cand_us if a.startswith(_COMPOSITION))
        for name in names:
            nat = _algorithm(op, name)
            if nat is None or not composition_pin(nat) or any(p.default_us is None for p in picks):
                continue  # nothing to pin by, or a default hnow does not model: not swapped out
            if all(name in p.cand_us and fastest(p.cand_us, name) == name for p in picks) and any(
                p.default != name for p in picks
            ):
                return [replace(p, chosen=name, leaf=None, chosen_us=p.cand_us[name]) for p in picks]
        return None

    def _file_pick(self, op: str, p: Pick) -> Pick:
        if p.chosen == p.default or not p.chosen.startswith(_COMPOSITION):
            return p
        allowed = {a: us for a, us in p.cand_us.items() if not a.startswith(_COMPOSITION) or a == p.default}
        best = fastest(allowed, p.default)
        nat = _algorithm(op, best)
        if best == p.default or nat is None:
            return replace(p, chosen=p.default, chosen_us=p.default_us)
        return replace(p, chosen=best, leaf=self.leaf(nat), chosen_us=allowed[best])

    def _kept_exactly(self, op: str, p: Pick) -> bool:
        """Whether the default kept at ``p`` (where the file changes ``op`` elsewhere) runs the same with ``op``'s
        device collective off: MPIR's own leaf does; a composition only where the leaf the file keeps for it is a
        candidate predicted the same (bcast alpha: smp)."""
        if p.chosen != p.default or not p.default.startswith(_COMPOSITION):
            return True
        same = [a for a in p.cand_us if a != p.default and self._leaf_of(op, a) == p.leaf]
        us = p.default_us
        return us is not None and p.leaf is not None and any(abs(p.cand_us[a] - us) <= 1e-9 * us for a in same)

    def _leaf_of(self, op: str, name: str) -> Any:
        """The leaf the file says for ``op``'s algorithm ``name`` (None: none, or no such algorithm)."""
        nat = _algorithm(op, name)
        return None if nat is None else self.leaf(nat)

    def render(self, layout: tuple[str, ...], chosen: Sequence[OpChoice], notes: Sequence[str]) -> MpichSelection:
        """The default table with the choices put in, checked as MPICH reads it and read back: every size asked
        for must select what was chosen."""
        n = len(layout)
        table: Mapping[str, Any] = self.lib.table
        entries: dict[str, tuple[tuple[int, str], ...]] = {}
        pins: dict[str, dict[str, str]] = {}
        for oc in chosen:
            if all(p.chosen == p.default for p in oc.picks):
                entries[oc.op] = ()
                continue
            nat = _algorithm(oc.op, oc.picks[0].chosen)
            if nat is not None and all(p.leaf is None and p.chosen == nat.algorithm for p in oc.picks):
                entries[oc.op], pins[oc.op] = (), composition_pin(nat)  # the environment pins it at every size
                notes = [*notes, f"{oc.op}: {nat.algorithm} pinned for every size ({_pin_text(pins[oc.op])}): "
                         "predicted fastest at every size asked for"]  # fmt: skip
                continue
            last = [p for _, _, p in oc.ranges]
            entries[oc.op] = tuple((p.size, p.chosen) for p in last)
            table = table_io.with_entries(table, oc.op, n, [(p.size, p.leaf) for p in last])
        table_io.check_table(table, self.lib.algorithms)
        rows = tuple(r for oc in chosen for r in oc.rows)
        for r in rows:  # read back: the file selects what was chosen, at every size asked for
            if not entries.get(r.op):
                continue  # the op is unchanged: the library's own default runs
            got = table_io.select(table, r.op, comm_size=n, msg_bytes=r.size_bytes, hierarchy=self.hierarchy)
            nat = next((c for c in self.candidates(r.op) if c.algorithm == r.chosen), None)
            if nat is not None and got != self.leaf(nat):
                raise InputError(f"internal: the exported table selects {got} for {r.op} at {r.size_bytes} B")
        if self.hierarchy == "parent" and any(entries.values()):
            notes = [
                *notes,
                "the file applies to the operations it changes with their device collective off "
                "(MPIR_CVAR_<COLL>_DEVICE_COLLECTIVE=0): there a size that keeps bcast's composition alpha runs "
                "MPIR_Bcast_intra_smp, the same two-level steps, and sizes above the largest asked for run MPICH's "
                "own table instead of the ch4 composition; every other operation keeps its ch4 composition",
            ]
        variants = {oc.op: oc.variant for oc in chosen}
        lib, notes = self.lib, tuple(notes)
        return MpichSelection(
            lib.path, lib.version, layout, self.hierarchy, variants, rows, entries, table, notes, pins
        )


def choose_mpich(
    profile: Profile,
    layout: Sequence[str] | None = None,
    *,
    ops: Sequence[str] = ("bcast", "scatter", "gather"),
    sizes: Sequence[int] = (65536,),
    libmpi: str | Path | None = None,
    hosts: Sequence[str] | None = None,
) -> MpichSelection:
    """For each of ``ops`` and ``sizes`` (bytes per rank) on ``layout`` (default: the profile's calibration
    layout), the fastest algorithm MPICH can run (:func:`hnowmodel.ops.native_choices`, predicted under
    :func:`hnowmodel.ops.default_variant`, root 0) against the one its default table picks, and that table with the
    choices put in (:func:`.selection.with_entries`), checked as MPICH reads it and read back: every size
    must select what was chosen. ``hosts`` (default: the profile's, when the layout is the profile's) tell which
    ranks share a node; without them one rank per node is assumed. ``libmpi``: the MPICH library whose default
    table to start from (default: :func:`.selection.find_libmpi`)."""
    notes: list[str] = []
    layout, own_hosts = export_layout(profile, layout)
    hosts = own_hosts if hosts is None else hosts
    if hosts is None and not layout.one_per_host:  # a layout with its hosts
        hosts = [str(h) for h in layout.hosts.tolist()]
    if hosts is None:
        notes.append("hosts unknown: one rank per node assumed (comm_hierarchy flat)")
        hierarchy = "flat"
    else:
        if len(hosts) != len(layout):
            raise InputError(f"hosts: {len(hosts)} hosts for {len(layout)} ranks")
        hierarchy = ch4.comm_hierarchy(hosts)
    backend = MpichBackend(libmpi, hierarchy)
    chosen, more = choose(backend, profile, layout, ops, sizes)
    return backend.render(layout, chosen, notes + more)


def _run_line(sel: MpichSelection, json_path: str, hostfile: str | None) -> str:
    unset = " ".join(f"-u {v}" for v in _overrides(sel))
    where = f" -f {hostfile}" if hostfile else ""
    dev = "".join(f"{v} " for v in sel.device_off) + "".join(f"{_pin_text(e)} " for e in sel.pins.values())
    return (
        f"env {unset} MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={json_path} {dev}"
        f"mpiexec -n {len(sel.layout)}{where} ./app"
    )


def mpich_env_text(sel: MpichSelection, json_path: str, hostfile: str | None = None) -> str:
    """The settings that make MPICH run ``sel``'s file ``json_path``: a file ``sh`` can source, with the one-line
    form (``mpiexec -f hostfile`` when the ranks are to run in an exported order) and how to check it."""
    device = (
        "# MPIR_CVAR_<OP>_INTRA_ALGORITHM (other than auto) beats the file, hence the unset; with the device\n"
        "# collectives on (below), the ch4 device's own collectives run instead of the file's choice.\n"
        if sel.device_collectives_off
        else "# MPIR_CVAR_<OP>_INTRA_ALGORITHM (other than auto) beats the file, hence the unset. The file changes\n"
        "# nothing here: the ch4 device's own collectives stay on (on ranks sharing nodes, its compositions).\n"
    ) + (
        "# MPIR_CVAR_<COLL>_COMPOSITION pins a ch4 composition for every size of that operation (predicted\n"
        "# fastest at every size asked for; no selection file can name one).\n"
        if sel.pins
        else ""
    )
    return (
        f"# MPICH {sel.version or '?'} collective selection by hnow export ({len(sel.layout)} ranks; default table "
        f"from {sel.library}).\n"
        "# Each rank reads the file in MPI_Init: put it at this path on every host. Source this file, or run\n"
        f"#   {_run_line(sel, json_path, hostfile)}\n"
        f"{device}"
        "# Check: MPIR_CVAR_DEBUG_SUMMARY=1 prints the file under 'collective selection' ('MPIR: <path>').\n"
        f"export MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={json_path}\n"
        + "".join(f"export {v}\n" for v in sel.device_off)
        + "".join(f"export {k}={v}\n" for env in sel.pins.values() for k, v in env.items())
        + f"unset {' '.join(_overrides(sel))}\n"
    )


def mpich_files(sel: MpichSelection, path: str, hostfile: str | None) -> tuple[str, str, str, dict[str, str]]:
    """``sel`` as files: the selection JSON, ``mpich-env.txt`` and the usage text (the file at ``path``; the
    ranks in the order of ``hostfile`` when given)."""
    words = ("MPICH's default table", "MPICH's default table, unchanged (its defaults are predicted best)")
    usage = usage_text("MPICH", sel.version or "?", sel, path, words, _run_line(sel, path, hostfile), "mpich-env.txt")
    return json.dumps(sel.table, indent=1) + "\n", mpich_env_text(sel, path, hostfile), usage, {}


def _choose(profile: Profile, layout: Any, ops: Sequence[str], sizes: Sequence[int], hosts: Any, req: Any) -> Any:
    return choose_mpich(profile, layout, ops=ops, sizes=sizes, libmpi=req.libmpi, hosts=hosts)


#: MPICH's format for :func:`hnowmodel.export.export`: ``mpich-coll.json`` and ``mpich-env.txt``, its rank order a
#: hydra ``hostfile``; it writes every operation MPICH's algorithms are modelled for (the tree operations and the
#: message schedule ones: allreduce, ...).
FORMAT = LibraryFormat(
    "mpich-json",
    "mpich-env",
    "hostfile",
    "mpich",
    _choose,
    mpich_files,
    "MPICH",
    "mpich-coll.json",
    "mpich-env.txt",
    schedules=True,
)
