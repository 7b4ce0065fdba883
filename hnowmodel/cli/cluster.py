"""``hnow cluster up SPEC [--slurm] | status [NAME] | down [NAME|SPEC]``: a virtual heterogeneous cluster on this
machine (with ``--slurm``, also a real Slurm on its hosts)."""

from __future__ import annotations

import argparse
import sys

from .. import cluster
from ..errors import InputError
from .common import emit_json, print_table

__all__ = ["HELP", "add_arguments", "run"]

HELP = "bring a virtual cluster (network namespaces + shaped links; needs root) up, show it, take it down"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", metavar="ACTION", help="up, status or down")
    p.add_argument(
        "target",
        nargs="?",
        default=None,
        metavar="SPEC|NAME",
        help="up: a hnowmodel.cluster/1 JSON file or a built-in spec ('demo', 'demoslots'); status/down: a cluster "
        "name or spec (default: every cluster / the only one that is up)",
    )
    p.add_argument(
        "--slurm",
        action="store_true",
        help="up: also run a real Slurm on the hosts (slurmctld + one slurmd per host, node-local /tmp); "
        "'SLURM_CONF=<slurm_conf> srun ...' then runs on them (installs Debian's slurmd/slurmctld/munge if missing)",
    )


def _kernel_tcp(st: cluster.ClusterState) -> str:
    """``" (Linux's default TCP, cubic, on hosts x, y; this kernel's own TCP on host z)"`` for the hosts of spec
    ``"tcp": "default"`` / ``"kernel"``, else ''."""
    what = {"default": f"Linux's default TCP ({cluster.LINUX_CONGESTION_CONTROL})", "kernel": "this kernel's own TCP"}
    parts = []
    for mode, text in what.items():
        own = [h.name for h in st.spec.hosts if h.tcp == mode]
        if own:
            parts.append(f"{text} on host{'s' if len(own) > 1 else ''} {', '.join(own)}")
    return f" ({'; '.join(parts)})" if parts else ""


def _print_state(st: cluster.ClusterState, file=None) -> None:
    file = file or sys.stdout
    note = ""
    if st.stale:
        what = ", ".join(st.missing) if st.missing else f"'up' did not finish (phase {st.phase})"
        note = f"  STALE: {what}; run 'hnow cluster down {st.name}'"
    print(
        f"cluster {st.name}: {len(st.hosts)} hosts, {st.spec.total_slots} slots, subnet {st.subnet} "
        f"(launcher side {st.bridge_address}), tbf burst {st.shaping.burst_bytes} B, "
        f"TCP {st.shaping.congestion_control or '?'}, initial window {st.shaping.initcwnd_segments or '?'} segments, "
        f"{st.shaping.gso_max_segs or '?'}-segment packets, {st.shaping.tcp_limit_output_bytes or '?'} B per socket "
        f"below TCP{_kernel_tcp(st)}{note}",
        file=file,
    )
    if st.slurm_conf:
        print(f"slurm: SLURM_CONF={st.slurm_conf} (srun, sbatch, salloc run on these hosts)", file=file)
    rows = [
        {
            "host": h.name,
            "address": h.address,
            "egress_mbit": h.egress_mbit,
            "ingress_mbit": h.ingress_mbit,
            "slots": h.slots,
            "namespace": h.namespace,
        }
        for h in st.hosts
    ]
    print_table(rows, file=file)


def run(args: argparse.Namespace) -> int:
    action = args.action
    if getattr(args, "slurm", False) and action in ("status", "down"):
        raise InputError(f"cluster {action}: --slurm goes with 'cluster up' only")
    if action == "up":
        if args.target is None:
            raise InputError("cluster up: SPEC is required (a hnowmodel.cluster/1 JSON file, 'demo' or 'demoslots')")
        st = cluster.up(args.target, slurm=bool(getattr(args, "slurm", False)))
        if args.json:
            emit_json({"cluster": st.public_dict()})
        else:
            _print_state(st)
        return 0
    if action == "status":
        name = None if args.target is None else cluster.name_of(args.target)
        states = cluster.status(name)
        if args.json:
            doc = {"cluster": states[0].public_dict() if len(states) == 1 else None}
            if name is None:
                doc["clusters"] = [s.public_dict() for s in states]
            emit_json(doc)
            return 0
        if not states:
            print(f"cluster {name} is not up" if name else "no virtual cluster is up")
        for i, st in enumerate(states):
            if i:
                print()
            _print_state(st)
        return 0
    if action == "down":
        res = cluster.down(args.target)
        if args.json:
            emit_json({"down": res.to_dict()})
        elif res.removed:
            print(
                f"cluster {res.name} is down: removed {res.namespaces} namespaces and {res.links} links"
                + (f", killed {res.killed} processes" if res.killed else "")
            )
        else:
            print(f"cluster {res.name} is not up: nothing to remove" if res.name else "no virtual cluster is up")
        return 0
    raise InputError(f"cluster: unknown action {action!r} (choose from: up, status, down)")
