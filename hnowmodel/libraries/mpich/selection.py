"""MPICH's collective selection JSON: the default table built into ``libmpi``, how MPICH reads a table, and a table
with chosen entries put in.

MPICH (ch4, 5.0.x) picks the algorithm of each collective by walking a JSON tree: at each level the keys are
conditions tried in file order (``comm_size<8``, ``comm_size=pow2``, ``avg_msg_size<=12288``, …, ``…=any``),
the first that holds is followed and nothing is retried; a leaf is ``{"algorithm=NAME": {"param=value": {}}}``.
Its default table is compiled into ``libmpi`` as JSON text; ``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE`` replaces
it **whole** (a file without, say, ``collective=allreduce`` makes that collective assert), so an exported file is
the default table with hnow's entries added (:func:`with_entries`).

Three tables are embedded: the main one (leaves ``algorithm=MPIR_*``: what the file replaces), the ch4 device's
(``composition=MPIDI_*``) and the shared-memory layer's (``algorithm=MPIDI_POSIX_*``); :func:`default_table`
returns the main one. :func:`check_table` refuses what MPICH 5.0's parser would assert on (``csel.c``,
``csel_container.c``): unknown condition keys, a numeric condition with no condition after it, a condition after
``=any``, leaves with more than one key, algorithm names the library does not know, and ``tree_type`` values it
would silently read as ``kary``.

Why this module is in ``hnowmodel`` and not in ``calibrate``: it reads the bytes of the installed library file
(no MPI call, no ``mpi4py``), and ``hnow export`` (in ``hnowmodel``, which never imports ``calibrate``) needs
the table in its own process.

>>> t = {"collective=bcast": {"comm_type=intra": {"comm_size<8": {"algorithm=MPIR_Bcast_intra_binomial": {}},
...      "comm_size=any": {"algorithm=MPIR_Bcast_intra_scatter_ring_allgather": {}}}}}
>>> select(t, "bcast", comm_size=6, msg_bytes=65536)
{'algorithm=MPIR_Bcast_intra_binomial': {}}
>>> new = with_entries(t, "bcast", 16, [(16384, {"algorithm=MPIR_Bcast_intra_binomial": {}})])
>>> select(new, "bcast", comm_size=16, msg_bytes=8192), select(new, "bcast", comm_size=16, msg_bytes=65536)
({'algorithm=MPIR_Bcast_intra_binomial': {}}, {'algorithm=MPIR_Bcast_intra_scatter_ring_allgather': {}})
"""

from __future__ import annotations

import copy
import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import InputError, MPIRunError
from ...mpi_programs import find_launcher
from ...schedules.catalog import ELEM_BYTES

__all__ = [
    "DefaultTable",
    "find_libmpi",
    "embedded_tables",
    "default_table",
    "check_table",
    "select",
    "with_entries",
    "collective",
    "HIERARCHIES",
]

#: What ``comm_hierarchy=…`` sees: ``parent`` (ranks on several nodes, some sharing one), ``flat`` (one rank per
#: node), ``node`` (all ranks on one node). MPICH 5.0 treats every value but ``parent`` as "not a parent comm".
HIERARCHIES = ("flat", "parent", "node")

