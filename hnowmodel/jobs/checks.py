"""What every job shares: gathering loose keywords into a :class:`Launch` and a settings dataclass, the checks
made before any rank starts (testbed, counts, profile, timing, layout), and running a job spec.

The public job functions (``calibrate``, ``measure``, ``compare``, ``bench``, ``info``) take a ``Launch`` (or just
the number of ranks) and a frozen settings dataclass; the ``hnow`` option names given as keywords
(``np=4, testbed="paper", cluster=…, launcher=…, timeout=…``) are gathered into those two by name
(:func:`gather`), so ``hm.compare(prof, np=4, testbed="paper", ops=["bcast"])`` works as it always did while no
signature spells out more than a handful of parameters. An unknown keyword is a :class:`TypeError` naming the
valid ones.

>>> launch, s = gather("info", 3, None, None, {"timeout": 30})
>>> launch.np, launch.timeout_s, s
(3, 30, None)
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from typing import Any, TypeVar

from .. import cluster as _cluster
from .. import ops as _ops
from ..errors import InputError, LayoutError
from ..layout import (
    Layout,
    hosts_of,
    layout_from_hosts,
    merge_host_types,
    one_per_host,
    parse_host_types,
    parse_layout,
)
from ..options import TIMING_METHODS, check_op_sizes, check_ops
from ..params import Profile
from ..testbed import Testbed, load_testbed
from ..trees import Tree
from ..treespec import TreeSpec, native_names, spec_items
from .launcher import Launch, run_task
from .wire import task_argv

__all__ = [
    "Progress",
    "progress_printer",
    "gather",
    "LAUNCH_KEYWORDS",
    "run_job",
    "check_testbed",
    "check_request",
    "check_op_sizes",
    "check_count",
    "load_profile",
    "resolve_timing",
    "job_layout",
    "placement_hosts",
    "stated_types",
    "job_hosts",
    "by_host_name",
    "NATIVE",
    "STATS",
    "AUTO_METHOD",
    "AUTO_STAT",
]

NATIVE = _ops.NATIVE
STATS = ("median", "min")
#: ``method="auto"``: barrier-free synchronised timing everywhere - every rank starts at one instant of the shared
#: clock and the latest finish counts (in C for the library's own collectives); barrier-then-call and back-to-back
#: loops (the paper's Figure 2, ``fig2``) bias small messages by 20-60 % on real MPI. ``stat="auto"``: the minimum
#: over repetitions on a testbed (as the paper; the emulation's only noise is delay), the median on plain MPI.
AUTO_METHOD = {"testbed": "sync", "plain": "sync"}
AUTO_STAT = {"testbed": "min", "plain": "median"}

Progress = Callable[[str], None] | bool | None

#: The job functions' launch keywords -> the :class:`Launch` field each sets (``timeout`` is the flag's name).
LAUNCH_KEYWORDS = {
    "np": "np",
    "launcher": "launcher",
    "launcher_args": "launcher_args",
    "hostfile": "hostfile",
    "timeout": "timeout_s",
    "timeout_s": "timeout_s",
    "cluster": "cluster",
    "mpi": "mpi",
    "env": "env",
}

S = TypeVar("S")


def progress_printer(progress: Progress) -> Callable[[str], None] | None:
    """``True`` -> print progress lines on stderr; a callable as is; ``None``/``False`` -> None (dropped)."""
    if progress is True:
        return lambda line: print(line, file=sys.stderr, flush=True)
    return progress or None


def gather(
    what: str, launch: Launch | int | None, settings_cls: type[S] | None, settings: S | None, keywords: dict
) -> tuple[Launch, S | None]:
    """``launch`` (a :class:`Launch`, a number of ranks, or None: 2) and ``settings`` (an instance of
    ``settings_cls``, or None: its defaults) with the loose ``keywords`` of a job function applied by name."""
    lk = {LAUNCH_KEYWORDS[k]: keywords.pop(k) for k in list(keywords) if k in LAUNCH_KEYWORDS}
    names = [] if settings_cls is None else [f.name for f in fields(settings_cls)]  # type: ignore[arg-type]
    bad = [k for k in keywords if k not in names]
    if bad:
        valid = ", ".join([*names, *LAUNCH_KEYWORDS, "progress"])
        raise TypeError(f"{what}() got an unexpected keyword argument {bad[0]!r} (choose from: {valid})")
    if settings_cls is not None:
        settings = settings if settings is not None else settings_cls()
        settings = replace(settings, **keywords) if keywords else settings  # type: ignore[type-var]
    if isinstance(launch, Launch):
        launch = replace(launch, **lk) if lk else launch
    else:
        if launch is not None and "np" in lk:
            raise TypeError(f"{what}() got the number of ranks twice (positional and np=)")
        lk.setdefault("np", 2 if launch is None else launch)
        lk["launcher_args"] = lk.get("launcher_args") or ()
        launch = Launch(**lk)
    if launch.cluster is not None:
        _cluster.load_spec(launch.cluster)  # a bad spec is found before anything starts
    return launch, settings


def run_job(launch: Launch, job: Any, progress: Progress = None) -> Any:
    """Run a job of :mod:`hnowmodel.jobs.specs` under ``launch`` and return rank 0's document."""
    say = progress_printer(progress)
    task, argv = task_argv(job, quiet=say is None)
    return run_task(launch, task, argv, default_timeout_s=job.default_timeout_s(launch.np), progress=say)


