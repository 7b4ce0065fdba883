"""The wire protocol between ``hnow`` (the launching process) and ``python -m calibrate`` (the MPI ranks).

One module owns it, and both sides import it (``calibrate`` may import ``hnowmodel``, never the reverse).
Nothing travels through files, so ranks on other hosts with node-local ``/tmp`` work as well as local ones:

* **in**: the task name and its options as command-line flags (the launcher hands every rank the same argv);
  large values (pre-built trees) travel inline as :func:`pack`-ed text;
* **out, stdout**: rank 0 prints exactly one line ``hnow-result: <packed JSON>``; no other rank writes stdout;
* **out, stderr**: right after ``MPI_Init`` rank 0 prints ``hnow-world: <packed {"size", "hosts"}>`` (the world
  size and each rank's node name), so that the launching process can stop a job that started on the wrong ranks
  or hosts before it runs for long; every rank prints ``hnow-step: RANK ENTERED STEP`` when it enters or leaves
  a step (so a rank that hangs or dies without a word can still be named), ``hnow-error: …`` once when it fails,
  and rank 0 prints progress lines that start with ``[hnow ``.

>>> unpack(pack({"rows": [1, 2]}))
{'rows': [1, 2]}
>>> parse_step("hnow-step: 3 7 ping-pong 0->1 8 B")
(3, 7, 'ping-pong 0->1 8 B')
>>> parse_world(world_line(2, ["n1", "n2"]))
(2, ('n1', 'n2'))
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

__all__ = [
    "RESULT_PREFIX",
    "STEP_PREFIX",
    "ERROR_PREFIX",
    "WORLD_PREFIX",
    "PROGRESS_PREFIX",
    "FAULT_ENV",
    "pack",
    "unpack",
    "result_line",
    "step_line",
    "parse_step",
    "world_line",
    "parse_world",
    "ProtocolError",
]

RESULT_PREFIX = "hnow-result:"
STEP_PREFIX = "hnow-step:"
ERROR_PREFIX = "hnow-error:"
WORLD_PREFIX = "hnow-world:"
PROGRESS_PREFIX = "[hnow "
#: Fault injection for tests of the failure paths: ``HNOW_FAULT="RANK:STEP:KIND"`` makes rank RANK fail when it
#: enters a step whose name contains STEP; KIND is ``raise``, ``exit`` (dies without a word) or ``hang``.
FAULT_ENV = "HNOW_FAULT"


class ProtocolError(ValueError):
    """A line of the protocol could not be read (a truncated or foreign result line)."""


def pack(doc: Any) -> str:
    """JSON -> zlib -> URL-safe base64: one line of plain ASCII, safe in argv and in a launcher's output."""
    raw = json.dumps(doc, separators=(",", ":"), allow_nan=True).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 6)).decode("ascii")


def unpack(text: str) -> Any:
    """The inverse of :func:`pack`; :class:`ProtocolError` on anything else."""
    try:
        return json.loads(zlib.decompress(base64.urlsafe_b64decode(text.strip().encode("ascii"))))
    except (ValueError, zlib.error) as e:
        raise ProtocolError(f"unreadable packed value ({type(e).__name__}: {e})") from None


def result_line(doc: Any) -> str:
    """The line rank 0 prints on stdout to return its result."""
    return f"{RESULT_PREFIX} {pack(doc)}"


def step_line(rank: int, entered: int, step: str) -> str:
    """The line a rank prints on stderr when its current step changes."""
    return f"{STEP_PREFIX} {rank} {entered} {step}"


def parse_step(line: str) -> tuple[int, int, str] | None:
    """``(rank, steps entered, step)`` from a step line, or None if the line is not one."""
    if not line.startswith(STEP_PREFIX):
        return None
    parts = line[len(STEP_PREFIX) :].strip().split(" ", 2)
    try:
        return int(parts[0]), int(parts[1]), parts[2] if len(parts) > 2 else ""
    except (ValueError, IndexError):
        return None


# ---- jobs -> task flags ------------------------------------------------------------------------------------------
def _sizes(sizes: Any) -> str:
    return ",".join(str(int(s)) for s in sizes)


def task_argv(job: Any, quiet: bool = False) -> tuple[str, list[str]]:
    """``(task name, flags)`` of ``python -m calibrate`` for a job of :mod:`hnowmodel.jobs.specs`."""
    # here, not above: a rank imports this module for its prefixes, and the specs import the model (options, ops)
    from .specs import BenchJob, CalibrateJob, InfoJob, MeasureJob

    out: list[str] = ["--quiet"] if quiet else []
    if getattr(job, "testbed", None):
        out += ["--testbed", str(job.testbed)]
    if isinstance(job, CalibrateJob):
        for flag, value in (("--layout", job.layout), ("--network", job.network), ("--steps", job.steps)):
            if value:
                out += [flag, str(value)]
        if job.sizes is not None:
            out += ["--sizes", _sizes(job.sizes)]
        out += ["--regime", job.regime, "--precision", repr(float(job.precision)), "--kernels", job.kernels]
        if job.rounds is not None:
            out += ["--rounds", str(int(job.rounds))]
        if job.gap_us is not None:
            out += ["--gap-us", repr(float(job.gap_us))]
        if job.native_ops:
            out += ["--native-ops", ",".join(job.native_ops), "--native-sizes", _sizes(job.native_sizes)]
        if job.quick:
            out.append("--quick")
        if job.steps is not None and job.steps_context is not None:
            out += ["--steps-context", pack(dict(job.steps_context))]
    elif isinstance(job, MeasureJob):
        trees = [{"spec": n, **({"tree": t.to_dict()} if t is not None else {})} for n, t in job.trees.items()]
        out += ["--op", ",".join(job.ops), "--sizes", _sizes(job.sizes), "--root", str(job.root)]
        out += ["--reps", str(job.reps), "--iters", str(job.iters), "--methods", ",".join(job.methods)]
        out += ["--trees-packed", pack(trees)]
        if job.layout is not None:
            out += ["--layout", ",".join(job.layout)]
        if job.keys is not None:
            out += ["--keys", ",".join(str(int(k)) for k in job.keys)]
    elif isinstance(job, BenchJob):
        out = [",".join(job.names), *out]
        for key, val in job.options.items():
            if val is not None:
                out += [f"--{key.replace('_', '-')}", str(val)]
        if job.quick:
            out.append("--quick")
    elif not isinstance(job, InfoJob):
        raise TypeError(f"not a job: {type(job).__name__}")
    return job.task, out


def world_line(size: int, hosts: list[str]) -> str:
    """The line rank 0 prints on stderr once MPI is up: the world size and each rank's node name."""
    return f"{WORLD_PREFIX} {pack({'size': int(size), 'hosts': [str(h) for h in hosts]})}"


def parse_world(line: str) -> tuple[int, tuple[str, ...]] | None:
    """``(world size, node name of each rank)`` from a world line; None if the line is not one or is unreadable."""
    if not line.startswith(WORLD_PREFIX):
        return None
    try:
        doc = unpack(line[len(WORLD_PREFIX) :])
        return int(doc["size"]), tuple(str(h) for h in doc["hosts"])
    except (ProtocolError, KeyError, TypeError, ValueError):
        return None
