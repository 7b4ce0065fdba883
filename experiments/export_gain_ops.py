"""``experiments/export_gain.py`` for the five message-schedule operations (reduce, allreduce, allgather,
reduce_scatter, alltoall): do the algorithms ``hnow export`` writes for them pay what they are predicted to, as the
library reads them? Issue #34's check.

On the virtual cluster of ``experiments/cluster_accuracy.py`` (6 hosts at 150/20/50/50/150/20 Mbit/s, one rank
each; ``--spec`` for another), per MPI library (``--libraries``, as in export_gain.py), with one profile for the
whole run (``--profile``: one calibrated on this cluster, e.g. by ``experiments/cluster_accuracy.py``; else
``hm.calibrate(np, cluster=spec, layout="auto")`` once, whose C kernels measure γ):

1. per operation, export the library's selection for the sizes asked for (``hm.export.export(profile,
   [<the library's format>], algorithms=AlgorithmRequest(ops=[OP], sizes=SIZES))``; no rank order: the exported
   rank orders are chosen over trees, so the ranks stay in the spec's host order) and write its files;
2. one job per operation: the library's own default (``native``, nothing pinned), its default algorithm pinned
   (``native:DEFAULT``) and each chosen algorithm pinned (``native:CHOSEN``, whose prediction is the exported
   setting's);
3. one job per operation whose export changes something: ``native`` with the export's settings in the ranks'
   environment (its ``export K=V`` lines: MPICH's ``MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE``, Open MPI's rules
   file), i.e. the exported file as the library reads it.

Per operation and size: the predicted gain of the export (``gain_pct`` of its choice row: default vs chosen,
predicted), the measured gain (library default ``native`` vs the export as read, medians of ``--reps`` synchronised
calls), its spread (from the default's slowest call against the export's fastest, to the reverse: ``min..max``),
within ``GAIN_POINTS`` of the prediction, and *not slower* (the spread reaches 0 % or above). Writes
``export_gain_ops.csv`` (every measured row) and ``export_gain_ops.md`` under ``experiments/out/export_gain_ops/``
(or ``--out``). Needs root; holds ``--lock`` around every MPI job.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cluster_accuracy import SPEC as CLUSTER_SPEC  # the same cluster as collectives_accuracy.py
from common import claim, command_line, md_table, outdir, parser, write_csv, write_markdown
from export_gain import ALIASES, GAIN_POINTS, LIBRARIES, Library, _gain

import hnowmodel as hm
from hnowmodel import ops
from hnowmodel.errors import InputError
from hnowmodel.export import AlgorithmRequest
from hnowmodel.jobs import mpi_lock
from hnowmodel.jobs.results import rows_as_dicts
from hnowmodel.sizes import format_size, parse_sizes

#: The default cluster: cluster_accuracy.py's hosts under a name of their own (no other run's cluster is reused).
SPEC = {**CLUSTER_SPEC, "name": "xg5"}
SIZES = "16K,64K"


def schedule_ops() -> tuple[str, ...]:
    """The registry's operations whose algorithms are message schedules (no tree runs them)."""
    return tuple(o for o in ops.names() if o not in ops.tree_names())


def read_env(text: str) -> dict[str, str]:
    """The variables an exported settings file sets (its ``export K=V`` lines; comments and ``unset`` skipped).

    >>> read_env("# x\\nexport A=/p/f.json\\nexport B=none\\nunset C D\\n")
    {'A': '/p/f.json', 'B': 'none'}
    """
    out = {}
    for line in text.splitlines():
        if line.startswith("export ") and "=" in line:
            k, v = line[len("export ") :].split("=", 1)
            out[k.strip()] = v.strip().strip('"')
    return out


def gain_spread(default: dict, new: dict) -> tuple[float | None, float | None]:
    """The measured gain's spread (%): from the default's fastest call against the new setting's slowest, to the
    default's slowest against the new one's fastest (``min_us``/``max_us`` of the repetitions).

    >>> [round(g, 1) for g in gain_spread({"min_us": 90.0, "max_us": 110.0}, {"min_us": 45.0, "max_us": 60.0})]
    [33.3, 59.1]
    """
    return _gain(default.get("min_us"), new.get("max_us")), _gain(default.get("max_us"), new.get("min_us"))


