"""What ``hnow tune -o DIR`` writes: per shape and library the files the library reads, the rank order, ``env.sh``
and a Slurm batch fragment (:func:`write_shape`); and the report, ``tune.csv``, ``tune.md``, ``tune.png`` and
``tune.json`` (:func:`write_report`).

Layout of ``DIR``::

    DIR/tune.csv, DIR/tune.json          one row per shape, library, operation and size
    DIR/tune.md                          the same rows to read, each with its why
    DIR/tune.png                         predicted and measured gains side by side (when a row has a gain)
    DIR/<shape>/<library>/               e.g. 12x1/mpich: the export's files (mpich-coll.json, mpich-env.txt, ...),
                                         hostfile and rankfile (the tuned order), slurm-hostfile (one line per rank),
                                         env.sh (source it), job.sbatch (a fragment), USAGE.txt
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..export import write_export
from ..io import atomic_write
from ..report import write_csv
from ..sizes import format_size
from .choose import ShapeTuning
from .figure import plot_gains

__all__ = ["COLUMNS", "shape_folder", "env_sh", "sbatch_text", "write_shape", "markdown_report", "write_report"]

#: The report's columns, in order.
COLUMNS = (
    "shape",
    "library",
    "op",
    "size",
    "ranks",
    "hosts",
    "default",
    "chosen",
    "default_us",
    "chosen_us",
    "predicted_gain_pct",
    "order",
    "measured_default_us",
    "measured_tuned_us",
    "measured_gain_pct",
    "measured_gain_min_pct",
    "measured_gain_max_pct",
    "slower",
    "why",
)


def shape_folder(out: str | Path, st: ShapeTuning) -> Path:
    """``out/<shape>/<library key>`` (``mpich``, ``ompi``, ``impi``)."""
    return Path(out) / st.shape.label / st.fmt.key


def _env_lines(text: str) -> list[str]:
    """The settings of a library's settings file (``export``/``unset`` lines; its comments stay in that file)."""
    return [ln for ln in text.splitlines() if ln.startswith(("export ", "unset "))]


def env_sh(st: ShapeTuning, folder: str | Path) -> str:
    """``env.sh`` for ``st`` written in ``folder``: the library's settings and where the rank order is
    (``HNOW_TUNE_HOSTFILE``, ``HNOW_TUNE_RANKFILE``, ``SLURM_HOSTFILE``), with the launch lines as comments.

    The paths are absolute (the folder's)."""
    where = Path(folder).resolve()
    ex = st.export.placed(where)
    n = st.shape.ranks
    q = shlex.quote
    lines = [
        f"# hnow tune: {st.fmt.library} on {st.shape.describe()}",
        f"# rank order: {st.order}; source this file in the job script, then launch:",
        f"#   MPICH / Intel MPI (hydra): mpiexec -n {n} -f $HNOW_TUNE_HOSTFILE ./app",
        f"#   Open MPI:                  mpirun -n {n} --map-by rankfile:file=$HNOW_TUNE_RANKFILE ./app",
        f"#   Slurm:                     srun -n {n} --distribution=arbitrary ./app   (SLURM_HOSTFILE)",
        *_env_lines(ex.files[st.fmt.env]),
        f"export HNOW_TUNE_HOSTFILE={q(str(where / 'hostfile'))}",
        f"export HNOW_TUNE_RANKFILE={q(str(where / 'rankfile'))}",
        f"export SLURM_HOSTFILE={q(str(where / 'slurm-hostfile'))}",
    ]
    return "\n".join(lines) + "\n"


def sbatch_text(st: ShapeTuning, folder: str | Path) -> str:
    """A Slurm batch fragment: the allocation of the shape and ``env.sh`` sourced before ``srun``."""
    where = Path(folder).resolve()
    sh = st.shape
    per = {h.slots for h in sh.hosts}
    alloc = (
        [f"#SBATCH --nodes={len(sh.hosts)}", f"#SBATCH --ntasks-per-node={per.pop()}"]
        if len(per) == 1
        else [f"#SBATCH --nodes={len(sh.hosts)}", f"#SBATCH --ntasks={sh.ranks}"]
    )
    return (
        "\n".join(
            [
                "#!/bin/bash",
                f"# hnow tune: {st.fmt.library}, shape {sh.label}; the hosts: the hostfile beside this file",
                *alloc,
                f"source {shlex.quote(str(where / 'env.sh'))}",
                f"srun -n {sh.ranks} --distribution=arbitrary ./app",
            ]
        )
        + "\n"
    )


