"""The demo's message-schedule collective, :data:`OP` (allreduce): the MPI library's default beside the algorithm hnow
chooses for the cluster, predicted and measured (times in µs, sizes in bytes: the operation's ``m``, the vector).

On the virtual cluster, for each of the demo's sizes:

1. **the choice**: :func:`hnowmodel.search.best_algorithm` (what ``hnow best --op allreduce`` runs) among the
   algorithms the running library can be told to run (:func:`runnable`: its ``native:ALGO`` pins, each modelled by
   the schedule algorithm of that name), each in the rank order the search finds for it, with the library's default
   (in the launched order) among the candidates, under the operation's default model variant for the profile (its γ,
   the reduction cost, is the calibration's);
2. **the default**, ``native`` (the library's own selection), measured and predicted by ``hm.compare``;
3. **the choice**, ``native:ALGO`` pinned, its ranks reordered by ``MPI_Comm_split`` keys (``keys[perm[p]] = p``:
   the rank at position p of the chosen order becomes rank p), measured, and predicted on the layout in that order;
   where the default itself is the choice its measurement is the default's.

The rows are named ``native`` (the default) and ``optimal`` (the choice: its ``note`` says which algorithm and
order); :func:`gain_rows` gives the choice's gain over the default, predicted and measured; :func:`markdown` the
report's section. The emulated testbed cannot show it (:data:`TESTBED_NOTE`), nor a profile without γ
(:func:`why_not`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import ops
from ..jobs import compare, measure
from ..jobs.compared import compare_rows
from ..jobs.results import ComparisonRow, rows_as_dicts
from ..layout import Layout
from ..params import Profile
from ..search import best_algorithm
from ..search.result import BestTree
from ..sizes import format_size
from ..tuning.choose import gain_pct

__all__ = [
    "OP",
    "WHAT",
    "TESTBED_NOTE",
    "Choice",
    "runnable",
    "choose",
    "why_not",
    "schedule_rows",
    "gain_rows",
    "markdown",
]

#: The message-schedule operation the demo shows beside the tree operations: the collective real jobs (solvers,
#: training) spend most of their communication time in. One operation, so that the demo stays under ~3 minutes.
OP = "allreduce"
#: The gains table's name for the choice's gain over the library's default.
WHAT = "optimal algorithm vs the library's default"
#: Why the emulated testbed's demo has no allreduce rows.
TESTBED_NOTE = (
    "its algorithms are the MPI library's own (message schedules), whose sends the emulated testbed cannot slow "
    "down, and the testbed's calibration measures no reduction cost (γ); as root, `hnow demo` shows it on a virtual "
    "cluster"
)


def runnable(op: str, library: str, layout: Sequence[str], size: int) -> dict[str, str]:
    """The schedule algorithms ``library`` can be told to run for ``op`` on ``layout`` at ``size`` bytes, each with
    the ``native:ALGO`` spec that pins it (the library's default left out: it is a candidate of its own).

    >>> runnable("allreduce", "MPICH", ["fast"] * 6, 65536)
    {'recursive_doubling': 'native:recursive_doubling', 'reduce_scatter_allgather': 'native:reduce_scatter_allgather', 'ring': 'native:ring'}
    """  # noqa: E501
    default = ops.get(op).native.get(library)
    out: dict[str, str] = {}
    for nat in ops.native_algorithms(op, library):
        run = None if nat is default else nat.on(layout, int(size))
        if run is not None:  # an algorithm hnow models on this layout at this size
            out.setdefault(str(getattr(run[0], "name", run[0])), f"{ops.NATIVE}:{nat.algorithm}")
    return out


@dataclass(frozen=True)
class Choice:
    """hnow's choice for :data:`OP` at ``size`` bytes: the search's result (``best``: its predicted µs, the
    library's default's), the tree spec that runs it (``native:ALGO``, or ``native`` where the default is the
    choice) and its rank order (``perm[p]``: the rank at position p; None: as launched)."""

    size: int
    best: BestTree
    spec: str
    perm: tuple[int, ...] | None

    @property
    def keys(self) -> list[int] | None:
        """The ``MPI_Comm_split`` keys that run :attr:`perm` (``keys[perm[p]] = p``: the rank at position p becomes
        rank p).

        >>> Choice(8, None, "native:ring", (2, 0, 1)).keys
        [1, 2, 0]
        """
        return None if self.perm is None else np.argsort(self.perm).tolist()


def choose(profile: Profile, layout: Sequence[str], size: int, library: str, reduce_us_per_byte: Any = None) -> Choice:
    """The algorithm hnow chooses for :data:`OP` at ``size`` bytes among those ``library`` runs (:func:`runnable`)
    and its default, with its rank order (γ: ``reduce_us_per_byte``, None: the profile's).

    >>> import hnowmodel as hm
    >>> c = choose(hm.paper_profile(), ["slow", "fast", "fast", "slow"], 65536, "MPICH", reduce_us_per_byte=0.001)
    >>> c.spec, c.best.time_us < c.best.defaults_us["MPICH"]
    ('native:ring', True)
    """
    cands = runnable(OP, library, layout, size)
    best = best_algorithm(
        profile, layout, OP, size, libraries=[library], candidates=list(cands), reduce_us_per_byte=reduce_us_per_byte
    )
    if best.method.startswith(f"{ops.NATIVE}:"):  # the library's default
        return Choice(int(size), best, ops.NATIVE, None)
    perm = tuple(int(r) for r in best.perm) if best.perm is not None else None
    return Choice(int(size), best, cands[best.method], None if perm == tuple(range(len(layout))) else perm)


def why_not(profile: Profile, library: str) -> str:
    """Why :data:`OP` cannot be shown with ``profile`` under ``library`` ('' when it can): a profile without γ, a
    library whose algorithms hnow does not pin.

    >>> import hnowmodel as hm
    >>> why_not(hm.paper_profile(), "MPICH")[:46]
    'the profile has no reduction cost (γ), which a'
    """
    if ops.get(OP).reduction and not getattr(profile, "has_reduce_cost", False):
        return (
            f"the profile has no reduction cost (γ), which an {OP} prediction needs (`hnow calibrate` on real MPI "
            "measures it)"
        )
    if library not in ops.native_libraries(OP):
        return f"hnow pins no {OP} algorithm of {library or 'this MPI library'}"
    return ""


def _order(layout: Sequence[str], perm: Sequence[int]) -> Sequence[str]:
    """``layout`` with position p on rank ``perm[p]`` (its hosts kept)."""
    return layout.take(perm) if isinstance(layout, Layout) else [layout[int(r)] for r in perm]


def schedule_rows(
    profile: Profile, layout: Sequence[str], np_: int, grid: Sequence[int], reps: int, launch: dict[str, Any],
    library: str,
) -> tuple[list[dict[str, Any]], list[BestTree]]:  # fmt: skip
    """Measure and predict :data:`OP` by ``library``'s default and by the algorithm :func:`choose` picks, at each of
    ``grid`` (bytes): the rows (dicts, ``tree`` ``native`` and ``optimal``) and the choices."""
    variant = ops.check_variant(OP, None, profile)
    common = {"np": np_, "layout": ",".join(layout), "reps": reps, "iters": 2, "both": False, **launch}
    cmp = compare(profile, ops=[OP], trees=[ops.NATIVE], sizes=list(grid), progress=None, **common)
    default = {r.size: r for r in cmp.rows}
    rows: list[ComparisonRow] = []
    choices = []
    for m in grid:
        c = choose(profile, layout, m, library)
        choices.append(c)
        if c.spec == ops.NATIVE:  # the default is the choice: its own measurement
            got = replace(default[m], note="hnow's choice: the library's default")
        else:
            mm = measure(op=OP, tree=c.spec, sizes=[m], profile=profile, keys=c.keys, **common)
            order = layout if c.perm is None else _order(layout, c.perm)
            (got,) = compare_rows(profile, order, mm, {c.spec: None}, {OP: variant}, 0, library)
            how = "as launched" if c.perm is None else f"in the order {' '.join(map(str, c.perm))} (MPI_Comm_split)"
            got = replace(got, note=f"hnow's choice: {c.spec}, ranks {how}")
        rows += [default[m], replace(got, tree="optimal", chosen_for_bytes=m)]  # chosen at its own size
    return [{"config": "cluster", "layout": ",".join(layout), **r} for r in rows_as_dicts(rows)], choices


def gain_rows(rows: Sequence[dict[str, Any]], choices: Sequence[Choice]) -> list[dict[str, Any]]:
    """Per size the choice's gain over the default (%), predicted and measured, as the demo's gains table has them
    (``keys``: the choice's ``MPI_Comm_split`` keys; ``detail``: what ran, in words)."""
    out = []
    for c in choices:
        b, o = _pair(rows, c.size)
        out.append(
            {
                "what": WHAT,
                "op": OP,
                "size": c.size,
                "predicted_gain_pct": gain_pct(b["predicted_us"], o["predicted_us"]),
                "measured_gain_pct": gain_pct(b["measured_us"], o["measured_us"]),
                "keys": "" if c.keys is None else " ".join(map(str, c.keys)),
                "detail": f"{c.spec}{'' if c.perm is None else ', ranks reordered'} vs {_default_name(c)}",
            }
        )
    return out


def _pair(rows: Sequence[dict[str, Any]], size: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The default's row and the choice's at ``size``."""
    by = {r["tree"]: r for r in rows if r["op"] == OP and r["size"] == size}
    return by[ops.NATIVE], by["optimal"]


def _default_name(c: Choice) -> str:
    """What the library's default runs at the choice's size (its model algorithm), e.g. ``reduce_scatter_allgather``."""
    name = next(iter(c.best.default_names.values()), "default")
    return name.removeprefix("default (").removesuffix(")") if name.startswith("default (") else name


def _ms(us: float | None) -> str:
    return "n/a" if us is None else f"{us / 1e3:.2f}"


def markdown(rows: Sequence[dict[str, Any]], choices: Sequence[Choice], library: str, note: str = "") -> str:
    """The report's section: per size the library's default and hnow's choice, predicted / measured (ms), and the
    gain; ``note`` instead when :data:`OP` is not shown."""
    text = f"\n## {OP}: {library or 'the library'}'s default vs the algorithm hnow chooses\n\n"
    if note:
        return text + f"Not shown: {note}.\n"
    text += (
        f"hnow's choice (`hnow best --op {OP}`): the fastest of the algorithms {library} can be told to run, each in "
        "the rank order the search finds for it (run with MPI_Comm_split keys), or the default itself; measured "
        f"pinned (`native:ALGO`) beside the default (`native`). Times in ms, predicted / measured.\n\n"
        "| size | default runs | default | hnow's choice | ranks in the order | choice | gain predicted | "
        "gain measured |\n|---|---|---|---|---|---|---|---|\n"
    )
    for c in choices:
        b, o = _pair(rows, c.size)
        p, q = gain_pct(b["predicted_us"], o["predicted_us"]), gain_pct(b["measured_us"], o["measured_us"])
        default = _default_name(c)
        order = "launched" if c.perm is None else " ".join(map(str, c.perm))
        text += (
            f"| {format_size(c.size)} | {default} | {_ms(b['predicted_us'])} / {_ms(b['measured_us'])} | "
            f"{c.spec} | {order} | {_ms(o['predicted_us'])} / {_ms(o['measured_us'])} | "
            f"{'n/a' if p is None else f'{p:.1f} %'} | {'n/a' if q is None else f'{q:.1f} %'} |\n"
        )
    return text
