"""The cluster spec (``hnowmodel.cluster/1``): which virtual hosts, their shaped line rates, MPI slots, (optional)
CPU share and TCP settings (``tcp``: ``tuned``, hnow's; ``default``, Linux's; ``kernel``, this kernel's own), and
(optional) the node type of hosts no profile was calibrated on (``types``: host -> type name, read when a profile
predicts for the cluster).

A spec only says what to build; nothing in it is ever read by calibration. Names become network-namespace,
interface and host names, so they are restricted: a cluster name is ``[a-z0-9]`` (no hyphen, so that
``hn-<cluster>-<host>`` names can be split back unambiguously), a host name is ``[a-z0-9-]`` (not starting or
ending with ``-``), and ``len(cluster) + len(host) <= 11`` because the root-side interface ``hn-<cluster>-<host>``
must fit Linux's 15-character interface names.

>>> spec = from_dict({"schema": "hnowmodel.cluster/1", "name": "lab",
...                   "hosts": [{"name": "n1", "egress_mbit": 160, "ingress_mbit": 160, "slots": 1}]})
>>> spec.hosts[0].egress_mbit, spec.total_slots
(160.0, 1)
>>> [h.name for h in load_spec("demo").hosts]
['f1', 'm1', 's1', 'f2', 'm2', 's2']
>>> spec = from_dict({"schema": "hnowmodel.cluster/1", "name": "lab", "types": {"n1": "fast"},
...                   "hosts": [{"name": "n1", "egress_mbit": 160, "ingress_mbit": 160, "tcp": "default"}]})
>>> spec.hosts[0].tcp, spec.host_types
('default', {'n1': 'fast'})
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import read_json

__all__ = [
    "SCHEMA",
    "HostSpec",
    "ClusterSpec",
    "from_dict",
    "to_dict",
    "load_spec",
    "builtin_specs",
    "MAX_HOSTS",
    "MAX_RATE_MBIT",
    "IFNAME_PREFIX",
    "NETNS_PREFIX",
    "TCP_MODES",
    "LINUX_CONGESTION_CONTROL",
    "check_cluster_name",
    "copy_name",
    "TCP_MODES",
]

SCHEMA = "hnowmodel.cluster/1"
#: Most hosts one spec may have (one namespace, veth pair and address each; the /24 gives room for 253).
MAX_HOSTS = 64
#: Highest shaped rate accepted, Mbit/s (``tbf`` with a small burst cannot hold much more on one machine).
MAX_RATE_MBIT = 10000.0
#: Most ranks one host may run.
MAX_SLOTS = 256
#: Prefix of every interface the cluster makes in the root namespace (bridge ``hn-<cluster>``, veths
#: ``hn-<cluster>-<host>``).
IFNAME_PREFIX = "hn-"
#: Prefix of every network namespace (``hnow-<cluster>-<host>``).
NETNS_PREFIX = "hnow-"
_IFNAMSIZ = 15

_CLUSTER_RE = re.compile(r"^[a-z0-9]+$")
_HOST_RE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_TOP_KEYS = ("schema", "name", "hosts", "types")
_HOST_KEYS = ("name", "egress_mbit", "ingress_mbit", "slots", "cpu_share", "tcp")
#: A host's ``tcp``: ``tuned`` (hnow's settings after ``up``: docs/virtual-cluster.md, "TCP";
#: :class:`hnowmodel.cluster.Shaping`), ``default`` (Linux's defaults: the kernel's settings as a new network
#: namespace starts, with Linux's default congestion control, :data:`LINUX_CONGESTION_CONTROL`) or ``kernel``
#: (everything as the namespace starts, also this kernel's own congestion control, which may differ: BBR here).
TCP_MODES = ("tuned", "default", "kernel")
#: Linux's default congestion control (``CONFIG_DEFAULT_TCP_CONG``, cubic since 2.6.19): what a ``"tcp": "default"``
#: host runs, whatever this kernel was built to default to.
LINUX_CONGESTION_CONTROL = "cubic"
#: Smallest CPU share a host may have (a fraction of one core).
MIN_CPU_SHARE = 0.05


@dataclass(frozen=True)
class HostSpec:
    """One virtual host: its name, the shaped line rates of its link in Mbit/s (egress: what it sends;
    ingress: what it receives), how many MPI ranks it runs (``slots``) and ``cpu_share``: None (the default) for
    the machine's full CPU, else the fraction of one core its ranks get together (a CFS quota of a ``cpu`` cgroup:
    a host with a slower CPU; ranks started through the cluster's exec wrapper, not Slurm's); ``tcp``: ``tuned``
    (hnow's TCP settings, applied by ``up``), ``default`` (Linux's defaults: GSO, ``tcp_limit_output_bytes``, the
    route's initial window and ``tcp_rmem`` as the namespace starts, congestion control
    :data:`LINUX_CONGESTION_CONTROL`) or ``kernel`` (all of it as the namespace starts: this kernel's congestion
    control too)."""

    name: str
    egress_mbit: float
    ingress_mbit: float
    slots: int = 1
    cpu_share: float | None = None
    tcp: str = "tuned"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "egress_mbit": _num(self.egress_mbit),
            "ingress_mbit": _num(self.ingress_mbit),
            "slots": self.slots,
        }
        if self.cpu_share is not None:
            out["cpu_share"] = _num(self.cpu_share)
        if self.tcp != "tuned":
            out["tcp"] = self.tcp
        return out


@dataclass(frozen=True)
class ClusterSpec:
    """A virtual cluster: its name, its hosts in rank-filling order (like an MPI hostfile) and ``types``: the node
    type of hosts a profile has not seen, ``(host, type name)`` pairs (:attr:`host_types`)."""

    name: str
    hosts: tuple[HostSpec, ...]
    # not part of what is built: a cluster up is the same cluster whatever types its spec names (no down/up for them)
    types: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def host_types(self) -> dict[str, str]:
        """The spec's ``types``: host name -> node type name."""
        return dict(self.types)

    @property
    def total_slots(self) -> int:
        """How many ranks fit: the sum of the hosts' slots."""
        return sum(h.slots for h in self.hosts)

    def host(self, name: str) -> HostSpec:
        """The host called ``name`` (:class:`InputError` if there is none)."""
        for h in self.hosts:
            if h.name == name:
                return h
        raise InputError(f"cluster {self.name!r} has no host {name!r}")

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)


