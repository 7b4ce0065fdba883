"""The reduction cost γ per node type: what combining two buffers costs a rank (the compute part of a reduction).

:func:`measure` (every rank, collective) times ``MPI_Reduce_local`` (``MPI_SUM`` on ``MPI_DOUBLE``: the C kernel
``hk_reduce``, :meth:`calibrate.ckernels.Kernels.reduce_local`) on one rank of each node type at a time while every
other rank sleeps (two busy ranks on two cores would time each other), at sizes from
:data:`~calibrate.protocol.REDUCE_MIN_BYTES` to :data:`~calibrate.protocol.REDUCE_MAX_BYTES`, in rounds (the
sizes' order alternating) so that the machine's drift is common to all sizes; a size's value is the median over
rounds of each round's median µs per call. :func:`fit` (rank 0) fits the piecewise lines ``G(m) = Gc + Gm·m``
with :func:`calibrate.fit.fit_piecewise` (regimes from the data: in cache, out of cache; standard errors and 95 %
CIs) and returns the profile's ``extensions.reduce`` entry (docs/file-formats.md, "Reduction cost") and its
provenance, with the self-check (:func:`calibrate.selfcheck.reduce_self_check`: the profile's entry, read back,
against the medians it was fitted on). :func:`run_sum_reference` runs the
outside reference, a plain C loop (``kernels/sum_ref.c``, no MPI). Sizes in bytes, times in µs.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Sequence
from typing import Any

import numpy as np

from .fit import fit_piecewise, log_grid
from .protocol import (
    PAIR_BYSTANDER_SLEEP_S,
    REDUCE_MAX_BYTES,
    REDUCE_MAX_CALLS,
    REDUCE_MIN_BYTES,
    REDUCE_REPS,
    REDUCE_ROUNDS,
    REDUCE_SAMPLE_BYTES,
)
from .selfcheck import reduce_self_check
from .transport import sleep_wait

__all__ = ["reduce_sizes", "calls_for", "measure", "fit", "attach", "run_sum_reference"]

#: What is combined: ``MPI_SUM`` on ``MPI_DOUBLE`` (8-byte elements).
OP, DATATYPE, ELEMENT_BYTES = "sum", "double", 8


def reduce_sizes(quick: bool, lo: int = REDUCE_MIN_BYTES, hi: int = REDUCE_MAX_BYTES) -> list[int]:
    """The buffer sizes timed (bytes, whole doubles): a log grid from ``lo`` to ``hi``, three per octave (one with
    ``quick``), each rounded to a multiple of 8 bytes.

    >>> reduce_sizes(True, 1024, 8192)
    [1024, 2048, 4096, 8192]
    >>> reduce_sizes(False, 1024, 2048)
    [1024, 1288, 1624, 2048]
    """
    grid = log_grid(lo, hi, 1 if quick else 3)
    return sorted({max(ELEMENT_BYTES, ELEMENT_BYTES * round(m / ELEMENT_BYTES)) for m in grid})


def calls_for(m: int) -> int:
    """Calls back to back in one repetition at ``m`` bytes (:data:`~calibrate.protocol.REDUCE_SAMPLE_BYTES` worth).

    >>> calls_for(1024), calls_for(1 << 20)
    (1024, 1)
    """
    return int(min(REDUCE_MAX_CALLS, max(1, math.ceil(REDUCE_SAMPLE_BYTES / max(m, 1)))))


def measure(k: Any, comm: Any, rt: Any, layout: Sequence[str], quick: bool) -> dict[str, Any] | None:
    """Time the combining of two buffers on the first rank of each node type, one rank at a time (the others asleep
    in an ``Ibarrier``), in rounds; rank 0 returns ``{"sizes", "ranks": {type: rank}, "rounds": [{type: {size:
    µs}}]}`` (each round's median µs per call), the other ranks None. Collective over ``comm``."""
    ranks: dict[str, int] = {}
    for r, t in enumerate(layout):
        ranks.setdefault(t, r)
    sizes = reduce_sizes(quick)
    reps = REDUCE_REPS[0] if quick else REDUCE_REPS[1]
    rounds = []
    for rnd in range(REDUCE_ROUNDS[0] if quick else REDUCE_ROUNDS[1]):
        order = sizes if rnd % 2 == 0 else sizes[::-1]
        mine: dict[str, dict[int, float]] = {}
        with rt.step(f"reduction cost round {rnd + 1}"):
            for t, r in ranks.items():
                if comm.Get_rank() == r:
                    mine[t] = {m: float(np.median(k.reduce_local(m, calls_for(m), reps, OP, DATATYPE))) for m in order}
                sleep_wait(comm.Ibarrier(), *PAIR_BYSTANDER_SLEEP_S)
        parts = comm.gather(mine, root=0)
        if parts is not None:
            rounds.append({t: v for part in parts for t, v in part.items()})
    if comm.Get_rank() != 0:
        return None
    return {"sizes": sizes, "ranks": ranks, "rounds": rounds, "reps": reps}


def _fit_type(sizes: Sequence[int], rounds: Sequence[dict[int, float]]) -> tuple[list[dict], dict[str, Any]]:
    """One type's regimes (the ``extensions.reduce`` lines) and provenance (the fit, the medians) from its rounds."""
    med = [float(np.median([rd[m] for rd in rounds])) for m in sizes]
    pw = fit_piecewise(sizes, med, weights="relative", max_regimes=3)
    lines = [{"upto_bytes": r.upto_bytes, "Gc_us": r.intercept, "Gm_us_per_byte": r.slope} for r in pw.regimes]
    spread = [[min(rd[m] for rd in rounds), max(rd[m] for rd in rounds)] for m in sizes]
    return lines, {"fit": pw.to_dict(), "measured_us": med, "rounds_min_max_us": spread}


def fit(raw: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """``(extensions.reduce entry, provenance, warnings)`` from :func:`measure`'s result (rank 0); the provenance
    holds each type's fit, medians and self-check (:func:`calibrate.selfcheck.reduce_self_check`)."""
    types: dict[str, Any] = {}
    per_type: dict[str, Any] = {}
    warnings: list[str] = []
    for t, r in raw["ranks"].items():
        lines, prov = _fit_type(raw["sizes"], [rd[t] for rd in raw["rounds"]])
        types[t] = {"regimes": lines}
        per_type[t] = {"rank": r, **prov}
        warnings += [f"reduction cost of {t}: {w}" for w in prov["fit"]["warnings"]]
    entry = {"op": "MPI_SUM", "datatype": "MPI_DOUBLE", "types": types}
    measured = {t: v["measured_us"] for t, v in per_type.items()}
    for t, check in reduce_self_check(entry, raw["sizes"], measured, warnings).items():
        per_type[t]["self_check"] = check
    prov = {
        "method": "MPI_Reduce_local (MPI_SUM, MPI_DOUBLE) of one page-aligned buffer into another, the same two "
        "buffers call after call, timed in C (calibrate/kernels/hnow_kernels.c hk_reduce) on one rank of each node "
        "type while the other ranks sleep; per size the median over rounds of each round's median µs per call; "
        "piecewise lines by calibrate.fit.fit_piecewise (relative weights); gamma(m) = G(m)/m",
        "sizes_bytes": list(raw["sizes"]),
        "rounds": len(raw["rounds"]),
        "reps": raw["reps"],
        "types": per_type,
    }
    return entry, prov, warnings


def attach(doc: dict[str, Any], raw: dict[str, Any] | None) -> None:
    """Put the fitted reduction cost into a profile document (in place): ``extensions.reduce``,
    ``provenance.reduce``, its warnings; nothing when ``raw`` is None (not rank 0)."""
    if raw is None:
        return
    entry, prov, warnings = fit(raw)
    doc.setdefault("extensions", {})["reduce"] = entry
    doc["provenance"]["reduce"] = prov
    doc["provenance"].setdefault("warnings", []).extend(warnings)


def run_sum_reference(sizes: Sequence[int], batches: int = 31, timeout_s: float = 120.0) -> list[dict[str, Any]]:
    """Build the plain C loop (``kernels/sum_ref.c``: ``a[j] += b[j]`` over doubles, no MPI) and run it; one dict
    per size (bytes, multiples of 8), in order: ``{"size_bytes", "median_us", "min_us", "max_us", "batches",
    "us_per_byte"}`` (µs per pass over the arrays, the median of ``batches`` batches; ``us_per_byte`` = median /
    size). Raises :class:`calibrate.ckernels.KernelError` when it fails or prints something unexpected."""
    from .ckernels import KernelError, build

    sizes = [int(m) for m in sizes]
    if not sizes or any(m < ELEMENT_BYTES or m % ELEMENT_BYTES for m in sizes):
        raise ValueError(f"sizes must be positive multiples of {ELEMENT_BYTES} bytes, not {sizes!r}")
    cmd = [str(build("sumref")), "-n", str(int(batches)), *map(str, sizes)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise KernelError(f"the plain C sum timed out after {timeout_s} s: {' '.join(cmd)}") from exc
    if proc.returncode != 0:
        raise KernelError(f"the plain C sum failed (status {proc.returncode}): {proc.stderr.strip()[-500:]}")
    rows = []
    for line in proc.stdout.splitlines():
        size, med, lo, hi, n = line.split()
        rows.append({"size_bytes": int(size), "median_us": float(med), "min_us": float(lo), "max_us": float(hi),
                     "batches": int(n), "us_per_byte": float(med) / int(size)})  # fmt: skip
    if [r["size_bytes"] for r in rows] != sizes:
        raise KernelError(f"the plain C sum printed sizes {[r['size_bytes'] for r in rows]}, expected {sizes}")
    return rows
