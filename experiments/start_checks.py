"""Is a job that did not start as asked always caught? Every mismatch tried, through the real ``hnow``.

Each case runs ``hnow info`` (the shortest MPI job) with a launcher set-up that starts something other than what
``--np``, the hostfile or ``srun -N`` asks for, and checks: exit status 2, exactly one error line, naming the
mismatch. Matching set-ups are run too: they must pass (no false alarm). Slurm cases run on a real Slurm of 4
virtual hosts (``hnow cluster up SPEC --slurm``; root and network namespaces needed, else they are skipped and
say so). Writes ``start_checks.csv`` and ``start_checks.md`` under ``experiments/out/start_checks/``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import command_line, md_table, outdir, parser, write_csv, write_markdown

import hnowmodel as hm
from hnowmodel.errors import HnowError

MPIEXEC = Path(sys.executable).parent / "mpiexec"
HNOW = str(Path(sys.executable).parent / "hnow")  # the installed command, as a user runs it
LA = "--launcher-args"


def _hnow(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [HNOW, "info", "--timeout", "60", *args],  # the command itself: its exit status and error line are the point
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
        cwd="/",
        stdin=subprocess.DEVNULL,
    )


def _script(folder: Path, name: str, body: str) -> str:
    d = folder / name.replace("/", "_")
    d.mkdir(exist_ok=True)
    f = d / Path(name).name
    f.write_text("#!/bin/bash\n" + body)
    f.chmod(0o755)
    return str(f)


Case = tuple[str, bool, list[str], dict[str, str]]


def _local_cases(tmp: Path) -> list[Case]:
    """(label, is a mismatch, hnow arguments, environment) of the cases without Slurm; their scripts go in ``tmp``."""
    copies = _script(
        tmp,
        "copies/launch",
        'n=1; if [ "$1" = "-n" ]; then n=$2; shift 2; fi\nfor i in $(seq 1 "$n"); do "$@" & done\nwait\n',
    )
    drop_f = _script(
        tmp,
        "dropf/mpiexec",
        f'if [ "$1" = "--version" ]; then exec "{MPIEXEC}" --version; fi\nargs=()\nwhile [ $# -gt 0 ]; do\n'
        f'  if [ "$1" = "-f" ]; then shift 2; else args+=("$1"); shift; fi\ndone\nexec "{MPIEXEC}" "${{args[@]}}"\n',
    )
    hosts = tmp / "hosts"
    hosts.write_text("nodeA slots=1\nnodeB slots=1\n")
    here = tmp / "here"
    here.write_text(f"{os.uname().nodename}:4\n")
    return [
        ("mpiexec, --np 4", False, ["--np", "4"], {}),
        ("mpiexec, --np 4 but -n 2 in --launcher-args", True, ["--np", "4", LA, "-n 2"], {}),
        ("N copies of one rank (no process manager)", True, ["--np", "3", "--launcher", copies], {}),
        (
            "hostfile of 2 hosts, launcher ignores it",
            True,
            ["--np", "2", "--launcher", drop_f, "--hostfile", str(hosts)],
            {},
        ),
        ("hostfile of this host, 4 slots", False, ["--np", "4", "--hostfile", str(here)], {}),
    ]


def _slurm_cases(name: str) -> tuple[list[Case], dict[str, str], str]:
    """Up a 4-host Slurm cluster ``name``: its cases, its environment (empty: not up) and why not."""
    spec = {
        "schema": "hnowmodel.cluster/1",
        "name": name,
        "hosts": [{"name": f"h{i}", "egress_mbit": 100, "ingress_mbit": 100, "slots": 1} for i in range(1, 5)],
    }
    slurm_env: dict[str, str] = {}
    why_not = ""
    try:
        hm.cluster.slurm.ensure_installed()
        st = hm.cluster.up(spec, slurm=True)
        slurm_env = hm.cluster.slurm_env(st)
    except HnowError as e:
        why_not = str(e)
    if not slurm_env:
        return [], slurm_env, why_not
    srun = ["--launcher", "srun"]
    return (
        [
            ("srun -N 4, --np 4", False, ["--np", "4", *srun, LA, "-N 4"], slurm_env),
            ("srun --mpi=none (singletons)", True, ["--np", "4", "--launcher", "srun --mpi=none"], slurm_env),
            ("srun -N 4 but --np 2 (srun runs on 2 nodes)", True, ["--np", "2", *srun, LA, "-N 4"], slurm_env),
            ("srun, --np 4 but -n 2 in --launcher-args", True, ["--np", "4", *srun, LA, "-n 2"], slurm_env),
            ("srun -N 2 on h1,h2, --np 4", False, ["--np", "4", *srun, LA, "-N 2 -w h1,h2 --overcommit"], slurm_env),
        ],
        slurm_env,
        why_not,
    )


def _check(label: str, mismatch: bool, argv: list[str], env: dict[str, str]) -> dict:
    """Run one case: a mismatch must exit 2 with one error line, a matching set-up must succeed."""
    res = _hnow(argv, env)
    errs = [ln for ln in res.stderr.splitlines() if " error: " in ln]
    others = [ln for ln in res.stderr.splitlines() if ln.strip() and " error: " not in ln and not ln.startswith("[")]
    caught = res.returncode == 2 and len(errs) == 1 and not others and "Traceback" not in res.stderr
    ok = caught if mismatch else res.returncode == 0
    hosts_seen = json.loads(_hnow([*argv, "--json"], env).stdout or "{}").get("hosts") if not mismatch else None
    row = {
        "case": label,
        "mismatch": mismatch,
        "exit": res.returncode,
        "as_expected": ok,
        "line": errs[0].split(" error: ", 1)[1][:400] if errs else f"hosts {hosts_seen}",
    }
    print(f"{'ok ' if ok else 'BAD'} {label}: {row['line']}", flush=True)
    return row


def main() -> None:
    p = parser("start_checks", __doc__)
    args = p.parse_args()
    out = outdir(args.out)
    os.environ.setdefault("HNOW_MPI_LOCK", "/tmp/hnow-mpi.lock")
    tmp = Path(tempfile.mkdtemp(prefix="hnow-start-checks-"))
    cases = _local_cases(tmp)
    name = "startchk"
    more, slurm_env, why_not = _slurm_cases(name)
    cases += more
    rows = []
    try:
        for label, mismatch, argv, env in cases:
            rows.append(_check(label, mismatch, argv, env))
    finally:
        if slurm_env:
            hm.cluster.down(name)
    write_csv(out / "start_checks.csv", rows)
    bad = [r for r in rows if r["mismatch"]]
    caught = sum(r["as_expected"] for r in bad)
    body = [
        f"Command: `{command_line()}`\n\n",
        f"Mismatches caught: **{caught} of {len(bad)}** (exit 2, one line); matching set-ups passed: "
        f"{sum(r['as_expected'] for r in rows if not r['mismatch'])} of {len(rows) - len(bad)}."
        + (f" Slurm cases skipped: {why_not}" if why_not else "")
        + "\n\n",
        md_table(rows),
    ]
    write_markdown(out / "start_checks.md", "hnow: jobs that did not start as asked", body)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