def _num(v: float) -> float | int:
    return int(v) if float(v).is_integer() else float(v)


def _rate(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"{where}: must be a number of Mbit/s, got {v!r}")
    f = float(v)
    if not math.isfinite(f) or f <= 0:
        raise InputError(f"{where}: must be a positive finite number of Mbit/s, got {v!r}")
    if f > MAX_RATE_MBIT:
        raise InputError(f"{where}: {v!r} Mbit/s is above the limit of {MAX_RATE_MBIT:g} Mbit/s")
    if f * 1000 < 8:
        raise InputError(f"{where}: {v!r} Mbit/s is below the lowest shaped rate of 0.008 Mbit/s (1 kB/s)")
    return f


def _slots(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer():
        raise InputError(f"{where}: must be a whole number >= 1, got {v!r}")
    n = int(v)
    if n < 1 or n > MAX_SLOTS:
        raise InputError(f"{where}: must be between 1 and {MAX_SLOTS}, got {v!r}")
    return n


def _share(v: Any, where: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"{where}: must be a fraction of one core (0.05 to 1) or null, got {v!r}")
    f = float(v)
    if not math.isfinite(f) or f < MIN_CPU_SHARE or f > 1:
        raise InputError(f"{where}: must be between {MIN_CPU_SHARE:g} and 1 (a fraction of one core), got {v!r}")
    return f


def _tcp(v: Any, where: str) -> str:
    if v not in TCP_MODES:
        raise InputError(f"{where}: must be one of {', '.join(TCP_MODES)}, got {v!r}")
    return str(v)


def _types(doc: Any, hosts: tuple[HostSpec, ...], where: str) -> tuple[tuple[str, str], ...]:
    """The spec's ``types`` map: each key a host of the spec, each value a type name (checked against a profile's
    types where one is used)."""
    if doc is None:
        return ()
    if not isinstance(doc, Mapping):
        raise InputError(f"{where}: must be an object of host name -> node type name, got {type(doc).__name__}")
    names = [h.name for h in hosts]
    out = []
    for host, t in doc.items():
        if host not in names:
            raise InputError(f"{where}.{host}: no such host in the spec (hosts: {', '.join(names)})")
        if not isinstance(t, str) or not t.strip():
            raise InputError(f"{where}.{host}: must be a node type name, got {t!r}")
        out.append((host, t.strip()))
    return tuple(out)


def check_cluster_name(name: Any, where: str = "name") -> str:
    """Validate a cluster name (``[a-z0-9]``, 1..10 characters); returns it."""
    if not isinstance(name, str) or not _CLUSTER_RE.match(name):
        raise InputError(f"{where}: cluster name must be lower-case letters and digits only, got {name!r}")
    if name == "probe":
        raise InputError(f"{where}: 'probe' is reserved (the namespace hnow-probe-PID checks that clusters work)")
    if len(IFNAME_PREFIX) + len(name) + 2 > _IFNAMSIZ:
        raise InputError(f"{where}: cluster name {name!r} is too long (at most {_IFNAMSIZ - len(IFNAME_PREFIX) - 2})")
    return name


def copy_name(spec: ClusterSpec, mark: str = "t") -> str:
    """A name for a copy of ``spec`` with the same hosts (say, in another order) that is not ``spec``'s own and fits
    the interface names of its longest host: ``spec``'s name (cut to fit) with ``mark`` appended, or ``u`` where
    that gives ``spec``'s own name back.

    >>> hosts = (HostSpec("f1-2", 100.0, 100.0),)
    >>> [copy_name(ClusterSpec(name, hosts)) for name in ("s20orun", "abc", "runt")]
    ['s20orut', 'abct', 'runtt']
    """
    longest = max((len(h.name) for h in spec.hosts), default=0)
    room = min(_IFNAMSIZ - len(IFNAME_PREFIX) - 1 - longest, _IFNAMSIZ - len(IFNAME_PREFIX) - 2)
    base = spec.name[: max(room - 1, 0)]
    name = base + mark
    return name if name != spec.name else base + "u"


def _unknown(doc: Mapping, allowed: tuple[str, ...], where: str) -> None:
    extra = [k for k in doc if k not in allowed]
    if extra:
        raise InputError(f"{where}{extra[0]}: unknown key (allowed: {', '.join(allowed)})")


def from_dict(doc: Any, source: str = "cluster spec") -> ClusterSpec:
    """Validate a ``hnowmodel.cluster/1`` document and return the spec; errors name the field."""
    if not isinstance(doc, Mapping):
        raise InputError(f"{source}: expected a JSON object, got {type(doc).__name__}")
    _unknown(doc, _TOP_KEYS, f"{source}: ")
    if doc.get("schema") != SCHEMA:
        raise InputError(f"{source}: schema: expected {SCHEMA!r}, got {doc.get('schema')!r}")
    if "name" not in doc:
        raise InputError(f"{source}: name: missing")
    name = check_cluster_name(doc["name"], f"{source}: name")
    hosts_doc = doc.get("hosts")
    if not isinstance(hosts_doc, list) or not hosts_doc:
        raise InputError(f"{source}: hosts: must be a non-empty list of hosts")
    if len(hosts_doc) > MAX_HOSTS:
        raise InputError(f"{source}: hosts: {len(hosts_doc)} hosts, at most {MAX_HOSTS} are allowed")
    hosts: list[HostSpec] = []
    seen: set[str] = set()
    for i, h in enumerate(hosts_doc):
        where = f"{source}: hosts[{i}]"
        if not isinstance(h, Mapping):
            raise InputError(f"{where}: expected an object, got {type(h).__name__}")
        _unknown(h, _HOST_KEYS, f"{where}.")
        for key in ("name", "egress_mbit", "ingress_mbit"):
            if key not in h:
                raise InputError(f"{where}.{key}: missing")
        hname = h["name"]
        if not isinstance(hname, str) or not _HOST_RE.match(hname):
            raise InputError(f"{where}.name: host name must be lower-case letters, digits and inner '-', got {hname!r}")
        if len(IFNAME_PREFIX) + len(name) + 1 + len(hname) > _IFNAMSIZ:
            limit = _IFNAMSIZ - len(IFNAME_PREFIX) - 1
            raise InputError(
                f"{where}.name: {hname!r} too long for cluster {name!r} (cluster + host names at most {limit} "
                "characters: they form interface names)"
            )
        if hname in seen:
            raise InputError(f"{where}.name: duplicate host {hname!r}")
        seen.add(hname)
        hosts.append(
            HostSpec(
                name=hname,
                egress_mbit=_rate(h["egress_mbit"], f"{where}.egress_mbit"),
                ingress_mbit=_rate(h["ingress_mbit"], f"{where}.ingress_mbit"),
                slots=_slots(h.get("slots", 1), f"{where}.slots"),
                cpu_share=_share(h.get("cpu_share"), f"{where}.cpu_share"),
                tcp=_tcp(h.get("tcp", "tuned"), f"{where}.tcp"),
            )
        )
    return ClusterSpec(name=name, hosts=tuple(hosts), types=_types(doc.get("types"), tuple(hosts), f"{source}: types"))


def to_dict(spec: ClusterSpec) -> dict[str, Any]:
    """The spec as a ``hnowmodel.cluster/1`` document (``from_dict(to_dict(s)) == s``)."""
    doc: dict[str, Any] = {"schema": SCHEMA, "name": spec.name, "hosts": [h.to_dict() for h in spec.hosts]}
    if spec.types:
        doc["types"] = spec.host_types
    return doc


def _demo() -> ClusterSpec:
    # 6 hosts at three speeds, order mixing them so that rank order matters: fast 160, medium 60, slow 25 Mbit/s.
    rates = {"f": 160.0, "m": 60.0, "s": 25.0}
    names = ("f1", "m1", "s1", "f2", "m2", "s2")
    return ClusterSpec("demo", tuple(HostSpec(n, rates[n[0]], rates[n[0]], 1) for n in names))


def _demoslots() -> ClusterSpec:
    # hnow demo's cluster: the demo's three speeds on 6 hosts, one fast host running 2 ranks (7 ranks), so the
    # calibration measures shared memory and each host's NIC, and a node-aware tree has something to win. f2 holds
    # ranks 1-2: a plain binomial tree over the ranks sends to f2 twice and makes the slow s1 (rank 4) the root's
    # first child and an inner node; the two-level tree reaches f2 once and leaves the slow hosts as leaves.
    rates = {"f": 160.0, "m": 60.0, "s": 25.0}
    slots = {"f2": 2}
    names = ("f1", "f2", "m1", "s1", "m2", "s2")
    return ClusterSpec("demoslots", tuple(HostSpec(n, rates[n[0]], rates[n[0]], slots.get(n, 1)) for n in names))


def builtin_specs() -> dict[str, ClusterSpec]:
    """The built-in specs usable by name: ``demo`` (6 hosts at 160/60/25 Mbit/s, speeds mixed in host order) and
    ``demoslots`` (``hnow demo``'s cluster: the same speeds on 6 hosts, the second fast host with 2 ranks: 7 ranks).

    >>> [(h.name, h.slots) for h in builtin_specs()["demoslots"].hosts if h.slots > 1]
    [('f2', 2)]
    """
    return {"demo": _demo(), "demoslots": _demoslots()}


def load_spec(spec: str | os.PathLike | Mapping | ClusterSpec) -> ClusterSpec:
    """A spec from a built-in name (``demo``, ``demoslots``), a JSON file, a dict or a :class:`ClusterSpec`."""
    if isinstance(spec, ClusterSpec):
        return spec
    if isinstance(spec, Mapping):
        return from_dict(spec)
    if not isinstance(spec, (str, os.PathLike)):
        raise InputError(f"cluster spec: expected a name, a file or a dict, got {type(spec).__name__}")
    text = os.fspath(spec)
    builtins = builtin_specs()
    if text in builtins and not Path(text).is_file():  # a folder named like a built-in (./demo) does not shadow it
        return builtins[text]
    if not Path(text).exists() and not text.endswith(".json") and os.sep not in text:
        raise InputError(f"cluster spec {text!r}: no such file or built-in spec (built-in: {', '.join(builtins)})")
    return from_dict(read_json(text, "cluster spec"), f"cluster spec {text!r}")