def check_testbed(testbed: str | Testbed | None, cluster: str | None = None) -> Testbed | None:
    """The emulated testbed asked for (None: real MPI); a testbed and a cluster exclude each other."""
    if testbed is not None and cluster is not None:
        raise InputError("--testbed (emulated ranks) and --cluster (real hosts) exclude each other: give one")
    return None if testbed is None else load_testbed(testbed)


def check_request(
    launch: Launch, ops: Any, trees: Any, root: Any, testbed: str | Testbed | None, op_flag: str = "--op"
) -> tuple[tuple[str, ...], list[tuple[str, TreeSpec | Tree]], Testbed | None]:
    """What a job that runs collectives asks for (``measure``, ``compare``), checked before any rank starts: the
    operations (``op_flag``), the tree specs (:func:`hnowmodel.treespec.spec_items`; every ``native[:ALGO]`` one
    some MPI library runs for them), ``root`` a rank of ``launch``, the testbed (none beside a cluster, and no
    ``native`` on it: the library's own sends are not emulated). Returns ``(ops, tree items, testbed)``.

    >>> ops, items, tb = check_request(Launch(np=4), "bcast", "binomial, native", 0, None)
    >>> ops, [name for name, _ in items], tb
    (('bcast',), ['binomial', 'native'], None)
    """
    op_names = tuple(check_ops(ops, op_flag))
    tb = check_testbed(testbed, launch.cluster)
    if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < launch.np:
        raise InputError(f"--root {root!r} is not a rank in 0..{launch.np - 1}")
    items = spec_items(trees)
    natives = native_names(items)
    for op in op_names:  # an operation that no tree runs is measured by the MPI library's own algorithms only
        if _ops.get(op).movement is None and not natives:
            raise InputError(
                f"--tree: {op} runs no tree (its algorithms are message schedules): measure the MPI library's own, "
                "--tree native or native:ALGO"
            )
    for name in natives:
        _ops.check_native(name, op_names)
        if tb is not None:
            raise InputError(
                f"--tree {name} cannot run on the emulated testbed: the MPI library does its own sends, which the "
                "emulation cannot slow down (use --tree binomial, MPICH's binomial tree, over the emulated transport)"
            )
    return op_names, items, tb


