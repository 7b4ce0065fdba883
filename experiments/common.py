"""Shared plumbing for the experiment scripts: output folder, CSV/PNG/markdown writers, claim lines.

Every experiment writes ``<name>.csv``, ``<name>.png`` and ``<name>.md`` into ``experiments/out/<name>/`` (or
``--out DIR``). Files are written atomically. The markdown states, for each of the paper's claims checked, whether
it holds in this run.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hnowmodel.io import atomic_write
from hnowmodel.report import save_png

__all__ = [
    "parser",
    "outdir",
    "write_csv",
    "save_png",
    "write_markdown",
    "md_table",
    "claim",
    "command_line",
    "best_of",
    "error_summary",
    "run_mpi_python",
]

ROOT = Path(__file__).resolve().parent


def parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """An argument parser with ``--out DIR`` (default ``experiments/out/<name>``)."""
    p = argparse.ArgumentParser(prog=f"experiments/{name}.py", description=(doc or "").splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "out" / name, help="output folder")
    return p


def outdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def command_line() -> str:
    """How this run was started, for the 'reproduce with' line of a report."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(ROOT.parent) if script.is_relative_to(ROOT.parent) else script
    return " ".join(["python", str(shown), *sys.argv[1:]])


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    """Write dict rows as CSV (columns from the first row) atomically; dict and list cells as JSON, so a plotting
    script reads them with ``json.loads``."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
    w.writeheader()
    w.writerows({k: json.dumps(v) if isinstance(v, (dict, list, tuple)) else v for k, v in r.items()} for r in rows)
    return atomic_write(path, buf.getvalue())


def md_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None, fmt: str = "{:.1f}") -> str:
    """A GitHub-markdown table of dict rows; floats formatted with ``fmt``."""
    if not rows:
        return "(no rows)\n"
    columns = list(columns or rows[0])
    cell = lambda v: fmt.format(v) if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def claim(text: str, holds: bool, detail: str = "") -> str:
    """One markdown bullet: whether a claim of the paper holds in this run, and the numbers behind it."""
    return f"- **{'holds' if holds else 'does not hold'}**: {text}" + (f" — {detail}" if detail else "") + "\n"


def write_markdown(path: Path, title: str, body: Iterable[str]) -> Path:
    """Write a short markdown report with a title, the body and the command that reproduces it."""
    text = f"# {title}\n\n" + "".join(body)
    text += f"\nReproduce with `{command_line()}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}).\n"
    return atomic_write(path, text)


def best_of(fn: Any, repeat: int) -> float:
    """Best wall time (s) of ``repeat`` calls of ``fn()`` - the least disturbed run, for speed ratios."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def error_summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``rows``, ``median_abs_error_pct`` and ``max_abs_error_pct`` over the rows' finite ``error_pct`` (NaN when
    there are none)."""
    errs = [abs(r["error_pct"]) for r in rows if r.get("error_pct") is not None and math.isfinite(r["error_pct"])]
    return {
        "rows": len(errs),
        "median_abs_error_pct": statistics.median(errs) if errs else math.nan,
        "max_abs_error_pct": max(errs) if errs else math.nan,
    }


def run_mpi_python(launch: Any, program: str, args: Sequence[str], tag: str) -> Any:
    """Run ``program`` (the text of an mpi4py script) on ``launch``'s ranks
    (:func:`hnowmodel.jobs.launcher.run_program`, under the machine's MPI lock) with ``args``, and return the JSON
    document one rank printed after ``"<tag>: "``."""
    from hnowmodel.jobs.launcher import run_program

    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "program.py"
        prog.write_text(program)
        text = run_program(launch, [launch.mpi_env.python, str(prog), *args])
    prefix = f"{tag}: "
    line = next((ln for ln in text.splitlines() if ln.startswith(prefix)), None)
    if line is None:
        raise RuntimeError(f"the MPI program printed no line starting {prefix!r}")
    return json.loads(line.removeprefix(prefix))
