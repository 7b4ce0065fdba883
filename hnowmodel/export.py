"""Put a choice to work: the files MPI libraries and launchers read so that a native collective runs its fastest.

Two things can be chosen and exported.

**The rank order** (:func:`export_order`). A native algorithm (MPICH's binomial, say) fixes the tree by rank
number; which node gets which rank decides its time. From a profile that records where each rank ran (``nodes``:
rank, host, type), it finds the rank order under which ``op`` over the native tree is predicted fastest
(:func:`hnowmodel.search.rank_order`), in each launcher's terms:

* ``hostfile`` — MPICH's hydra (``mpiexec -f hostfile``): one ``host:1`` line per rank, in the new rank order;
* ``rankfile`` — Open MPI (``mpirun --map-by rankfile:file=rankfile``): ``rank N=host slot=S``;
* ``keys`` — JSON ``{"keys": [...]}``: ``MPI_Comm_split(comm, 0, keys[rank])`` reorders an already running job.

**MPICH's algorithm per operation and message size** (:func:`choose_mpich`, format ``mpich-json``). For each
operation and size, every algorithm MPICH can be told to run that hnow models (:func:`hnowmodel.ops.native_choices`:
bcast binomial, ``MPIR_Bcast_intra_tree`` kary / knomial_1 / knomial_2 with k = 2..8; scatter and gather binomial
only) is predicted under the profile's default variant, and the fastest is chosen; adjacent sizes with the same
choice become one range (``avg_msg_size<=N``, a range ending at its largest size). ``mpich-coll.json`` is MPICH's
own default table (read from the installed ``libmpi``: :mod:`hnowmodel.mpich`) with the choices put in for a
communicator of exactly that many ranks; sizes above the largest one asked for, other communicator sizes, and
sizes where the library's default is an algorithm hnow does not model (e.g. bcast by scatter + allgather from
8 ranks and 12 KiB) keep the library's default. ``mpich-env.txt`` has the settings that make MPICH use it.

Open MPI's coll/tuned rules file is not exported yet.

>>> from hnowmodel.params import Profile, paper_profile
>>> doc = paper_profile().to_dict()
>>> doc["nodes"] = [{"rank": r, "host": h, "type": t} for r, (h, t) in enumerate(
...     [("n1", "fast"), ("n2", "fast"), ("n3", "slow"), ("n4", "slow")])]
>>> ex = export_order(Profile.from_dict(doc), op="bcast", size=0)
>>> ex.files["hostfile"].split(), round(ex.order.gain_pct, 1)
(['n1:1', 'n3:1', 'n2:1', 'n4:1'], 14.0)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import mpich
from . import ops as _ops
from .errors import InputError
from .layout import parse_layout
from .params import Profile
from .search.rank_order import RankOrder, rank_order
from .sizes import format_size
from .trees import make_tree

__all__ = [
    "Export",
    "export",
    "export_order",
    "FORMATS",
    "ORDER_FORMATS",
    "FOLDER",
    "write_export",
    "NativeChoice",
    "MpichSelection",
    "choose_mpich",
    "mpich_env_text",
]

#: What :func:`export` writes: format name -> file name (``mpich-json`` also writes ``mpich-env.txt``).
FORMATS: Mapping[str, str] = {
    "hostfile": "hostfile",
    "rankfile": "rankfile",
    "keys": "keys.json",
    "mpich-json": "mpich-coll.json",
}
#: The formats that carry a rank order (from :func:`export_order`).
ORDER_FORMATS = ("hostfile", "rankfile", "keys")
_FILE_NAMES = {**FORMATS, "mpich-env": "mpich-env.txt"}
#: Stands for the output folder in texts made before it is known (:meth:`Export.placed` fills it in).
FOLDER = "<DIR>"
#: Control variables that beat MPICH's selection file for the operations hnow exports.
_MPICH_OVERRIDES = tuple(f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM" for op in ("bcast", "scatter", "gather"))


@dataclass(frozen=True)
class NativeChoice:
    """One operation at one message size: the algorithm MPICH runs by default there (``default``, with its
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
        }

    def table_rows(self) -> list[dict[str, Any]]:
        """The rows as a readable table: per op and size range, default and chosen algorithm, µs, gain %."""
        out = []
        for r in self.rows:
            out.append(
                {
                    "op": r.op,
                    "range": f"{format_size(r.from_bytes)}-{format_size(r.upto_bytes)}"
                    if self.entries.get(r.op)
                    else "(unchanged)",
                    "size": format_size(r.size_bytes),
                    "default": r.default,
                    "default_us": r.default_us,
                    "chosen": r.chosen,
                    "chosen_us": r.chosen_us,
                    "gain_%": r.gain_pct,
                }
            )
        return out


