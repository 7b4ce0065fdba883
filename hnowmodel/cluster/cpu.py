"""A host's CPU share: a ``cpu`` cgroup with a CFS quota for the ranks of a host whose spec has ``cpu_share``.

A host with a slower CPU is emulated by a quota: its ranks together get ``cpu_share`` of one core, as
``QUOTA_US`` µs of CPU time per period of ``QUOTA_US / cpu_share`` µs (the kernel's smallest quota is 1 ms, so
the period grows as the share shrinks). Work longer than a few periods then takes ``1 / cpu_share`` times as long;
work shorter than one period is either untouched or delayed by a whole throttled stretch, so the quota slows long
computations (the calibration's CPU probe, tens of ms of copies) evenly and short ones only now and then
(docs/virtual-cluster.md, "A host with a slower CPU"). The cgroup is ``<root>/hnow-<cluster>-<host>`` under the
cgroup-v1 ``cpu`` hierarchy or the cgroup-v2 root (where its ``cpu`` controller is enabled); the exec wrapper moves
each rank's shell into it.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from ..errors import HnowError

__all__ = ["QUOTA_US", "cgroup_root", "cgroup_path", "quota", "make_cgroup", "remove_cgroup", "cgroup_leftovers"]

#: CPU time per period of a host with a share (µs): the kernel's smallest quota.
QUOTA_US = 1000
_V1 = Path("/sys/fs/cgroup/cpu")
_V2 = Path("/sys/fs/cgroup")


def cgroup_root() -> Path:
    """The folder cgroups with a CPU quota are made in (v1 ``cpu`` hierarchy first); HnowError when there is none."""
    if (_V1 / "cpu.cfs_quota_us").exists():
        return _V1
    with contextlib.suppress(OSError):
        if "cpu" in (_V2 / "cgroup.subtree_control").read_text().split():
            return _V2
    raise HnowError(
        "a host with cpu_share needs the cgroup 'cpu' controller (cgroup v1 /sys/fs/cgroup/cpu, or cgroup v2 with "
        "'cpu' in /sys/fs/cgroup/cgroup.subtree_control), which this machine does not offer"
    )


def cgroup_path(namespace: str) -> str:
    """The cgroup of the host whose namespace is ``namespace``."""
    return str(cgroup_root() / namespace)


def quota(share: float) -> tuple[int, int]:
    """``(quota_us, period_us)`` giving ``share`` of one core.

    >>> quota(0.5), quota(0.25), quota(1.0)
    ((1000, 2000), (1000, 4000), (1000, 1000))
    """
    return QUOTA_US, round(QUOTA_US / share)


def make_cgroup(path: str, share: float) -> None:
    """Make the cgroup ``path`` (or take the one there) with ``share`` of one core."""
    q, period = quota(share)
    p = Path(path)
    try:
        p.mkdir(exist_ok=True)
        if (p / "cpu.cfs_quota_us").exists():
            (p / "cpu.cfs_quota_us").write_text("-1")  # a period below the quota in force is refused
            (p / "cpu.cfs_period_us").write_text(str(period))
            (p / "cpu.cfs_quota_us").write_text(str(q))
        else:
            (p / "cpu.max").write_text(f"{q} {period}")
    except OSError as e:
        raise HnowError(f"cannot make the cgroup {path} for a CPU share ({e.strerror or e})") from None


def remove_cgroup(path: str, wait_s: float = 2.0) -> bool:
    """Remove the cgroup ``path`` (its processes must have exited); True when it is gone."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def cgroup_leftovers(prefix: str) -> list[str]:
    """Cgroups whose names start with ``prefix`` (a cluster's ``hnow-<cluster>-``), found without its state."""
    for root in (_V1, _V2):
        with contextlib.suppress(OSError):
            return sorted(str(p) for p in root.iterdir() if p.is_dir() and p.name.startswith(prefix))
    return []