_START = re.compile(rb'\{\s*"collective=')
_NUMERIC = re.compile(r"^(comm_size|count|avg_msg_size|total_msg_size|comm_avg_ppn)(<=|<)(\d+)$")
_BOOLEAN = {
    "comm_type": ("intra", "inter"),
    "is_multi_threaded": ("yes", "no"),
    "is_commutative": ("yes", "no"),
    "is_sendbuf_inplace": ("yes", "no"),
    "is_op_built_in": ("yes", "no"),
    "is_block_regular": ("yes", "no"),
    "is_node_consecutive": ("yes", "no"),
    "comm_hierarchy": ("parent", "node_roots", "node", "flat"),
}
_SPECIAL = {"comm_size=pow2", "comm_size=node_comm_size", "count<pow2"}
#: ``get_tree_type_from_string`` in MPICH 5.0 reads any other ``tree_type`` as ``kary``, silently.
_TREE_TYPES = ("kary", "knomial_1", "knomial_2")
_LEAF_PREFIXES = ("algorithm=", "composition=")
#: The registry's operations whose MPI call MPICH's selection names otherwise (``collective=NAME``): hnow's
#: reduce_scatter is ``MPI_Reduce_scatter_block``.
_COLLECTIVE = {"reduce_scatter": "reduce_scatter_block"}
#: The collectives whose ``avg_msg_size`` MPICH 5.0 defines (``get_avg_msgsize`` in csel.c asserts for the others:
#: allgather and reduce_scatter_block are selected by ``total_msg_size``, p times the registry's m); scatter and
#: gather as hnow has always read them (only their binomial is modelled, so an export never writes their sizes).
_AVG_SIZED = ("bcast", "scatter", "gather", "allreduce", "reduce", "alltoall")
#: What MPICH needs for an algorithm to run (its ``restrictions`` in src/mpi/coll/coll_algorithms.txt, which the
#: selection does not check: the algorithm asserts or runs wrong), as the conditions that test it: ``(key that
#: holds, key that does not, whether the algorithm is under the first)``. hnow's own calls (MPI_SUM on doubles, no
#: MPI_IN_PLACE) meet them; an application's other calls, and MPICH's own (MPI_Init's allreduce of a few elements),
#: may not: there the previous table runs (:func:`with_entries`).
_BUILT_IN = ("is_op_built_in=yes", "is_op_built_in=no", True)
_COMMUTATIVE = ("is_commutative=yes", "is_commutative=no", True)
_NOT_IN_PLACE = ("is_sendbuf_inplace=no", "is_sendbuf_inplace=yes", True)
_RESTRICTIONS = {
    "algorithm=MPIR_Allreduce_intra_reduce_scatter_allgather": (_BUILT_IN, ("count<pow2", "count=any", False)),
    "algorithm=MPIR_Reduce_intra_reduce_scatter_gather": (_BUILT_IN, ("count<pow2", "count=any", False)),
    "algorithm=MPIR_Allreduce_intra_ring": (_COMMUTATIVE,),
    "algorithm=MPIR_Reduce_scatter_block_intra_recursive_halving": (_COMMUTATIVE,),
    **{f"algorithm=MPIR_Alltoall_intra_{a}": (_NOT_IN_PLACE,) for a in ("brucks", "pairwise", "scattered")},
}