def verdict(predicted: float | None, measured: float | None, hi: float | None) -> tuple[bool | None, bool | None]:
    """(measured gain within :data:`GAIN_POINTS` of predicted, the export not slower than the default: the upper end
    of the gain's spread ``hi`` at 0 % or above); None where a number is missing.

    >>> verdict(20.0, 17.5, 30.0), verdict(0.0, -6.0, -1.0), verdict(None, 3.0, 4.0)
    ((True, True), (False, False), (None, True))
    """
    within = None if predicted is None or measured is None else abs(measured - predicted) <= GAIN_POINTS
    return within, None if hi is None else hi >= 0.0


def _compare(prof: Any, spec_path: Path, n: int, op: str, trees: list[str], sizes: list[int], args: Any, **kw) -> list:
    with mpi_lock(args.lock):
        cmp = hm.compare(prof, n, ops=[op], trees=trees, sizes=sizes, reps=args.reps, both=False,
                         cluster=str(spec_path), progress=True, **kw)  # fmt: skip
    return [{**r, "library_version": cmp.run.get("library_version")} for r in rows_as_dicts(cmp.rows)]


def run_op(lib: Library, prof: Any, spec_path: Path, n: int, op: str, sizes: list[int], args: Any, out: Path, say):
    """Export ``op``'s selection, measure the default and the export (as pinned and as read); the rows."""
    ex = hm.export.export(prof, [lib.export_format], algorithms=AlgorithmRequest(ops=[op], sizes=sizes))
    choice = {r.size_bytes: r for r in getattr(ex, lib.choice_attr).rows}
    paths = hm.export.write_export(ex, out / "exports" / lib.name / op, force=True)
    env = read_env(Path(next(p for k, p in paths.items() if k.endswith("-env"))).read_text())
    pinned = [f"native:{choice[m].default}" for m in sizes if choice[m].default_us is not None]
    pinned += [f"native:{choice[m].chosen}" for m in sizes if choice[m].chosen_us is not None]
    trees = ["native", *dict.fromkeys(pinned)]
    say(f"{lib.name} {op}: " + ", ".join(f"{format_size(m)} {choice[m].default} -> {choice[m].chosen}" for m in sizes))
    rows = [{**r, "what": r["tree"]} for r in _compare(prof, spec_path, n, op, trees, sizes, args, **lib.launch)]
    changed = [m for m in sizes if choice[m].chosen != choice[m].default]
    if changed:
        say(f"{lib.name} {op}: the export as read ({', '.join(f'{k}={v}' for k, v in env.items())})")
        as_read = _compare(prof, spec_path, n, op, ["native"], changed, args, env=env, **lib.launch)
        rows += [{**r, "what": "exported (as read)"} for r in as_read]
    return choice, rows


def summary_row(lib: str, op: str, m: int, choice: Any, rows: list[dict]) -> dict:
    """One line of the report: default vs the export as read at ``m`` bytes (kept: the default's own row)."""
    by = {r["what"]: r for r in rows if r["size"] == m}
    d = by["native"]
    kept = choice.chosen == choice.default
    e = d if kept else by["exported (as read)"]
    pinned = by.get(f"native:{choice.chosen}", {})
    pinned_default = by.get(f"native:{choice.default}", {})
    modelled = choice.default_us is not None  # else neither the default's time nor a gain over it is predicted
    pg = (0.0 if kept else choice.gain_pct) if modelled else None
    mg = (0.0 if kept else _gain(d["measured_us"], e["measured_us"])) if modelled else None
    lo, hi = ((0.0, 0.0) if kept else gain_spread(d, e)) if modelled else (None, None)
    within, not_slower = verdict(pg, mg, hi)
    return {
        "library": lib, "op": op, "size": format_size(m), "default": choice.default, "chosen": choice.chosen,
        "default measured ms": d["measured_us"] / 1e3,
        "default predicted ms": d["predicted_us"] and d["predicted_us"] / 1e3,
        "export measured ms": e["measured_us"] / 1e3,
        "chosen pinned measured ms": pinned.get("measured_us") and pinned["measured_us"] / 1e3,
        "predicted gain %": pg, "measured gain %": mg,
        "spread %": "" if lo is None else f"{lo:+.1f}..{hi:+.1f}",
        "difference points": None if pg is None or mg is None else mg - pg,
        "within 5 points": within, "not slower": not_slower,
        "predicted in spread": None if pg is None or lo is None else lo <= pg <= hi,
        "pinned gain %": 0.0 if kept else _gain(pinned_default.get("measured_us"), pinned.get("measured_us")),
    }  # fmt: skip


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser("export_gain_ops", __doc__)
    p.add_argument("--spec", default=None, help="cluster spec file (default: cluster_accuracy.py's 6 hosts)")
    p.add_argument("--profile", default=None, help="a profile calibrated on this cluster (default: calibrate now)")
    p.add_argument("--sizes", default=SIZES, help=f"bytes per rank (default {SIZES})")
    p.add_argument("--ops", default=",".join(schedule_ops()), help="operations (default: all five)")
    p.add_argument("--reps", type=int, default=5, help="timed calls per row, their median (default 5)")
    p.add_argument("--lock", default=None, help="flock this file around every MPI job")
    p.add_argument("--libraries", default="mpich", help="comma list of mpich, openmpi, intelmpi (default mpich)")
    args = p.parse_args(argv)
    args.chosen = [ALIASES.get(x.strip().lower(), x.strip()) for x in args.libraries.split(",") if x.strip()]
    args.op_names = [o.strip() for o in args.ops.split(",") if o.strip()]
    for x in args.chosen:
        if x not in LIBRARIES:
            p.error(f"--libraries: unknown library {x!r}")
    for o in args.op_names:
        if o not in schedule_ops():
            p.error(f"--ops: {o!r} is not one of {', '.join(schedule_ops())}")
    args.size_list = list(parse_sizes(args.sizes, "--sizes"))
    return args