@dataclass(frozen=True)
class Export:
    """What :func:`export` made: the files' texts by format (``files``; paths inside them say :data:`FOLDER` until
    :meth:`placed`), ``usage`` (how to use each file), and what they were made from: ``order`` (a rank order:
    permutation, split keys, predicted µs before/after; None without an order format) with ``hosts[r]`` the host
    rank r ran on in the profile, and ``selection`` (MPICH's algorithms; None without ``mpich-json``)."""

    order: RankOrder | None
    hosts: tuple[str, ...]
    files: Mapping[str, str]
    usage: str
    op: str
    size: int
    tree: str
    selection: MpichSelection | None = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"op": self.op, "size": self.size, "tree": self.tree}
        if self.order is not None:
            doc.update(self.order.to_dict())
            doc["hosts"] = [self.hosts[r] for r in self.order.perm]
        if self.selection is not None:
            doc["mpich"] = self.selection.to_dict()
        doc["files"] = dict(self.files)
        doc["usage"] = self.usage
        return doc

    def placed(self, folder: str | Path) -> Export:
        """The same export with :data:`FOLDER` in its texts replaced by ``folder``'s absolute path."""
        where = str(Path(folder).resolve())
        return replace(
            self,
            files={k: v.replace(FOLDER, where) for k, v in self.files.items()},
            usage=self.usage.replace(FOLDER, where),
        )


def export_order(
    profile: Profile, *, op: str = "bcast", size: int = 0, tree: str = "binomial", library: str = "MPICH"
) -> Export:
    """The rank order for ``op`` of ``size`` bytes over ``tree`` (a native algorithm's shape), from the ranks, hosts
    and types the profile's ``nodes`` record, as launcher files (:data:`FORMATS`). When ``tree`` is the model tree
    of one of ``library``'s algorithms for ``op`` (:func:`hnowmodel.ops.native_choices`), the order is chosen for
    that algorithm as it runs (:func:`hnowmodel.ops.native_predict`: the root's copy, the order of its messages)."""
    nodes = sorted(profile.nodes, key=lambda n: n.get("rank", 0))
    if not nodes or any("host" not in n for n in nodes):
        raise InputError("the profile records no hosts (its 'nodes'): calibrate on the machines to export for")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise InputError(f"--size must be a whole number of bytes >= 0, got {size!r}")
    hosts = tuple(str(n["host"]) for n in nodes)
    nat = next((a for a in _ops.native_choices(op, library) if a.model_tree == tree), None)
    order = rank_order(profile, [n["type"] for n in nodes], tree, op, size, native=nat)
    new_hosts = [hosts[r] for r in order.perm]
    slot: dict[str, int] = {}
    rankfile = []
    for i, h in enumerate(new_hosts):
        rankfile.append(f"rank {i}={h} slot={slot.get(h, 0)}")
        slot[h] = slot.get(h, 0) + 1
    files = {
        "hostfile": "".join(f"{h}:1\n" for h in new_hosts),
        "rankfile": "\n".join(rankfile) + "\n",
        "keys": json.dumps({"keys": list(order.keys), "op": op, "size_bytes": size, "tree": tree}) + "\n",
    }
    usage = (
        f"{op} of {size} B over the library's {tree} tree: predicted {order.baseline_us:.6g} us in the calibrated "
        f"order, {order.time_us:.6g} us in this one ({order.gain_pct:.1f} % less; {order.method}).\n"
        f"MPICH (hydra): mpiexec -n {len(hosts)} -f hostfile ./app\n"
        f"Open MPI:      mpirun -n {len(hosts)} --map-by rankfile:file=rankfile ./app\n"
        "In the application: MPI_Comm_split(MPI_COMM_WORLD, 0, keys[rank], &comm) with keys.json's keys, then use "
        "comm\n"
    )
    return Export(order, hosts, files, usage, op, size, tree)


