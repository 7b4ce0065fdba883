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

**Open MPI's algorithm per operation and message size** (:func:`choose_ompi`, format ``ompi-rules``). The same
choice among what Open MPI's coll/tuned can be told to run by a rules file (bcast basic_linear, pipeline, chain
with 1..8 chains, binary_tree, binomial, knomial with the default radix 4; scatter and gather basic_linear and
binomial; no segmentation), against what Open MPI's fixed rules run there (:mod:`hnowmodel.ompi_rules`).
``ompi-rules.conf`` (Open MPI 5.0.x's text format, checked as Open MPI reads it, which otherwise drops a bad
file without a word) changes communicators of exactly that many ranks and hands every other case - sizes above
the largest one asked for, other communicator sizes, sizes where the default is kept - back to the fixed rules
(algorithm 0). ``ompi-env.txt`` has the settings that make Open MPI use it.

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
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from . import mpich, ompi_rules
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
    "OmpiSelection",
    "OMPI_RULES_FORMAT",
    "choose_ompi",
    "ompi_env_text",
]

#: What :func:`export` writes: format name -> file name (``mpich-json`` also writes ``mpich-env.txt``,
#: ``ompi-rules`` ``ompi-env.txt``).
FORMATS: Mapping[str, str] = {
    "hostfile": "hostfile",
    "rankfile": "rankfile",
    "keys": "keys.json",
    "mpich-json": "mpich-coll.json",
    "ompi-rules": "ompi-rules.conf",
}
#: The formats that carry a rank order (from :func:`export_order`).
ORDER_FORMATS = ("hostfile", "rankfile", "keys")
_FILE_NAMES = {**FORMATS, "mpich-env": "mpich-env.txt", "ompi-env": "ompi-env.txt"}
#: Stands for the output folder in texts made before it is known (:meth:`Export.placed` fills it in).
FOLDER = "<DIR>"
#: Control variables that beat MPICH's selection file for the operations hnow exports.
_MPICH_OVERRIDES = tuple(f"MPIR_CVAR_{op.upper()}_INTRA_ALGORITHM" for op in ("bcast", "scatter", "gather"))
#: The rules-file format :func:`choose_ompi` writes: version 1 of Open MPI 5.0.x's text format (read by every 5.0.x;
#: the version line and max_requests, which only alltoall reads, arrived in 5.0.7).
OMPI_RULES_FORMAT = "Open MPI 5.0.x coll/tuned rules, version 1"
#: MCA parameters (as environment variables) that beat the rules file for the operations hnow exports.
_OMPI_OVERRIDES = tuple(f"OMPI_MCA_coll_tuned_{op}_algorithm" for op in ("bcast", "scatter", "gather"))


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
        return _table_rows(self.rows, {op for op, e in self.entries.items() if e})


def _table_rows(rows: Sequence[NativeChoice], changed: set[str]) -> list[dict[str, Any]]:
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
            "entries": {
                op: [{"from_bytes": a, "upto_bytes": b, "algorithm": alg} for a, b, alg in ent]
                for op, ent in self.entries.items()
            },
            "notes": list(self.notes),
        }

    def table_rows(self) -> list[dict[str, Any]]:
        """The rows as a readable table: per op and size range, default and chosen algorithm, µs, gain %."""
        return _table_rows(self.rows, {op for op, e in self.entries.items() if e})