def check_count(value: Any, flag: str, lo: int = 1) -> int:
    """``value`` when it is a whole number >= ``lo``; :class:`InputError` naming ``flag`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise InputError(f"{flag} must be a whole number >= {lo}, got {value!r}")
    return value


def load_profile(profile: Profile | str | None) -> Profile | None:
    """A :class:`Profile`, or one loaded from a file (``"paper"``: the paper's Table 1), or None."""
    if profile is None or isinstance(profile, Profile):
        return profile
    return Profile.load(profile)


def resolve_timing(method: str, stat: str, emulated: bool) -> tuple[str, str]:
    """``auto`` method/stat -> the concrete ones for a testbed or plain MPI; :class:`InputError` names choices."""
    where = "testbed" if emulated else "plain"
    if method not in (*TIMING_METHODS, "auto"):
        raise InputError(
            f"unknown timing method (--method) {method!r} (choose from: {', '.join(TIMING_METHODS)}, auto)"
        )
    if stat not in (*STATS, "auto"):
        raise InputError(f"unknown statistic (--stat) {stat!r} (choose from: {', '.join(STATS)}, auto)")
    return (AUTO_METHOD[where] if method == "auto" else method), (AUTO_STAT[where] if stat == "auto" else stat)


def placement_hosts(launch: Launch) -> tuple[str, ...] | None:
    """The host of each rank where the placement is known before the job starts: a virtual cluster's hosts (under
    its ``mpiexec`` or its own Slurm's ``srun``), or a hostfile's, filled in order (the launcher is given the same
    placement); None on plain MPI and under ``srun`` in an allocation (one machine, or Slurm's placement:
    :func:`job_hosts` asks the ranks).

    >>> placement_hosts(Launch(np=2)) is None
    True
    """
    if launch.cluster is not None:
        spec = _cluster.load_spec(launch.cluster)
        return tuple(_cluster.rank_hosts([(h.name, h.slots) for h in spec.hosts], launch.np))
    if launch.hostfile and launch.kind != "srun":
        from .hostfile import place, read_hostfile

        return place(read_hostfile(launch.hostfile), launch.np)
    return None


def stated_types(launch: Launch, types: Any = None) -> tuple[tuple[str, dict[str, str]], ...]:
    """The node types the user names for hosts, by source: the cluster spec's ``types`` and ``types`` (``--types``:
    ``HOST=TYPE,…``, ``@file.json`` or a mapping; :func:`hnowmodel.layout.parse_host_types`).

    >>> stated_types(Launch(np=2), "n1=fast")
    (('--types', {'n1': 'fast'}),)
    """
    out: list[tuple[str, dict[str, str]]] = []
    if launch.cluster is not None:
        spec = _cluster.load_spec(launch.cluster)
        if spec.types:
            out.append((f"the cluster spec {spec.name!r}", spec.host_types))
    given = parse_host_types(types)
    if given:
        out.append(("--types", given))
    return tuple(out)


def job_hosts(
    launch: Launch, layout: Any, prof: Profile | None, types: Any = None, progress: Progress = None
) -> tuple[str, ...] | None:
    """The host of each rank for :func:`job_layout`: :func:`placement_hosts`, else, under ``srun`` in an allocation
    when the layout is to come from the hosts' names (no ``layout``, a profile of several node types that names its
    hosts, or ``types``), the hosts the ranks report from a short ``info`` job (Slurm places the same ``srun``
    arguments the same way in one allocation)."""
    hosts = placement_hosts(launch)
    if hosts is not None or launch.kind != "srun" or layout is not None or prof is None:
        return hosts
    if len(prof.type_names) < 2 or not (prof.host_types or types):
        return None
    from .specs import InfoJob

    say = progress_printer(progress)
    if say is not None:
        say("asking the ranks which hosts srun placed them on (the layout follows the hosts' names)")
    return tuple(str(h) for h in run_job(launch, InfoJob(), progress)["hosts"])


def _with_hosts(got: Layout, hosts: tuple[str, ...] | None, flag: str) -> Layout:
    """``got`` with the placement's hosts: a layout of one rank per host takes them; one that names its own hosts
    must agree with them."""
    if hosts is None or len(set(hosts)) == len(hosts) or len(hosts) != len(got):
        return got
    placed = [hosts.index(h) for h in hosts]
    if not one_per_host(got):
        if not (Layout(list(got), placed) == got):
            raise LayoutError(
                f"{flag} puts ranks on hosts {got.hosts.tolist()} but they run on {list(hosts)} (ranks fill each "
                "host's slots in order)"
            )
        return Layout(list(got), got.hosts, list(dict.fromkeys(hosts)))
    try:
        return Layout(list(got), placed, list(dict.fromkeys(hosts)))
    except LayoutError as e:
        raise LayoutError(f"{flag}: {e} (the ranks run on hosts {list(hosts)})") from None


def job_layout(
    layout: Any,
    np: int,
    tb: Testbed | None,
    prof: Profile | None,
    flag: str = "--layout",
    hosts: tuple[str, ...] | None = None,
    types: tuple[tuple[str, Mapping[str, str]], ...] = (),
) -> Layout | None:
    """The node type of each rank (a :class:`~hnowmodel.layout.Layout`), from ``layout`` (checked against the
    testbed's or the profile's types), else the testbed's ranks, else by host name where the ranks' ``hosts``
    (:func:`placement_hosts`, :func:`job_hosts`) are known (:func:`by_host_name`: the hosts the profile was
    calibrated on, and ``types``, :func:`stated_types`, for others), else the profile's calibration layout when it
    has ``np`` ranks, else None. The layout takes the ranks' ``hosts`` (several ranks of a host share its NIC and
    talk through shared memory)."""
    if layout is not None:
        known = list(tb.types) if tb is not None else list(prof.type_names) if prof is not None else None
        if known is None:
            raise InputError(f"{flag} needs --testbed or --profile (to know the node types)")
        got = parse_layout(layout, known)
    elif tb is not None:
        got = tb.layout_for(np)
    elif prof is not None and len(prof.type_names) == 1:
        got = (prof.type_names[0],) * np
    elif prof is not None and hosts is not None and len(hosts) == np and (named := by_host_name(prof, hosts, types)):
        return named
    elif prof is not None and len(prof.layout) == np:
        got = tuple(prof.layout)
    else:
        return None
    if len(got) != np:
        raise LayoutError(f"{flag} has {len(got)} ranks but --np is {np}")
    lay = got if isinstance(got, Layout) else Layout(got, hosts_of(got))
    return _with_hosts(lay, hosts, flag)


def by_host_name(
    prof: Profile, hosts: tuple[str, ...], types: tuple[tuple[str, Mapping[str, str]], ...] = ()
) -> Layout | None:
    """The layout of ranks on ``hosts`` (rank ``i`` on ``hosts[i]``), each host with the node type the profile
    calibrated it as (:attr:`~hnowmodel.params.Profile.host_types`) or the type ``types`` names for it
    (:func:`stated_types`; a host typed differently by two sources is an error). A host neither knows is a
    :class:`LayoutError` naming it, unless no host of the placement is known and nothing is stated: then None (the
    ranks' host names are not those the profile recorded, e.g. a hostfile of addresses; the caller keeps the
    calibration's layout rank by rank).

    >>> from dataclasses import replace
    >>> from hnowmodel.params import paper_profile
    >>> p = replace(paper_profile(), nodes=({"rank": 0, "host": "a", "type": "fast"},
    ...                                     {"rank": 1, "host": "b", "type": "slow"}))
    >>> lay = by_host_name(p, ("b", "b", "a"))
    >>> lay, lay.host_names
    (('slow', 'slow', 'fast'), ('b', 'a'))
    >>> by_host_name(p, ("x", "y")) is None
    True
    """
    known = merge_host_types(("the profile", prof.host_types), *types)
    if not types and not any(h in known for h in hosts):
        return None
    hint = 'name its node type with --types HOST=TYPE (or the cluster spec\'s "types"), or give --layout'
    return layout_from_hosts(hosts, known, prof.type_names, hint)