def write_export(ex: Export, folder: str | Path, *, force: bool = False) -> dict[str, str]:
    """Write every file of ``ex`` and ``USAGE.txt`` into ``folder`` (refused if it is not empty, unless ``force``),
    with :data:`FOLDER` replaced by the folder's path; returns file key (format, ``mpich-env``, ``usage``) -> path."""
    from .io import atomic_write, check_output

    out = check_output(folder, force=force, folder=True)
    out.mkdir(parents=True, exist_ok=True)
    ex = ex.placed(out)
    paths = {key: str(atomic_write(out / _FILE_NAMES[key], text)) for key, text in ex.files.items()}
    paths["usage"] = str(atomic_write(out / "USAGE.txt", ex.usage))
    return paths


# ---- MPICH's algorithms ----------------------------------------------------------------------------------------
def _hierarchy(hosts: Sequence[str]) -> str:
    """What MPICH's ``comm_hierarchy`` sees for ranks on ``hosts``: ``flat`` (one rank per host), ``node`` (one
    host) or ``parent``."""
    distinct = len(set(hosts))
    return "flat" if distinct == len(hosts) else "node" if distinct == 1 else "parent"


def _sizes(sizes: Any) -> list[int]:
    out = sorted(set(sizes))
    if not out:
        raise InputError("--sizes: give the message sizes to choose for (e.g. --sizes 16K,64K,256K)")
    for m in out:
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise InputError(
                f"--sizes: {m!r} is not a size MPICH chooses an algorithm for (whole bytes >= 1; an empty collective "
                "returns at once)"
            )
    return [int(m) for m in out]