@dataclass(frozen=True)
class Export:
    """What :func:`export` made: the files' texts by format (``files``; paths inside them say :data:`FOLDER` until
    :meth:`placed`), ``usage`` (how to use each file), and what they were made from: ``order`` (a rank order:
    permutation, split keys, predicted µs before/after; None without an order format) with ``hosts[r]`` the host
    rank r ran on in the profile, ``selection`` (MPICH's algorithms; None without ``mpich-json``) and ``ompi``
    (Open MPI's; None without ``ompi-rules``)."""

    order: RankOrder | None
    hosts: tuple[str, ...]
    files: Mapping[str, str]
    usage: str
    op: str
    size: int
    tree: str
    selection: MpichSelection | None = None
    ompi: OmpiSelection | None = None

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"op": self.op, "size": self.size, "tree": self.tree}
        if self.order is not None:
            doc.update(self.order.to_dict())
            doc["hosts"] = [self.hosts[r] for r in self.order.perm]
        if self.selection is not None:
            doc["mpich"] = self.selection.to_dict()
        if self.ompi is not None:
            doc["ompi"] = self.ompi.to_dict()
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
    with :data:`FOLDER` replaced by the folder's path; returns file key (format, ``mpich-env``, ``ompi-env``,
    ``usage``) -> path."""
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
                f"--sizes: {m!r} is not a size an algorithm is chosen for (whole bytes >= 1; an empty collective "
                "returns at once)"
            )
    return [int(m) for m in out]


@dataclass(frozen=True)
class _Pick:
    size: int
    chosen: str
    leaf: Any  # what the file says for this size: an MPICH selection leaf, an Open MPI rule
    default: str
    default_us: float | None
    chosen_us: float | None
    cand_us: Mapping[str, float]


def _export_layout(profile: Profile, layout: Sequence[str] | None) -> tuple[tuple[str, ...], list[str] | None]:
    """``layout`` checked (default: the profile's calibration layout) and, for the profile's own layout, the hosts
    its ``nodes`` record (None when they do not)."""
    hosts = None
    if layout is None:
        layout = profile.layout
        if not layout:
            raise InputError("--layout is required (the profile records no calibration layout)")
        nodes = sorted(profile.nodes, key=lambda nd: nd.get("rank", 0))
        if nodes and all("host" in nd for nd in nodes):
            hosts = [str(nd["host"]) for nd in nodes]
    out = tuple(parse_layout(list(layout), profile.type_names))
    if len(out) < 2:
        raise InputError(f"--layout: an export needs at least 2 ranks, got {len(out)}")
    return out, hosts


def _op_names(ops: Sequence[str], library: str) -> list[str]:
    names = list(dict.fromkeys(ops))
    if not names:
        raise InputError("--ops: give at least one operation")
    for op in names:
        if not _ops.native_choices(op, library):
            raise InputError(f"--ops: hnow does not model {library}'s own {op}")
    return names


def _distinct(
    op: str, choices: Sequence[_ops.NativeAlgorithm], n: int
) -> tuple[list[_ops.NativeAlgorithm], dict[str, str]]:
    """The algorithms of ``choices`` that run differently on ``n`` ranks (kary:K for every K >= n-1 is one tree,
    ...: predicted and offered once, the first in registry order), and each algorithm's representative."""
    cands: list[_ops.NativeAlgorithm] = []
    keys: list[Any] = []
    alias: dict[str, str] = {}
    for nat in choices:
        kw = _ops.native_kwargs(op, nat, _ops.NETWORK_VARIANT)  # everything a predictor is told
        key = (make_tree(nat.model_tree, n), json.dumps(kw, sort_keys=True))
        same = next((c for c, k in zip(cands, keys, strict=True) if k == key), None)
        alias[nat.algorithm] = nat.algorithm if same is None else same.algorithm
        if same is None:
            keys.append(key)
            cands.append(nat)
    return cands, alias


def _predict_all(
    op: str, library: str, profile: Profile, layout: Sequence[str], sizes: Sequence[int], variant: str, cands: Any
) -> dict[str, np.ndarray]:
    return {
        nat.algorithm: _ops.native_predict(op, library, profile, layout, sizes, variant=variant, algorithm=nat)
        for nat in cands
    }


def _fastest(cand_us: Mapping[str, float], default: str) -> str:
    """The fastest candidate; ties go to ``default``, then to the registry's order."""
    order = list(cand_us)
    return min(order, key=lambda a: (cand_us[a], a != default, order.index(a)))


def _ranges(op: str, picked: Sequence[_Pick]) -> tuple[list[NativeChoice], list[tuple[int, int, _Pick]]]:
    """Adjacent sizes with the same leaf make one range, from just above the previous range (0 for the first) up
    to its largest size: the rows, and ``(from_bytes, upto_bytes, pick)`` per range."""
    groups: list[list[_Pick]] = []
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
    layout, own_hosts = _export_layout(profile, layout)
    hosts = own_hosts if hosts is None else hosts
    n = len(layout)
    if hosts is None:
        notes.append("hosts unknown: one rank per node assumed (comm_hierarchy flat)")
        hierarchy = "flat"
    else:
        if len(hosts) != n:
            raise InputError(f"hosts: {len(hosts)} hosts for {n} ranks")
        hierarchy = _hierarchy(hosts)
    op_names = _op_names(ops, "MPICH")
    size_list = _sizes(sizes)
    lib = mpich.default_table(libmpi)
    table: Mapping[str, Any] = lib.table
    rows: list[NativeChoice] = []
    entries: dict[str, tuple[tuple[int, str], ...]] = {}
    variants: dict[str, str] = {}
    for op in op_names:
        variant = _ops.default_variant(op, profile)
        variants[op] = variant
        choices = _ops.native_choices(op, "MPICH")
        cands, alias = _distinct(op, choices, n)
        times = _predict_all(op, "MPICH", profile, layout, size_list, variant, cands)
        by_leaf = {json.dumps(nat.selection, sort_keys=True): nat for nat in choices}
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
            best = _fastest(cand_us, d_alg)
            if best == d_alg:
                best, leaf_out = dflt.algorithm, leaf
            else:
                leaf_out = dict(next(c for c in cands if c.algorithm == best).selection)
            picked.append(_Pick(m, best, leaf_out, dflt.algorithm, cand_us[d_alg], cand_us[alias[best]], cand_us))
        op_rows, ranges = _ranges(op, picked)
        rows += op_rows
        if all(p.chosen == p.default for p in picked):
            entries[op] = ()
        else:
            last = [p for _, _, p in ranges]
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


def _usage(
    library: str, version: str, sel: Any, path: str, base: str, unchanged: str, run_line: str, env_file: str
) -> str:
    """The usage text of ``library``'s algorithm selection ``sel`` written to ``path``: the table of choices, the
    notes, what the file changes against the library's ``base`` rules (or ``unchanged``), and the launch line."""
    from .tables import table_text

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


def _mpich_usage(sel: MpichSelection, json_path: str, hostfile: str | None) -> str:
    return _usage(
        "MPICH",
        sel.version or "?",
        sel,
        json_path,
        "MPICH's default table",
        "MPICH's default table, unchanged (its defaults are predicted best)",
        _mpich_run_line(sel, json_path, hostfile),
        "mpich-env.txt",
    )


# ---- Open MPI's algorithms ---------------------------------------------------------------------------------------
_OMPI_RADIX = "OMPI_MCA_coll_tuned_bcast_algorithm_knomial_radix"
_OMPI_SCATTER_NOTE = (
    "scatter: Open MPI looks the file up with the send count and type on every rank, which MPI reads at the root "
    "only: every rank must pass the root's (a rank passing 0, as mpi4py's comm.Scatter does on the other ranks, "
    "takes the rule for 0 B, runs another algorithm than the root, and the scatter crashes or hangs)"
)


def _layout_summary(layout: Sequence[str]) -> str:
    counts = {t: layout.count(t) for t in dict.fromkeys(layout)}
    kinds = ", ".join(f"{c} {t}" for t, c in counts.items())
    return f"{kinds} ({' '.join(layout)})" if len(layout) <= 16 else kinds


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
    root 0) against the one Open MPI's fixed rules run there (:func:`hnowmodel.ompi_rules.default_algorithm`), and
    the rules file that runs the choices for a communicator of exactly that many ranks (:mod:`hnowmodel.ompi_rules`).
    Where the default is chosen, or is an algorithm hnow does not model (kept, with a note), the file says
    "fixed rules" (algorithm 0), as it does above the largest size and for every other communicator size. The
    text is read back as Open MPI reads it: every size must run what was chosen, and everything else the
    default."""
    notes: list[str] = []
    layout, _ = _export_layout(profile, layout)
    n = len(layout)
    op_names = _op_names(ops, "Open MPI")
    size_list = _sizes(sizes)
    fixed = ompi_rules.FIXED
    rows: list[NativeChoice] = []
    entries: dict[str, tuple[tuple[int, int, str], ...]] = {}
    variants: dict[str, str] = {}
    per_op: dict[str, list[tuple[int, tuple[int, int, int]]]] = {}
    want: list[tuple[str, int, tuple[int, int, int]]] = []  # (op, size, what must run there)
    for op in op_names:
        variant = _ops.default_variant(op, profile)
        variants[op] = variant
        choices = [c for c in _ops.native_choices(op, "Open MPI") if c.rule]
        cands, alias = _distinct(op, choices, n)
        times = _predict_all(op, "Open MPI", profile, layout, size_list, variant, cands)
        by_rule = {tuple(c.rule): c for c in choices}
        picked: list[_Pick] = []
        for i, m in enumerate(size_list):
            number = ompi_rules.default_algorithm(op, n, m)
            cand_us = {name: float(t[i]) for name, t in times.items()}
            dflt = by_rule.get(ompi_rules.canonical(op, number))
            if dflt is None:
                name = ompi_rules.algorithm_name(op, number)
                notes.append(f"{op} at {format_size(m)}: Open MPI's default {name} ({number}) is not modelled; kept")
                picked.append(_Pick(m, name, fixed, name, None, None, cand_us))
                want.append((op, m, ompi_rules.runs(None, op, n, m)))
                continue
            d_alg = alias[dflt.algorithm]
            best = _fastest(cand_us, d_alg)
            if best == d_alg:
                picked.append(_Pick(m, dflt.algorithm, fixed, dflt.algorithm, cand_us[d_alg], cand_us[d_alg], cand_us))
                want.append((op, m, ompi_rules.runs(None, op, n, m)))
            else:
                rule = tuple(next(c for c in cands if c.algorithm == best).rule)
                picked.append(_Pick(m, best, rule, dflt.algorithm, cand_us[d_alg], cand_us[best], cand_us))
                want.append((op, m, ompi_rules.canonical(op, *rule)))
        op_rows, ranges = _ranges(op, picked)
        rows += op_rows
        entries[op] = tuple((lo, hi, p.chosen) for lo, hi, p in ranges if p.leaf != fixed)
        if entries[op]:
            per_op[op] = [(lo, tuple(p.leaf)) for lo, _, p in ranges] + [(ranges[-1][1] + 1, fixed)]
    if entries.get("scatter"):
        notes.append(_OMPI_SCATTER_NOTE)
    rules = ompi_rules.for_comm_size(n, per_op)
    header = [
        f"Open MPI coll/tuned rules written by hnow export ({OMPI_RULES_FORMAT}).",
        f"Chosen for communicators of exactly {n} ranks, root 0: {_layout_summary(layout)}.",
        "Read with OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_dynamic_rules_filename=<this file>",
        "(ompi-env.txt has every setting). Algorithm 0 hands a range to Open MPI's fixed rules (its default).",
        "Message sizes: bytes for bcast; block bytes x ranks for scatter and gather (send count x type, every rank).",
        *(
            f"{op} {format_size(lo)}-{format_size(hi)}{'' if op == 'bcast' else ' per rank'}: {alg}"
            for op, ent in entries.items()
            for lo, hi, alg in ent
        ),
    ]
    text = ompi_rules.format_rules(rules, header)
    back = ompi_rules.validate(text)
    if back != rules:
        raise InputError("internal: the rules file does not read back as written")
    for op, m, must in want:  # read back: every size runs what was chosen, or the default
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
    return OmpiSelection(layout, variants, tuple(rows), entries, rules, text, tuple(notes))


def _ompi_settings(sel: OmpiSelection, rules_path: str) -> dict[str, str]:
    env = {
        "OMPI_MCA_coll_tuned_use_dynamic_rules": "1",
        "OMPI_MCA_coll_tuned_dynamic_rules_filename": rules_path,
        "OMPI_MCA_coll": "^han",
    }
    if sel.uses_knomial:
        env[_OMPI_RADIX] = str(_ops.OMPI_KNOMIAL_RADIX)
    return env


def _ompi_run_line(sel: OmpiSelection, rules_path: str, rankfile: str | None) -> str:
    unset = " ".join(f"-u {v}" for v in _OMPI_OVERRIDES)
    sets = " ".join(f"{k}={v}" for k, v in _ompi_settings(sel, rules_path).items())
    where = f" --map-by rankfile:file={rankfile}" if rankfile else ""
    return f"env {unset} {sets} mpirun -n {len(sel.layout)}{where} ./app"


def ompi_env_text(sel: OmpiSelection, rules_path: str, rankfile: str | None = None) -> str:
    """The settings that make Open MPI run ``sel``'s rules file ``rules_path``: a file ``sh`` can source, with the
    one-line form (``mpirun --map-by rankfile:file=…`` when the ranks are to run in an exported order) and how to
    check what ran."""
    lines = [
        f"# Open MPI coll/tuned rules by hnow export ({len(sel.layout)} ranks; {OMPI_RULES_FORMAT}).",
        "# Every rank reads the file when coll/tuned opens (MPI_Init): put it at this path on every host. mpirun",
        "# passes OMPI_* variables on to every host by itself. Source this file, or run",
        f"#   {_ompi_run_line(sel, rules_path, rankfile)}",
        "# OMPI_MCA_coll_tuned_<op>_algorithm (other than 0) beats the file, hence the unset; coll/han, which sits",
        "# above tuned, would run multi-node collectives as steps on sub-communicators of other sizes, where the",
        "# file's rules do not apply: hence coll ^han (for the whole job: every collective then comes from tuned).",
    ]
    if sel.uses_knomial:
        lines.append(f"# The file's knomial bcast was chosen with radix {_ops.OMPI_KNOMIAL_RADIX}, an MCA parameter.")
    if any(op == "scatter" for op, e in sel.entries.items() if e):
        lines += ["# " + x for x in textwrap.wrap(_OMPI_SCATTER_NOTE, 110)]
    lines += [
        "# Open MPI ignores a missing or unreadable rules file without a word (hnow checked this one). To see what",
        "# ran, add --mca pml_monitoring_enable 2 --mca pml_monitoring_enable_output 2 to mpirun: every rank prints",
        "# the bytes it sent to each other rank.",
        *(f"export {k}={v}" for k, v in _ompi_settings(sel, rules_path).items()),
        f"unset {' '.join(_OMPI_OVERRIDES)}",
    ]
    return "\n".join(lines) + "\n"


def _ompi_usage(sel: OmpiSelection, rules_path: str, rankfile: str | None) -> str:
    return _usage(
        "Open MPI",
        "5.0.x",
        sel,
        rules_path,
        "Open MPI's fixed rules",
        "no changes (Open MPI's fixed rules are predicted best)",
        _ompi_run_line(sel, rules_path, rankfile),
        "ompi-env.txt",
    )


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
    :func:`export_order` (``op``, ``size``, ``tree``; the profile's ``nodes``), ``mpich-json`` from
    :func:`choose_mpich` and ``ompi-rules`` from :func:`choose_ompi` (``ops``, default all three; ``sizes``,
    default ``[size]``; ``layout``, default the profile's). With a rank order too, the algorithms are chosen for
    the ranks in the exported order, as they will run."""
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
            "--format mpich-json or ompi-rules alone"
        )
    ex = export_order(profile, op=op, size=size, tree=tree) if want_order else None
    files = {f: ex.files[f] for f in want_order} if ex else {}
    usage = ex.usage if ex else ""
    sel = osel = None
    hosts = None
    if ex is not None:
        types = [nd["type"] for nd in sorted(profile.nodes, key=lambda nd: nd.get("rank", 0))]
        layout = [types[r] for r in ex.order.perm]
        hosts = [ex.hosts[r] for r in ex.order.perm]
    op_list = ("bcast", "scatter", "gather") if ops is None else ops
    size_list = [size] if sizes is None else sizes
    if "mpich-json" in fmts:
        sel = choose_mpich(profile, layout, ops=op_list, sizes=size_list, libmpi=libmpi, hosts=hosts)
        path = f"{FOLDER}/{FORMATS['mpich-json']}"
        hostfile = f"{FOLDER}/{FORMATS['hostfile']}" if "hostfile" in files else None
        files["mpich-json"] = json.dumps(sel.table, indent=1) + "\n"
        files["mpich-env"] = mpich_env_text(sel, path, hostfile)
        usage += ("In that rank order:\n" if ex else "") + _mpich_usage(sel, path, hostfile)
    if "ompi-rules" in fmts:
        osel = choose_ompi(profile, layout, ops=op_list, sizes=size_list)
        path = f"{FOLDER}/{FORMATS['ompi-rules']}"
        rankfile = f"{FOLDER}/{FORMATS['rankfile']}" if "rankfile" in files else None
        files["ompi-rules"] = osel.text
        files["ompi-env"] = ompi_env_text(osel, path, rankfile)
        usage += ("In that rank order:\n" if ex else "") + _ompi_usage(osel, path, rankfile)
    return Export(ex.order if ex else None, ex.hosts if ex else (), files, usage, op, size, tree, sel, osel)