def _profile(args: Any, spec_path: Path, n: int, lib: Library, out: Path) -> Any:
    if args.profile:
        return hm.Profile.load(args.profile)
    with mpi_lock(args.lock):
        return hm.calibrate(n, cluster=str(spec_path), layout="auto", output=out / f"profile-{lib.name}.json",
                            force=True, progress=True, **lib.launch)  # fmt: skip


def run(args: Any, out: Path, say: Callable[[str], None]) -> tuple[list[dict], list[dict], dict]:
    """Every library and operation: (summary lines, measured rows, facts of the run)."""
    doc = json.loads(Path(args.spec).read_text()) if args.spec else SPEC
    spec_path = out / "spec.json"
    spec_path.write_text(json.dumps(doc, indent=1))
    n = sum(h.slots for h in hm.cluster.load_spec(str(spec_path)).hosts)
    summary, measured, facts = [], [], {}
    with hm.cluster.using(str(spec_path)):
        for name in args.chosen:
            lib = LIBRARIES[name]
            prof = _profile(args, spec_path, n, lib, out)
            for op in args.op_names:
                try:
                    choice, rows = run_op(lib, prof, spec_path, n, op, args.size_list, args, out, say)
                except InputError as e:  # a library whose export does not write this operation yet
                    say(f"{name} {op}: not exported ({e})")
                    facts.setdefault("not exported", []).append(f"{name} {op}: {e}")
                    continue
                measured += [{"library": name, **r} for r in rows]
                summary += [summary_row(name, op, m, choice[m], rows) for m in args.size_list]
                facts[name] = rows[0].get("library_version")
    return summary, measured, facts


def main(argv: Sequence[str] | None = None) -> None:
    args = _parse(argv)
    out = outdir(args.out)
    t0 = time.monotonic()

    def say(msg: str) -> None:
        print(f"[export_gain_ops {time.monotonic() - t0:6.1f}s] {msg}", flush=True)

    summary, measured, facts = run(args, out, say)
    write_csv(out / "export_gain_ops.csv", measured)
    ok = [s for s in summary if s["within 5 points"] is not None]
    body = [
        f"Reproduce with: `{command_line()}` (as root). Whole run {time.monotonic() - t0:.0f} s. "
        + "; ".join(f"{k}: {v}" for k, v in facts.items() if k != "not exported")
        + f". Median of {args.reps} synchronised calls per row.",
        "",
        claim(
            f"the exports' measured gain within {GAIN_POINTS:g} points of predicted, and not slower than the default",
            bool(ok) and all(s["within 5 points"] and s["not slower"] for s in ok),
            f"{sum(1 for s in ok if s['within 5 points'])}/{len(ok)} within, "
            f"{sum(1 for s in ok if s['not slower'])}/{len(ok)} not slower",
        ),
        "",
        md_table(summary),
        "",
        *[f"- not exported: {x}" for x in facts.get("not exported", [])],
    ]
    write_markdown(out / "export_gain_ops.md", "Exported algorithms of the five operations", ["\n".join(body) + "\n"])
    print((out / "export_gain_ops.md").read_text())


if __name__ == "__main__":
    main()