@dataclass(frozen=True)
class _Pick:
    size: int
    chosen: str
    leaf: Mapping[str, Any]
    default: str
    default_us: float | None
    chosen_us: float | None
    cand_us: Mapping[str, float]


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
    choices put in (:func:`hnowmodel.mpich.with_entries`), checked as MPICH reads it and read back: every size
    must select what was chosen. ``hosts`` (default: the profile's, when the layout is the profile's) tell which
    ranks share a node; without them one rank per node is assumed. ``libmpi``: the MPICH library whose default
    table to start from (default: :func:`hnowmodel.mpich.find_libmpi`)."""
    notes: list[str] = []
    if layout is None:
        layout = profile.layout
        if not layout:
            raise InputError("--layout is required (the profile records no calibration layout)")
        if hosts is None:
            nodes = sorted(profile.nodes, key=lambda nd: nd.get("rank", 0))
            if all("host" in nd for nd in nodes):
                hosts = [str(nd["host"]) for nd in nodes]
    layout = parse_layout(list(layout), profile.type_names)
    n = len(layout)
    if n < 2:
        raise InputError(f"--layout: an export needs at least 2 ranks, got {n}")
    if hosts is None:
        notes.append("hosts unknown: one rank per node assumed (comm_hierarchy flat)")
        hierarchy = "flat"
    else:
        if len(hosts) != n:
            raise InputError(f"hosts: {len(hosts)} hosts for {n} ranks")
        hierarchy = _hierarchy(hosts)
    op_names = list(dict.fromkeys(ops))
    if not op_names:
        raise InputError("--ops: give at least one operation")
    for op in op_names:
        if not _ops.native_choices(op, "MPICH"):
            raise InputError(f"--ops: hnow does not model MPICH's own {op}")
    size_list = _sizes(sizes)
    lib = mpich.default_table(libmpi)
    table: Mapping[str, Any] = lib.table
    rows: list[NativeChoice] = []
    entries: dict[str, tuple[tuple[int, str], ...]] = {}
    variants: dict[str, str] = {}
    for op in op_names:
        variant = _ops.default_variant(op, profile)
        variants[op] = variant
        cands: list[_ops.NativeAlgorithm] = []
        trees: list[Any] = []
        alias: dict[str, str] = {}  # algorithm -> the first candidate with the same tree on n ranks
        for nat in _ops.native_choices(op, "MPICH"):
            tree = make_tree(nat.model_tree, n)
            same = next((c for c, t in zip(cands, trees, strict=True) if t == tree), None)
            alias[nat.algorithm] = nat.algorithm if same is None else same.algorithm
            if same is None:  # kary:K for every K >= n-1 is one tree, ...: predicted and offered once
                trees.append(tree)
                cands.append(nat)
        times = {
            nat.algorithm: _ops.native_predict(op, "MPICH", profile, layout, size_list, variant=variant, algorithm=nat)
            for nat in cands
        }
        by_leaf = {json.dumps(nat.selection, sort_keys=True): nat for nat in _ops.native_choices(op, "MPICH")}
        picked: list[_Pick] = []
        for i, m in enumerate(size_list):
            leaf = mpich.select(table, op, comm_size=n, msg_bytes=m, hierarchy=hierarchy)
            if leaf is None:
                raise InputError(f"the MPICH default table selects nothing for {op} on {n} ranks at {m} B")
            cand_us = {name: float(t[i]) for name, t in times.items()}
            dflt = by_leaf.get(json.dumps(leaf, sort_keys=True))
            if dflt is None:
                name = next(iter(leaf)).partition("=")[2]
                notes.append(f"{op} at {format_size(m)}: MPICH's default {name} is not modelled; kept")
                picked.append(_Pick(m, name, leaf, name, None, None, cand_us))
                continue
            d_alg = alias[dflt.algorithm]
            # ties go to the default, then to the registry's order (binomial first)
            order = list(cand_us)
            best = min(order, key=lambda a: (cand_us[a], a != d_alg, order.index(a)))
            if best == d_alg:
                best, leaf_out = dflt.algorithm, leaf
            else:
                leaf_out = dict(next(c for c in cands if c.algorithm == best).selection)
            picked.append(_Pick(m, best, leaf_out, dflt.algorithm, cand_us[d_alg], cand_us[alias[best]], cand_us))
        # adjacent sizes with the same leaf make one range, ending at its largest size
        groups: list[list[int]] = []
        for i, p in enumerate(picked):
            if groups and json.dumps(picked[groups[-1][0]].leaf, sort_keys=True) == json.dumps(p.leaf, sort_keys=True):
                groups[-1].append(i)
            else:
                groups.append([i])
        lo = 0
        for g in groups:
            hi = picked[g[-1]].size
            for p in (picked[i] for i in g):
                rows.append(NativeChoice(op, p.size, p.default, p.default_us, p.chosen, p.chosen_us, lo, hi, p.cand_us))
            lo = hi + 1
        if all(p.chosen == p.default for p in picked):
            entries[op] = ()
        else:
            last = [picked[g[-1]] for g in groups]
            entries[op] = tuple((p.size, p.chosen) for p in last)
            table = mpich.with_entries(table, op, n, [(p.size, p.leaf) for p in last])
    mpich.check_table(table, lib.algorithms)
    for r in rows:  # read back: the file selects what was chosen, at every size asked for
        got = mpich.select(table, r.op, comm_size=n, msg_bytes=r.size_bytes, hierarchy=hierarchy)
        want = next((c.selection for c in _ops.native_choices(r.op, "MPICH") if c.algorithm == r.chosen), None)
        if want is not None and got != want:
            raise InputError(f"internal: the exported table selects {got} for {r.op} at {r.size_bytes} B")
    return MpichSelection(lib.path, lib.version, layout, hierarchy, variants, tuple(rows), entries, table, tuple(notes))


def _mpich_run_line(sel: MpichSelection, json_path: str, hostfile: str | None) -> str:
    unset = " ".join(f"-u {v}" for v in _MPICH_OVERRIDES)
    where = f" -f {hostfile}" if hostfile else ""
    return (
        f"env {unset} MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={json_path} MPIR_CVAR_DEVICE_COLLECTIVES=none "
        f"mpiexec -n {len(sel.layout)}{where} ./app"
    )


def mpich_env_text(sel: MpichSelection, json_path: str, hostfile: str | None = None) -> str:
    """The settings that make MPICH run ``sel``'s file ``json_path``: a file ``sh`` can source, with the one-line
    form (``mpiexec -f hostfile`` when the ranks are to run in an exported order) and how to check it."""
    return (
        f"# MPICH {sel.version or '?'} collective selection by hnow export ({len(sel.layout)} ranks; default table "
        f"from {sel.library}).\n"
        "# Each rank reads the file in MPI_Init: put it at this path on every host. Source this file, or run\n"
        f"#   {_mpich_run_line(sel, json_path, hostfile)}\n"
        "# MPIR_CVAR_<OP>_INTRA_ALGORITHM (other than auto) beats the file, hence the unset; without\n"
        "# MPIR_CVAR_DEVICE_COLLECTIVES=none the ch4 device's own collectives run instead of the file's choice.\n"
        "# Check: MPIR_CVAR_DEBUG_SUMMARY=1 prints the file under 'collective selection' ('MPIR: <path>').\n"
        f"export MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE={json_path}\n"
        "export MPIR_CVAR_DEVICE_COLLECTIVES=none\n"
        f"unset {' '.join(_MPICH_OVERRIDES)}\n"
    )


def _mpich_usage(sel: MpichSelection, json_path: str, hostfile: str | None) -> str:
    from .tables import table_text

    variants = ", ".join(f"{op} {v}" for op, v in sel.variants.items())
    lines = [
        f"MPICH {sel.version or '?'} algorithms for {len(sel.layout)} ranks (root 0), predicted under: {variants}",
        table_text(sel.table_rows()),
    ]
    lines += [f"note: {x}" for x in sel.notes]
    changed = [op for op, e in sel.entries.items() if e]
    name = os.path.basename(json_path)
    lines.append(
        f"{name}: MPICH's default table with {', '.join(changed)} changed for exactly {len(sel.layout)} ranks"
        if changed
        else f"{name}: MPICH's default table, unchanged (its defaults are predicted best)"
    )
    lines.append(f"MPICH: {_mpich_run_line(sel, json_path, hostfile)}   (or source mpich-env.txt)")
    return "\n".join(lines) + "\n"


def export(
    profile: Profile,
    formats: Sequence[str] = ORDER_FORMATS,
    *,
    layout: Sequence[str] | None = None,
    op: str = "bcast",
    size: int = 0,
    tree: str = "binomial",
    ops: Sequence[str] | None = None,
    sizes: Sequence[int] | None = None,
    libmpi: str | Path | None = None,
) -> Export:
    """Every file of ``formats`` (:data:`FORMATS`) in one :class:`Export`: the rank order formats from
    :func:`export_order` (``op``, ``size``, ``tree``; the profile's ``nodes``) and ``mpich-json`` from
    :func:`choose_mpich` (``ops``, default all three; ``sizes``, default ``[size]``; ``layout``, default the
    profile's). With both, the algorithms are chosen for the ranks in the exported order, as they will run."""
    fmts = list(dict.fromkeys(formats))
    for f in fmts:
        if f not in FORMATS:
            raise InputError(f"unknown --format {f!r} (choose from: {', '.join(FORMATS)})")
    if not fmts:
        raise InputError(f"--format: give at least one of {', '.join(FORMATS)}")
    want_order = [f for f in fmts if f in ORDER_FORMATS]
    if want_order and layout is not None:
        raise InputError(
            "--layout: the rank order formats use the profile's nodes (rank, host, type); give --layout with "
            "--format mpich-json alone"
        )
    ex = export_order(profile, op=op, size=size, tree=tree) if want_order else None
    files = {f: ex.files[f] for f in want_order} if ex else {}
    usage = ex.usage if ex else ""
    sel = None
    if "mpich-json" in fmts:
        hosts = None
        if ex is not None:
            types = [nd["type"] for nd in sorted(profile.nodes, key=lambda nd: nd.get("rank", 0))]
            layout = [types[r] for r in ex.order.perm]
            hosts = [ex.hosts[r] for r in ex.order.perm]
        sel = choose_mpich(
            profile,
            layout,
            ops=("bcast", "scatter", "gather") if ops is None else ops,
            sizes=[size] if sizes is None else sizes,
            libmpi=libmpi,
            hosts=hosts,
        )
        path = f"{FOLDER}/{FORMATS['mpich-json']}"
        hostfile = f"{FOLDER}/{FORMATS['hostfile']}" if "hostfile" in files else None
        files["mpich-json"] = json.dumps(sel.table, indent=1) + "\n"
        files["mpich-env"] = mpich_env_text(sel, path, hostfile)
        usage += ("In that rank order:\n" if ex else "") + _mpich_usage(sel, path, hostfile)
    return Export(ex.order if ex else None, ex.hosts if ex else (), files, usage, op, size, tree, sel)
