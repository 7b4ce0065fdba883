"""``hnow calibrate``: run the calibration under MPI, write the profile atomically, print the fit report."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..params import Profile
from .common import add_mpi_arguments, emit_json, mpi_task_args, print_table
from .launch import run_mpi

__all__ = ["HELP", "add_arguments", "run", "calibrate_profile", "calibration_args", "fit_report"]

HELP = "measure Sc/Sm/Rc/Rm per node type and Xc/Xm under MPI and write a profile (papers/003 §2)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_mpi_arguments(p)
    p.add_argument("--layout", default=None, help="node type of each rank: FFSS, fast,fast,slow,… , @file or auto")
    p.add_argument("--sizes", default=None, help="message sizes (default: 0..1M plain, 0..8K emulated)")
    p.add_argument("--network", default=None, help="take X from the network: bandwidth_MBps=…,latency_us=…")
    p.add_argument("--regime", default="auto", choices=("auto", "below", "above"),
                   help="with a protocol switch: which side's fit goes into the profile")
    p.add_argument("--precision", type=float, default=0.025, help="relative CI of the median to stop at (0.025)")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    p.add_argument("-o", "--output", default="profile.json", help="where to write the profile (default profile.json)")


def calibration_args(
    *, testbed: str | None = None, layout: str | None = None, sizes: str | None = None, network: str | None = None,
    regime: str = "auto", precision: float | None = None, quick: bool = False,
) -> list[str]:
    """The ``python -m calibrate calibrate`` flags for these settings."""
    out: list[str] = []
    for flag, value in (("--testbed", testbed), ("--layout", layout), ("--sizes", sizes), ("--network", network)):
        if value:
            out += [flag, value]
    if regime != "auto":
        out += ["--regime", regime]
    if precision is not None:
        out += ["--precision", str(precision)]
    if quick:
        out.append("--quick")
    return out


def calibrate_profile(
    np: int,
    *,
    testbed: str | None = None,
    layout: str | None = None,
    sizes: str | None = None,
    network: str | None = None,
    launcher: str = "mpiexec",
    launcher_args: str = "",
    timeout_s: float | None = None,
    echo: bool = True,
    quick: bool = False,
) -> Profile:
    """Calibrate on ``np`` ranks (a subprocess under the launcher) and return the validated profile."""
    doc = run_mpi(
        "calibrate",
        calibration_args(testbed=testbed, layout=layout, sizes=sizes, network=network, quick=quick),
        np,
        launcher=launcher,
        launcher_args=launcher_args,
        timeout_s=timeout_s or 600.0,
        echo=echo,
    )
    return Profile.from_dict(doc, where="calibration result")


def _pm(value: float, ci: float, digits: int) -> str:
    return f"{value:.{digits}f} ± {ci:.{digits}f}" if math.isfinite(ci) else f"{value:.{digits}f}"


def fit_report(profile: Profile) -> list[str]:
    """Readable lines: every parameter ± its 95 % CI, R², the pairs' additivity residuals, warnings."""
    prov: dict[str, Any] = dict(profile.provenance)
    fits = prov.get("fits", {})
    lines = []
    rows = []
    for name, t in profile.types.items():
        f = fits.get(name, {})
        s, r = f.get("S", {}), f.get("R", {})
        rows.append({
            "type": name,
            "ranks": sum(1 for n in profile.nodes if n.get("type") == name),
            "Sc_us": _pm(t.Sc_us, s.get("intercept_ci95_us", math.inf), 2),
            "Sm_us_per_byte": _pm(t.Sm_us_per_byte, s.get("slope_ci95_us_per_byte", math.inf), 5),
            "Rc_us": _pm(t.Rc_us, r.get("intercept_ci95_us", math.inf), 2),
            "Rm_us_per_byte": _pm(t.Rm_us_per_byte, r.get("slope_ci95_us_per_byte", math.inf), 5),
            "R2 (S, R)": f"{s.get('r2', math.nan):.4f}, {r.get('r2', math.nan):.4f}",
        })
    lines.append(_table(rows))
    net = fits.get("network", {})
    lines.append(
        f"network: Xc_us = {_pm(profile.network.Xc_us, net.get('intercept_ci95_us', math.inf), 2)}, "
        f"Xm_us_per_byte = {_pm(profile.network.Xm_us_per_byte, net.get('slope_ci95_us_per_byte', math.inf), 5)}"
        f"  ({prov.get('x_source', 'measured')})"
    )
    for lk in profile.links.items():
        (a, b), link = lk
        lines.append(f"link {a}->{b}: Xc_us = {link.Xc_us:.2f}, Xm_us_per_byte = {link.Xm_us_per_byte:.5f}")
    pairs = prov.get("pairs", [])
    if pairs:
        lines.append("additivity check (ping-pong vs S + X + R of the fitted parameters):")
        lines.append(_table([{"ranks": "-".join(map(str, p["ranks"])), "types": "->".join(p["types"]),
                              "max |residual| %": round(p["max_abs_residual_pct"], 2)} for p in pairs]))
    bp = prov.get("protocol_breakpoint_bytes")
    lines.append("protocol switch: " + (f"between {bp[0]} and {bp[1]} bytes (profile uses sizes "
                                          f"{prov.get('regime_sizes')})" if bp else "none seen at these sizes"))
    for w in prov.get("warnings", []):
        lines.append(f"warning: {w}")
    if "wall_s" in prov:
        lines.append(f"calibration took {prov['wall_s']:.1f} s on {len(profile.nodes)} ranks")
    return lines


def _table(rows: list[dict[str, Any]]) -> str:
    import io

    buf = io.StringIO()
    print_table(rows, file=buf)
    return buf.getvalue().rstrip("\n")


def run(args: argparse.Namespace) -> int:
    if args.precision <= 0 or args.precision >= 1:
        raise InputError(f"--precision {args.precision}: expected a fraction between 0 and 1, e.g. 0.025")
    out = Path(args.output)
    if out.exists() and out.is_dir():
        raise InputError(f"-o {args.output!r} is a directory")
    task_args = mpi_task_args(args) + calibration_args(
        layout=args.layout, sizes=args.sizes, network=args.network, regime=args.regime,
        precision=args.precision, quick=args.quick,
    )
    doc = run_mpi("calibrate", task_args, args.np, launcher=args.launcher, launcher_args=args.launcher_args,
                  timeout_s=args.timeout or 600.0, echo=not args.json)
    profile = Profile.from_dict(doc, where="calibration result")
    profile.save(out)  # atomic: only a complete, validated profile ever lands at the path
    if args.json:
        emit_json(profile.to_dict())
        return 0
    print("\n".join(fit_report(profile)))
    print(f"wrote {out}")
    return 0
