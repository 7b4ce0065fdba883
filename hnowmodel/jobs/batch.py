"""A ready Slurm batch script for a calibration (``hnow slurm-script``): ``sbatch`` it and collect the profile.

The script runs ``hnow calibrate`` with ``--launcher srun`` inside the allocation it asks for, on every node of it
(``-N $SLURM_JOB_NUM_NODES``, so that a mismatch between what started and what was allocated stops the job with one
line), with ``--layout auto`` (the node types found from the measured costs, named by Slurm node name in the
profile's ``nodes``). By default it runs two ranks per node (``--ntasks-per-node=2``, Slurm's block distribution:
consecutive ranks share a node), so the calibration also measures shared memory between two ranks of one node and
each node's NIC under its ranks' concurrent flows (``hosts`` in the profile, docs/calibrating-a-cluster.md). It
calls this very Python (``sys.executable``), so the virtual environment ``hnow`` runs from must be on a path the
first node of the allocation sees.

>>> text = slurm_script(nodes=4, ntasks=8, output="/data/profile.json", time_min=20)
>>> [ln for ln in text.splitlines() if ln.startswith("#SBATCH")][:3]
['#SBATCH --job-name=hnow-calibrate', '#SBATCH --nodes=4', '#SBATCH --ntasks=8']
>>> [ln for ln in slurm_script(nodes=3, output="/p.json").splitlines() if "tasks" in ln]
['#SBATCH --ntasks-per-node=2']
"""

from __future__ import annotations

import math
import re
import shlex
import sys
from collections.abc import Sequence

from ..errors import InputError

__all__ = ["slurm_script"]

_NAME = re.compile(r"[A-Za-z0-9_.\-]+")


def _whole(value: object, flag: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{flag} must be a whole number from {lo} to {hi}, got {value!r}")
    if int(value) != value or not lo <= int(value) <= hi:
        raise InputError(f"{flag} must be a whole number from {lo} to {hi}, got {value!r}")
    return int(value)


def slurm_script(
    *,
    nodes: int,
    ntasks: int | None = None,
    ranks_per_node: int = 2,
    output: str,
    time_min: int = 30,
    layout: str = "auto",
    extra_args: Sequence[str] = (),
    force: bool = False,
    **allocation: str | None,
) -> str:
    """The text of an ``sbatch`` script that calibrates ``nodes`` nodes with ``ntasks`` ranks (default
    ``ranks_per_node`` on every node: ``--ntasks-per-node``) and writes the profile to ``output`` (an absolute path
    where the job runs; ``force`` lets it overwrite). ``time_min`` is the job's time limit in minutes;
    ``extra_args`` are more ``hnow calibrate`` arguments; ``allocation``: ``partition`` and ``account`` (Slurm
    names, optional)."""
    bad = [k for k in allocation if k not in ("partition", "account")]
    if bad:
        raise TypeError(f"slurm_script() got an unexpected keyword argument {bad[0]!r} (choose: partition, account)")
    partition, account = allocation.get("partition"), allocation.get("account")
    nodes = _whole(nodes, "--nodes", 1, 100_000)
    per_node = _whole(ranks_per_node, "--ranks-per-node", 1, 100_000)
    tasks_line = f"--ntasks-per-node={per_node}" if ntasks is None else None
    ntasks = nodes * per_node if ntasks is None else _whole(ntasks, "--np", 2, 10_000_000)
    if tasks_line is None:
        tasks_line = f"--ntasks={ntasks}"
    if ntasks < max(nodes, 2):
        raise InputError(f"--np {ntasks}: a calibration needs at least 2 ranks and one rank per node ({nodes} nodes)")
    time_min = _whole(time_min, "--time", 1, 60 * 24 * 365)
    for flag, v in (("--partition", partition), ("--account", account)):
        if v is not None and not _NAME.fullmatch(v):
            raise InputError(f"{flag} {v!r}: not a Slurm partition/account name")
    if not output or not output.startswith("/"):
        raise InputError(f"--profile-out {output!r}: give an absolute path (the job may start in another folder)")
    sb = [
        "--job-name=hnow-calibrate",
        f"--nodes={nodes}",
        tasks_line,
        f"--time={time_min // 60:02d}:{time_min % 60:02d}:00",
        "--output=hnow-calibrate-%j.log",
    ]
    if partition:
        sb.append(f"--partition={partition}")
    if account:
        sb.append(f"--account={account}")
    cmd = [
        sys.executable,
        "-m",
        "hnowmodel.cli",
        "calibrate",
        "--np",
        "$SLURM_NTASKS",
        "--launcher",
        "srun",
        "--launcher-args",
        "-N $SLURM_JOB_NUM_NODES",
        "--layout",
        layout,
        "-o",
        output,
        *(["--force"] if force else []),
        *extra_args,
    ]
    # quote every word but keep $SLURM_* expanding inside double quotes
    words = [f'"{w}"' if "$SLURM" in w else shlex.quote(w) for w in cmd]
    lines = [
        "#!/bin/bash",
        *(f"#SBATCH {s}" for s in sb),
        "# Written by 'hnow slurm-script': calibrate the allocated nodes (sbatch this file; the profile is written",
        f"# to {output}). hnow adds srun --mpi=pmi2 and, for MPICH, the ofi/tcp netmod that starts reliably under",
        "# Slurm's PMI-1; set MPIR_CVAR_CH4_NETMOD / FI_PROVIDER here to use another network.",
        "set -euo pipefail",
        " ".join(words),
        "",
    ]
    return "\n".join(lines)