@dataclass(frozen=True)
class DefaultTable:
    """The main selection table of the MPICH library at ``path`` (``version`` from its build paths, '' if not
    found); ``algorithms`` are the ``algorithm=…`` keys the library's parser knows; ``ch4`` is the ch4 device's
    table (leaves ``composition=MPIDI_*``: which composition runs while the device's collectives are on, MPICH's
    default; empty if the library has none)."""

    path: str
    version: str
    table: Mapping[str, Any]
    algorithms: frozenset[str]
    ch4: Mapping[str, Any] = field(default_factory=dict)


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _mpicc_lib_dirs() -> list[Path]:
    """``-L`` folders of ``mpicc -show`` (the ``mpicc`` beside this Python, else on PATH); [] without one."""
    try:
        cc = find_launcher("mpicc")
    except MPIRunError:
        return []
    try:
        out = subprocess.run([cc, "-show"], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return []
    words = shlex.split(out.stdout) if out.returncode == 0 else []
    return [Path(w[2:]) for w in words if w.startswith("-L") and len(w) > 2]


def _candidates() -> list[Path]:
    """Where an MPICH ``libmpi`` may be, in order: the ``mpich`` wheel's files, then ``mpicc -show``'s folders."""
    found: list[Path] = []
    try:
        dist = importlib.metadata.distribution("mpich")
        for f in dist.files or ():
            if Path(str(f)).name.startswith("libmpi.so"):
                found.append(Path(str(dist.locate_file(f))).resolve())
    except importlib.metadata.PackageNotFoundError:
        pass
    for d in _mpicc_lib_dirs():
        found += sorted(d.glob("libmpi.so*"))
    return list(dict.fromkeys(p for p in found if p.is_file() and _is_elf(p)))


def find_libmpi(path: str | os.PathLike | None = None) -> Path:
    """The MPICH ``libmpi`` to read: ``path`` when given, else the ``mpich`` wheel's library, else one in the
    folders of ``mpicc -show``. :class:`InputError` (one line) when there is none."""
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise InputError(f"--libmpi {str(p)!r}: no such file")
        return p
    libs = _candidates()
    if not libs:
        raise InputError(
            "no MPICH library file found (looked at the 'mpich' package's files and mpicc -show's -L folders); "
            "pass --libmpi PATH to the libmpi.so the application runs with"
        )
    return libs[0]


def embedded_tables(data: bytes) -> list[dict[str, Any]]:
    """Every selection table (a JSON object whose first key is ``collective=…``) embedded in ``data``, in order.

    >>> embedded_tables(b'x\\0{"collective=bcast": {"algorithm=A": {}}}\\0y')
    [{'collective=bcast': {'algorithm=A': {}}}]
    """
    out = []
    dec = json.JSONDecoder()
    for m in _START.finditer(data):
        end = data.find(b"\0", m.start())
        chunk = data[m.start() : end if end >= 0 else len(data)]
        try:
            doc, _ = dec.raw_decode(chunk.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(doc, dict):
            out.append(doc)
    return out


def _leaves(node: Any) -> list[str]:
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k.startswith(_LEAF_PREFIXES):
                out.append(k)
            else:
                out += _leaves(v)
    return out


@lru_cache(maxsize=4)
def _read(path: str, mtime_ns: int, size: int) -> DefaultTable:
    data = Path(path).read_bytes()
    tables = embedded_tables(data)
    mains = [t for t in tables if (lv := _leaves(t)) and all(k.startswith("algorithm=MPIR_") for k in lv)]
    ch4 = next((t for t in tables if any(k.startswith("composition=") for k in _leaves(t))), {})
    if not mains:
        raise InputError(f"{path}: not an MPICH library with a collective selection table (MPICH 4.1 or later)")
    algorithms = frozenset(m.decode() for m in re.findall(rb"algorithm=MPIR_[A-Za-z0-9_]+(?=\0)", data))
    version = re.search(rb"/mpich-(\d+\.\d+(?:\.\d+)?[a-z0-9]*)/src/", data)
    return DefaultTable(path, version.group(1).decode() if version else "", mains[0], algorithms, ch4)


def default_table(libmpi: str | os.PathLike | None = None) -> DefaultTable:
    """The main default selection table of the MPICH library :func:`find_libmpi` finds (or ``libmpi``)."""
    p = find_libmpi(libmpi)
    st = p.stat()
    return _read(str(p), st.st_mtime_ns, st.st_size)


# ---- reading a table as MPICH does ----------------------------------------------------------------------------
def _nospace(key: str) -> str:
    return "".join(key.split())  # MPL_strdup_no_spaces


def check_table(doc: Any, algorithms: frozenset[str] | set[str] | None = None) -> None:
    """Raise :class:`InputError` naming the first key of ``doc`` that MPICH 5.0's selection parser would reject
    (it asserts in ``MPI_Init``) or silently misread; ``algorithms``: the ``algorithm=…`` names to accept.

    >>> check_table({"collective=bcast": {"comm_sise<8": {"algorithm=X": {}}}})
    Traceback (most recent call last):
    ...
    hnowmodel.errors.InputError: selection table: collective=bcast/comm_sise<8: MPICH knows no condition 'comm_sise<8'
    """
    if not isinstance(doc, dict) or not doc:
        raise InputError("selection table: must be a non-empty JSON object")
    for key in doc:
        if not _nospace(key).startswith("collective="):
            raise InputError(f"selection table: top-level key {key!r} is not 'collective=NAME'")
    _check_level(doc, (), algorithms)


def _check_level(node: dict, where: tuple[str, ...], algorithms: Any) -> None:
    keys = list(node)
    path = "/".join(where) or "(top)"
    for i, key in enumerate(keys):
        val = node[key]
        at = "/".join((*where, key))
        if not isinstance(val, dict):
            raise InputError(f"selection table: {at}: must be a JSON object")
        ck = _nospace(key)
        if ck.startswith(_LEAF_PREFIXES):
            if len(keys) != 1:
                raise InputError(f"selection table: {path}: a leaf holds one 'algorithm=…' key, found {keys}")
            if algorithms is not None and ck.startswith("algorithm=") and ck not in algorithms:
                raise InputError(f"selection table: {at}: the MPICH library knows no algorithm {ck[10:]!r}")
            _check_params(ck, val, at)
            return
        last = i == len(keys) - 1
        if ck == "any" or ck.endswith("=any"):
            if not last:
                raise InputError(f"selection table: {at}: nothing may follow an '=any' condition")
        elif _NUMERIC.match(ck) or ck in _SPECIAL:
            if last:
                raise InputError(
                    f"selection table: {at}: a numeric condition needs another condition after it "
                    "(end the list with '...=any')"
                )
        else:
            name, _, value = ck.partition("=")
            if name != "collective" and value not in _BOOLEAN.get(name, ()):
                raise InputError(f"selection table: {at}: MPICH knows no condition {key!r}")
        if not val:
            raise InputError(f"selection table: {at}: a condition needs a condition or an algorithm under it")
        _check_level(val, (*where, key), algorithms)


def _check_params(leaf: str, params: dict, at: str) -> None:
    seen = {}
    for p, v in params.items():
        name, eq, value = _nospace(p).partition("=")
        if not eq or v != {}:
            raise InputError(f"selection table: {at}/{p}: a parameter is a key 'name=value' holding {{}}")
        seen[name] = value
    if leaf == "algorithm=MPIR_Bcast_intra_tree":
        if seen.get("tree_type") not in _TREE_TYPES:
            raise InputError(f"selection table: {at}: tree_type must be one of {', '.join(_TREE_TYPES)}")
        for name in ("k", "is_non_blocking"):
            if not seen.get(name, "").isdigit():  # MPICH leaves an unset parameter uninitialised
                raise InputError(f"selection table: {at}: needs '{name}=N' (a whole number)")


#: The conditions ``MPIR_Csel_prune`` resolves once, when a communicator is made (``prune_tree`` in csel.c: the
#: communicator's own facts and ``…=any``; the collective's level is pruned the same way), walking each level's keys
#: in order up to the first it cannot resolve; ``MPIR_Csel_search`` tests the rest at each call.
_PRUNED = re.compile(r"^(collective=|comm_type=|comm_size|comm_hierarchy=|is_node_consecutive=|comm_avg_ppn)|=any$")


def _pruned(ck: str) -> bool:
    """Whether MPICH's pruning resolves the condition ``ck`` (spaces removed).

    >>> _pruned("comm_size<8"), _pruned("comm_hierarchy=any"), _pruned("avg_msg_size=any"), _pruned("count<pow2")
    (True, True, True, False)
    """
    return ck == "any" or bool(_PRUNED.search(ck))


def _holds(ck: str, facts: Mapping[str, Any], pruning: bool = True) -> bool:
    """Whether ``ck`` holds for ``facts``; ``pruning``: tested by ``MPIR_Csel_prune`` (else by ``MPIR_Csel_search``).

    >>> f = {"collective": "bcast", "comm_size": 8, "hierarchy": "flat"}
    >>> _holds("comm_size<8", f), _holds("comm_size<8", f, pruning=False), _holds("comm_size<=7", f, False)
    (False, True, False)
    """
    if ck == "any" or ck.endswith("=any"):
        return True
    m = _NUMERIC.match(ck)
    if m and m.group(1) in facts:
        value = facts[m.group(1)]
        bound = int(m.group(3))
        # MPICH 5.0's MPIR_Csel_search tests comm_size<N as local_size <= N (csel.c, COMM_SIZE_LT), its prune_tree
        # as written; the others as written by both
        le = m.group(2) == "<=" or (m.group(1) == "comm_size" and not pruning)
        return value <= bound if le else value < bound
    n = facts["comm_size"]
    if ck == "comm_size=pow2":
        return n > 0 and n & (n - 1) == 0
    if ck == "comm_size=node_comm_size":
        return facts["hierarchy"] == "node"
    if ck == "count<pow2" and "count" in facts:
        return facts["count"] < 1 << (n.bit_length() - 1)  # the largest power of two <= the communicator's size
    name, _, value = ck.partition("=")
    if name in facts and name.startswith("is_"):  # is_commutative, is_op_built_in, is_sendbuf_inplace
        return facts[name] == (value == "yes")
    if name == "collective":
        return value == facts["collective"]
    if name == "comm_type":
        return value == "intra"
    if name == "comm_hierarchy":
        return (facts["hierarchy"] == "parent") == (value == "parent")
    if name == "is_multi_threaded":
        return value == "no"
    raise InputError(f"selection table: cannot evaluate the condition {ck!r} for {facts['collective']}")


def collective(op: str) -> str:
    """The name MPICH's selection gives the registry's ``op`` (``collective=NAME``).

    >>> collective("reduce_scatter"), collective("allreduce")
    ('reduce_scatter_block', 'allreduce')
    """
    return _COLLECTIVE.get(op, op)


def _facts(op: str, comm_size: int, msg_bytes: int, hierarchy: str) -> dict[str, Any]:
    """What MPICH's selection tests, for hnow's own call of ``op`` with ``msg_bytes`` as the registry's ``m``:
    reductions are MPI_SUM (built in, commutative) on doubles (``count`` = m / 8), allgather's count is its m bytes,
    no send buffer is MPI_IN_PLACE; a condition MPICH does not define for the collective is left out (it asserts)."""
    n, m = comm_size, msg_bytes
    facts: dict[str, Any] = {"collective": collective(op), "comm_size": n, "hierarchy": hierarchy}
    if op in ("bcast", "scatter", "gather"):
        return {**facts, "avg_msg_size": m, "total_msg_size": m if op == "bcast" else m * n}
    facts["total_msg_size"] = m * n
    if op in _AVG_SIZED:
        facts["avg_msg_size"] = m
    if op in ("allreduce", "reduce", "reduce_scatter"):
        facts.update(count=m // ELEM_BYTES, is_commutative=True)
    if op in ("allreduce", "reduce"):
        facts["is_op_built_in"] = True
    if op == "allgather":
        facts["count"] = m
    if op == "alltoall":
        facts["is_sendbuf_inplace"] = False
    return facts


def select(
    doc: Mapping[str, Any], op: str, *, comm_size: int, msg_bytes: int, hierarchy: str = "flat"
) -> dict[str, Any] | None:
    """The leaf (``{"algorithm=…": {params}}``) MPICH picks from ``doc`` for ``op`` (a registry name) on an
    intra-communicator of ``comm_size`` ranks with ``msg_bytes`` the registry's m (bcast: the message;
    scatter/gather/allgather/alltoall: one block; reduce/allreduce: the vector; reduce_scatter: one result block),
    single threaded, for hnow's own call (:func:`_facts`: MPI_SUM on doubles, not in place); None when no branch
    matches (MPICH would assert). Conditions that need more than that (``comm_avg_ppn``, an allgather's
    ``avg_msg_size``, …) raise :class:`InputError`. A ``comm_size<N`` is tested as MPICH tests it where it stands
    (:func:`_holds`): as written up to the first condition of the walk pruning cannot resolve (:func:`_pruned`:
    bcast's ``comm_size<8``, so its scatter + allgather from 8 ranks), as ``<= N`` below one (alltoall's, under
    ``is_sendbuf_inplace``: 8 ranks are "<8").

    >>> t = {"collective=allreduce": {"comm_type=intra": {
    ...      "count<pow2": {"algorithm=A": {}}, "count=any": {"algorithm=B": {}}}}}
    >>> select(t, "allreduce", comm_size=4, msg_bytes=24), select(t, "allreduce", comm_size=4, msg_bytes=32)
    ({'algorithm=A': {}}, {'algorithm=B': {}})
    >>> u = {"collective=bcast": {"comm_size<8": {"algorithm=A": {}}, "avg_msg_size<=64": {
    ...      "comm_size<8": {"algorithm=B": {}}, "comm_size=any": {"algorithm=C": {}}}}}
    >>> select(u, "bcast", comm_size=8, msg_bytes=16), select(u, "bcast", comm_size=9, msg_bytes=16)
    ({'algorithm=B': {}}, {'algorithm=C': {}})
    """
    if hierarchy not in HIERARCHIES:
        raise InputError(f"hierarchy must be one of {', '.join(HIERARCHIES)}, got {hierarchy!r}")
    facts = _facts(op, comm_size, msg_bytes, hierarchy)
    node: Any = doc
    pruning = True  # MPIR_Csel_prune's part of the walk, until its first condition it cannot resolve
    while isinstance(node, dict) and node:
        for key, val in node.items():
            ck = _nospace(key)
            if ck.startswith(_LEAF_PREFIXES):
                return {key: copy.deepcopy(val)}
            pruning = pruning and _pruned(ck)
            if _holds(ck, facts, pruning):
                node = val
                break
        else:
            return None
    return None


def _size_key(op: str, comm_size: int) -> tuple[str, int]:
    """The size condition ``op``'s entries test and the factor from the registry's m to its value."""
    return ("avg_msg_size", 1) if op in _AVG_SIZED else ("total_msg_size", comm_size)


def _guarded(leaf: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """``leaf`` behind the conditions MPICH needs to run it (:data:`_RESTRICTIONS`), ``old`` where they fail.

    >>> _guarded({"algorithm=MPIR_Allreduce_intra_ring": {}}, {"algorithm=OLD": {}})
    {'is_commutative=yes': {'algorithm=MPIR_Allreduce_intra_ring': {}}, 'is_commutative=no': {'algorithm=OLD': {}}}
    """
    node: dict[str, Any] = copy.deepcopy(dict(leaf))
    for holds, fails, leaf_first in reversed(_RESTRICTIONS.get(_nospace(next(iter(leaf), "")), ())):
        other = copy.deepcopy(dict(old))
        node = {holds: node, fails: other} if leaf_first else {holds: other, fails: node}
    return node


def with_entries(
    doc: Mapping[str, Any], op: str, comm_size: int, ranges: Sequence[tuple[int, Mapping[str, Any]]]
) -> dict[str, Any]:
    """A copy of ``doc`` in which ``op`` (a registry name) on an intra-communicator of exactly ``comm_size`` ranks
    runs ``ranges[i][1]`` (a leaf) for messages up to ``ranges[i][0]`` bytes (the registry's m, ascending), and
    whatever ``doc`` ran before for larger messages and for every other communicator size.

    The intra-communicator subtree becomes ``{"comm_size<=n-1": OLD, "comm_size<=n": {"avg_msg_size<=N": leaf, …,
    "avg_msg_size=any": OLD}, "comm_size=any": OLD}`` (OLD: the previous subtree, unchanged). Allgather and
    reduce_scatter (``collective=reduce_scatter_block``) test ``total_msg_size<=n·N`` instead (MPICH defines no
    ``avg_msg_size`` for them); a leaf MPICH runs only under conditions (a commutative or built-in op, at least
    as many elements as the largest power of two <= n, no MPI_IN_PLACE) sits behind them, OLD where they fail.

    >>> t = {"collective=allgather": {"comm_type=intra": {"algorithm=MPIR_Allgather_intra_ring": {}}}}
    >>> new = with_entries(t, "allgather", 4, [(1024, {"algorithm=MPIR_Allgather_intra_brucks": {}})])
    >>> list(new["collective=allgather"]["comm_type=intra"]["comm_size<=4"])
    ['total_msg_size<=4096', 'total_msg_size=any']
    """
    if comm_size < 2:
        raise InputError(f"an export needs a communicator of at least 2 ranks, got {comm_size}")
    bounds = [int(b) for b, _ in ranges]
    if not ranges or bounds != sorted(set(bounds)):
        raise InputError("entries must be a non-empty list of (bytes, leaf) with increasing byte bounds")
    out = copy.deepcopy(dict(doc))
    key = f"collective={collective(op)}"
    coll = out.get(key)
    if not isinstance(coll, dict) or not isinstance(coll.get("comm_type=intra"), dict):
        raise InputError(f"selection table: no '{key}' / 'comm_type=intra' entry to put the choice under")
    old = coll["comm_type=intra"]
    size, factor = _size_key(op, comm_size)
    mine: dict[str, Any] = {f"{size}<={b * factor}": _guarded(leaf, old) for b, leaf in ranges}
    mine[f"{size}=any"] = copy.deepcopy(old)
    coll["comm_type=intra"] = {
        f"comm_size<={comm_size - 1}": copy.deepcopy(old),
        f"comm_size<={comm_size}": mine,
        "comm_size=any": old,
    }
    return out


if __name__ == "__main__":  # pragma: no cover - print the default table of this installation
    json.dump(default_table(sys.argv[1] if len(sys.argv) > 1 else None).table, sys.stdout, indent=1)
