"""The Linux side of a virtual cluster: checks, batched ``ip``/``tc`` commands, what exists, killing what is inside.

Everything is done with a handful of processes whatever the number of hosts: ``ip -batch`` in the root namespace,
``ip -n NS -batch`` / ``tc -n NS -batch`` per host (run concurrently) and one root ``tc -batch``. What exists is
read from ``/run/netns`` and ``/sys/class/net`` (no process); the processes inside a namespace are found as
``ip netns pids`` does, by comparing ``/proc/PID/ns/net`` with the namespace's file.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence

from ..errors import HnowError
from .procs import EXIT_WAIT_S, stop_processes

__all__ = [
    "NETNS_DIR",
    "require",
    "tools",
    "run",
    "start",
    "wait_all",
    "existing_namespaces",
    "existing_links",
    "namespace_pids",
    "kill_namespace_processes",
    "used_networks",
    "probe",
]

#: Where ``ip netns`` keeps its namespaces (``ip netns add NS`` bind-mounts ``/run/netns/NS``).
NETNS_DIR = "/run/netns"
_TOOLS = ("ip", "tc", "unshare", "hostname")
_checked = False


def tools() -> dict[str, str]:
    """Absolute paths of ``ip``, ``tc``, ``unshare`` and ``hostname``; HnowError names the missing one."""
    out = {}
    for t in _TOOLS:
        path = shutil.which(t) or next(
            (p for p in (f"/usr/sbin/{t}", f"/sbin/{t}", f"/usr/bin/{t}", f"/bin/{t}") if os.access(p, os.X_OK)),
            None,
        )
        if path is None:
            pkg = "iproute2" if t in ("ip", "tc") else ("util-linux" if t == "unshare" else "hostname")
            raise HnowError(f"virtual cluster needs the '{t}' command ({pkg}), which is not installed")
        out[t] = path
    return out


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[0] if lines else "no message"


def run(cmd: Sequence[str], stdin: str | None = None, what: str | None = None) -> str:
    """Run a command, return its stdout; HnowError with its first stderr line when it fails."""
    proc = subprocess.run(list(cmd), input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise HnowError(f"{what or ' '.join(cmd[:3])} failed: {_first_line(proc.stderr or proc.stdout)}")
    return proc.stdout


def start(cmd: Sequence[str], stdin: str) -> subprocess.Popen:
    """Start a batch command (``ip -batch -`` etc.) with its commands on stdin; see :func:`wait_all`."""
    proc = subprocess.Popen(list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc._hnow_stdin = stdin  # type: ignore[attr-defined]
    return proc


def wait_all(procs: Iterable[tuple[str, subprocess.Popen]]) -> None:
    """Feed and wait for every started batch; HnowError naming the first that failed (after all finished)."""
    errors = []
    for what, proc in procs:
        _, err = proc.communicate(proc._hnow_stdin)  # type: ignore[attr-defined]
        if proc.returncode != 0:
            errors.append(f"{what} failed: {_first_line(err)}")
    if errors:
        raise HnowError(errors[0])


def require() -> None:
    """Check (once per process) that a virtual cluster can be built here: root, the commands, network namespaces
    and the ``tbf`` qdisc. HnowError says in one line what is missing."""
    global _checked
    if _checked:
        return
    if os.geteuid() != 0:
        raise HnowError("virtual cluster needs root (network namespaces and traffic shaping): run as root")
    t = tools()
    probe(t)
    _checked = True


def probe(t: dict[str, str] | None = None) -> None:
    """Make a throw-away namespace ``hnow-probe-<pid>``, add a ``tbf`` qdisc in it, remove it."""
    t = t or tools()
    ns = f"hnow-probe-{os.getpid()}"
    try:
        run([t["ip"], "netns", "add", ns], what="network namespaces ('ip netns add')")
    except HnowError as e:
        raise HnowError(f"virtual cluster needs network namespaces: {str(e).split(': ', 1)[-1]}") from None
    try:
        try:
            run(
                [
                    t["tc"],
                    "-n",
                    ns,
                    "qdisc",
                    "add",
                    "dev",
                    "lo",
                    "root",
                    "tbf",
                    "rate",
                    "1mbit",
                    "burst",
                    "8kb",
                    "limit",
                    "65536",
                ],
                what="tc tbf",
            )
        except HnowError as e:
            raise HnowError(f"virtual cluster needs the tbf qdisc (sch_tbf): {str(e).split(': ', 1)[-1]}") from None
    finally:
        subprocess.run([t["ip"], "netns", "del", ns], capture_output=True)


def existing_namespaces() -> set[str]:
    """Names of the namespaces ``ip netns`` knows (the files in ``/run/netns``)."""
    try:
        return set(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return set()


def existing_links() -> set[str]:
    """Names of the network interfaces of the root namespace (of this process's namespace)."""
    try:
        return set(os.listdir("/sys/class/net"))
    except FileNotFoundError:
        return set()


def namespace_pids(namespaces: Iterable[str]) -> dict[str, list[int]]:
    """The processes inside each named namespace (as ``ip netns pids NS``): namespace -> pids."""
    want = {}
    for ns in namespaces:
        with contextlib.suppress(OSError):
            st = os.stat(os.path.join(NETNS_DIR, ns))
            want[(st.st_dev, st.st_ino)] = ns
    out: dict[str, list[int]] = {ns: [] for ns in want.values()}
    if not want:
        return out
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            st = os.stat(f"/proc/{entry}/ns/net")
        except OSError:
            continue
        ns = want.get((st.st_dev, st.st_ino))
        if ns is not None:
            out[ns].append(int(entry))
    return out


def kill_namespace_processes(namespaces: Iterable[str], wait_s: float = EXIT_WAIT_S) -> list[int]:
    """SIGKILL every process inside the namespaces and return when each has exited and been reaped
    (:func:`.procs.stop_processes`, which raises naming any still running); the pids."""
    pids = [p for ps in namespace_pids(namespaces).values() for p in ps]
    return stop_processes(pids, "processes inside the cluster's namespaces", wait_s)


def used_networks(ip: str) -> list[ipaddress.IPv4Network]:
    """Every IPv4 network routed or addressed in this namespace (all routing tables), to choose a free subnet."""
    out: list[ipaddress.IPv4Network] = []
    for cmd in ([ip, "-j", "-4", "route", "show", "table", "all"], [ip, "-j", "-4", "addr", "show"]):
        try:
            doc = json.loads(run(cmd) or "[]")
        except (HnowError, ValueError):
            continue
        for r in doc:
            dsts = (
                [r.get("dst")]
                if "dst" in r
                else [f"{a['local']}/{a.get('prefixlen', 32)}" for a in r.get("addr_info", []) if "local" in a]
            )
            for dst in dsts:
                if not dst or dst == "default":
                    continue
                with contextlib.suppress(ValueError):
                    out.append(ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False))
    return out