def write_shape(st: ShapeTuning, out: str | Path) -> dict[str, str]:
    """Write ``st``'s files into :func:`shape_folder` (a new folder: the caller checked ``out``); file -> path."""
    folder = shape_folder(out, st)
    paths = write_export(st.export, folder, force=True)
    paths["slurm-hostfile"] = str(atomic_write(folder / "slurm-hostfile", "".join(f"{h}\n" for h in st.hosts_in_order)))
    paths["env.sh"] = str(atomic_write(folder / "env.sh", env_sh(st, folder)))
    paths["job.sbatch"] = str(atomic_write(folder / "job.sbatch", sbatch_text(st, folder)))
    return paths


def _cell(v: Any) -> str:
    """A table cell: a gain with one decimal, nothing as ``-``, no ``|`` inside."""
    if v is None or v == "":
        return "-"
    return (f"{v:.1f}" if isinstance(v, float) else str(v)).replace("|", "/")


def markdown_report(rows: Sequence[Mapping[str, Any]], doc: Mapping[str, Any]) -> str:
    """``tune.md``: the rows as a table (shape, library, operation, size, default, chosen, predicted gain %, and
    measured gain % when verified) with each row's ``why``, and the notes.

    >>> row = {"shape": "4x1", "library": "MPICH", "op": "bcast", "size": 1024, "default": "binomial",
    ...        "chosen": "binomial", "predicted_gain_pct": 0.0, "why": "default fastest (10 µs: 60 % link a→b)"}
    >>> markdown_report([row], {"profile": "given", "notes": []}).splitlines()[-1]
    '| 4x1 | MPICH | bcast | 1K | binomial | binomial | 0.0 | default fastest (10 µs: 60 % link a→b) |'
    """
    measured = any(r.get("measured_gain_pct") is not None for r in rows)
    cols = ["shape", "library", "op", "size", "default", "chosen", "predicted gain %"]
    cols += ["measured gain %"] if measured else []
    lines = [f"# hnow tune (profile: {doc.get('profile')})", ""]
    lines += [f"- note: {n}" for n in doc.get("notes", ())] + ([""] if doc.get("notes") else [])
    lines += ["| " + " | ".join([*cols, "why"]) + " |", "|" + "---|" * (len(cols) + 1)]
    for r in rows:
        cells = [r["shape"], r["library"], r["op"], format_size(r["size"]), r["default"], r["chosen"]]
        cells += [r.get("predicted_gain_pct")] + ([r.get("measured_gain_pct")] if measured else [])
        lines.append("| " + " | ".join(_cell(c) for c in [*cells, r.get("why")]) + " |")
    return "\n".join(lines) + "\n"


def _figure_title(doc: Mapping[str, Any]) -> str:
    """``tune.png``'s title: what the gains are of, the profile, and the shape measured (if any).

    >>> _figure_title({"profile": "given", "verified": "run-6x1"})
    "hnow tune: gain over the library's default (profile: given; measured on run-6x1)"
    """
    where = f"; measured on {doc['verified']}" if doc.get("verified") else "; predicted only (no --verify)"
    return f"hnow tune: gain over the library's default (profile: {doc.get('profile')}{where})"


def write_report(out: str | Path, rows: Sequence[Mapping[str, Any]], doc: Mapping[str, Any]) -> dict[str, str]:
    """``tune.csv`` (``rows``, :data:`COLUMNS`), ``tune.md`` (:func:`markdown_report`), ``tune.png``
    (:func:`~.figure.plot_gains`; only when a row has a gain to draw: then the result has ``png``) and ``tune.json``
    (``doc``, written last: a folder without it is a tune cut short) in ``out``."""
    out = Path(out)
    paths = {
        "csv": str(write_csv(out / "tune.csv", rows, COLUMNS)),
        "md": str(atomic_write(out / "tune.md", markdown_report(rows, doc))),
    }
    png = plot_gains(rows, out / "tune.png", _figure_title(doc))
    if png is not None:
        paths["png"] = str(png)
    paths["json"] = str(atomic_write(out / "tune.json", json.dumps(doc, indent=1, allow_nan=False) + "\n"))
    return paths
