"""Why a row of ``hnow tune`` chose what it chose: the model terms that decide it, from the model itself.

Each predicted time is taken apart by the profile's terms, grouped as a reader names them: the send, receive and
local-copy overheads of each node type, each link between two types (and the network's default one), the shared
memory and the NIC of each type's hosts (the NIC is what the ranks of one host share), the reduction cost γ of each
type. A group's share of a time is its **elasticity**: the time is predicted again with that group's costs 1 %
higher (µs, µs per byte; a NIC's bytes per µs 1 % lower) and 1 % lower, and the difference, scaled back to 100 %,
is the µs the group accounts for. Both sides, because the model's times are maxima (of paths) and minima (a type's
capacity is its fastest link's): where two terms tie, growing one alone moves a maximum and not a minimum,
shrinking it the other way round, and the mean of the two gives each its half. The shares of the terms on which a
time depends add up to about it (exactly where the model is smooth: every cost grown at once grows every time in
proportion). The ``why`` of a row names the group that weighs most in the default's time as launched and what the
chosen algorithm, in the tuned order, spends on it (and, when another group weighs most there, that one):

    default 812 µs: 71 % link slow→fast; chosen 300 µs: link slow→fast 40 %, most send overhead of fast 45 %

Nothing is written per case: any profile and shape gets its rows explained the same way.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import ops as _ops
from ..errors import HnowError
from ..export import Export
from ..export.choose import export_layout
from ..libraries import run_by
from ..params import Profile

__all__ = ["STEP", "term_groups", "shares", "explain", "why_text"]

#: The relative growth given to a group's costs to weigh it.
STEP = 0.01

_KEYS = {"send overhead": ("Sc_us", "Sm_us_per_byte"), "receive overhead": ("Rc_us", "Rm_us_per_byte")}
_KEYS["local copy"] = ("Cc_us", "Cm_us_per_byte")


def _scale(node: Any, f: float, keys: Sequence[str] | None = None) -> None:
    """Costs in ``node`` (nested dicts and lists) grown by ``f`` in place: µs and µs per byte times ``f``, bytes
    per µs divided by it; only ``keys`` when given."""
    if isinstance(node, list):
        for x in node:
            _scale(x, f, keys)
        return
    if not isinstance(node, dict):
        return
    for k, v in node.items():
        if isinstance(v, (dict, list)):
            _scale(v, f, keys)
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and (keys is None or k in keys):
            if k.endswith("_per_us"):
                node[k] = v / f
            elif k.endswith(("_us", "_us_per_byte")):
                node[k] = v * f


def term_groups(doc: dict[str, Any]) -> Iterator[tuple[str, Callable[[dict[str, Any], float], None]]]:
    """The groups of a profile document's terms: (name, a function growing the group's costs in a copy).

    >>> from hnowmodel.params import paper_profile
    >>> [name for name, _ in term_groups(paper_profile().to_dict())][:4]
    ['send overhead of fast', 'receive overhead of fast', 'local copy of fast', 'send overhead of slow']
    """
    for t in doc.get("types", {}):
        for what, keys in _KEYS.items():
            yield f"{what} of {t}", lambda d, f, t=t, keys=keys: _scale(d["types"][t], f, keys)
    if "network" in doc:
        yield "network", lambda d, f: _scale(d["network"], f)
    for i, link in enumerate(doc.get("links") or ()):
        yield f"link {link['from']}→{link['to']}", lambda d, f, i=i: _scale(d["links"][i], f)
    hosts = doc.get("hosts") or {}
    for part, what in (("shm", "shared memory"), ("nic", "NIC")):
        for t in hosts.get(part) or {}:
            yield f"{what} of {t} hosts", lambda d, f, part=part, t=t: _scale(d["hosts"][part][t], f)
    for t in ((doc.get("extensions") or {}).get("reduce") or {}).get("types") or {}:
        yield f"reduction cost γ of {t}", lambda d, f, t=t: _scale(d["extensions"]["reduce"]["types"][t], f)


def _grown(profile: Profile) -> list[tuple[str, Profile, Profile]]:
    """``profile`` twice per term group: that group's costs grown by :data:`STEP`, and shrunk by it."""
    doc = profile.to_dict()
    out = []
    for name, grow in term_groups(doc):
        up, down = copy.deepcopy(doc), copy.deepcopy(doc)
        grow(up, 1.0 + STEP)
        grow(down, 1.0 - STEP)
        where = "profile (a term grown)"
        out.append((name, Profile.from_dict(up, where=where), Profile.from_dict(down, where=where)))
    return out


def shares(
    predict: Callable[[Profile], np.ndarray], profile: Profile, grown: Sequence[tuple[str, Profile, Profile]]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The times ``predict(profile)`` (µs per size) and, per term group, the µs of them it accounts for (its
    elasticity times the time: the mean of the growth with the group grown by :data:`STEP` and the loss with it
    shrunk, each scaled to 100 %). A side that moves the time by more than all of it, scaled so, crosses a jump of
    the model (another protocol, another order of the flows): it counts as all of the time, no more.

    >>> from hnowmodel.params import paper_profile
    >>> p = paper_profile()  # a time of 3 network latencies: all of it is the network's
    >>> base, by = shares(lambda q: np.array([3.0 * q.network.Xc_us]), p, _grown(p))
    >>> base.tolist(), round(float(by["network"][0]), 9), float(by["send overhead of fast"][0])
    ([48.0], 48.0, 0.0)
    """
    base = np.asarray(predict(profile), dtype=float)
    out = {}
    for name, up, down in grown:
        rise = np.clip((np.asarray(predict(up), dtype=float) - base) / STEP, -np.abs(base), np.abs(base))
        fall = np.clip((base - np.asarray(predict(down), dtype=float)) / STEP, -np.abs(base), np.abs(base))
        out[name] = (rise + fall) / 2
    return base, out


def _us(t: float) -> str:
    """µs for a reader: three digits below 100, whole µs above.

    >>> _us(63.52), _us(422016.4)
    ('63.5 µs', '422,016 µs')
    """
    return f"{t:.3g} µs" if abs(t) < 100 else f"{t:,.0f} µs"


def why_text(
    default: tuple[float, dict[str, float]] | None,
    chosen: tuple[float, dict[str, float]] | None,
    changed: bool,
    label: str = "chosen",
) -> str:
    """The ``why`` of one row from the default's and the choice's times (µs) and their µs per term group
    (``label`` names the choice: ``chosen``, or ``tuned order`` for the default's algorithm in another order).

    >>> why_text((100.0, {"link a→b": 70.0, "send overhead of a": 30.0}), (60.0, {"link a→b": 10.0,
    ...     "send overhead of a": 50.0}), True)
    'default 100 µs: 70 % link a→b; chosen 60 µs: link a→b 17 %, most send overhead of a 83 %'
    >>> why_text((100.0, {"link a→b": 70.0}), None, False)
    'default fastest (100 µs: 70 % link a→b)'
    """
    if default is None:
        return "the library's default is not modelled: kept"
    t, parts = default
    top = max(parts, key=lambda k: parts[k]) if parts else None
    if top is None or not t > 0:
        return f"default {_us(t)}"
    lead = f"{100 * parts[top] / t:.0f} % {top}"
    if not changed or chosen is None:
        return f"default fastest ({_us(t)}: {lead})"
    c, cparts = chosen
    text = f"default {_us(t)}: {lead}; {label} {_us(c)}: {top} {100 * cparts.get(top, 0.0) / c:.0f} %"
    ctop = max(cparts, key=lambda k: cparts[k]) if cparts else top
    if ctop != top:
        text += f", most {ctop} {100 * cparts[ctop] / c:.0f} %"
    return text


def _layouts(prof: Profile, ex: Export) -> tuple[Any, Any]:
    """The ranks as launched and in ``ex``'s order, as :func:`hnowmodel.export.export` chose for them."""
    launched, _ = export_layout(prof, None)
    if ex.order is None:
        return launched, launched
    perm = [int(r) for r in ex.order.perm]
    own = prof.host_layout
    types = [nd["type"] for nd in sorted(prof.nodes, key=lambda nd: nd.get("rank", 0))]
    tuned = own.take(perm) if own is not None and not own.one_per_host else [types[r] for r in perm]
    return launched, export_layout(prof, tuned)[0]


def _close(part: tuple[float, dict[str, float]] | None, us: float | None) -> bool:
    """Whether a time taken apart is the row's own (the same prediction), or there is nothing to compare."""
    return part is None or us is None or abs(part[0] - us) <= 1e-6 * max(abs(us), 1.0)


def explain(prof: Profile, library: str, ex: Export, rows: Sequence[Any]) -> dict[tuple[str, int], str]:
    """The ``why`` of each row (``op``, ``size``, ``default``, ``chosen``, ``default_us``, ``chosen_us``: a
    :class:`~.choose.TuneRow`) of one shape (``prof``: the profile on it) for ``library``, whose tuned order is
    ``ex``'s; keyed by (op, size). A time the model cannot take apart again (it gives another number) says so."""
    layouts = _layouts(prof, ex)  # the default runs as launched (0), the choice in the tuned order (1)
    tuned = 0 if ex.order is None else 1
    runs: dict[tuple[str, str, int], set[int]] = {}  # (op, algorithm, layout) -> sizes (bytes)
    for r in rows:
        for name, us, lay in ((r.default, r.default_us, 0), (r.chosen, r.chosen_us, tuned)):
            if us is not None:
                runs.setdefault((r.op, name, lay), set()).add(r.size)
    grown = _grown(prof) if runs else []
    algos = {(op, a.algorithm): a for op in {r.op for r in rows} for a in _ops.native_algorithms(op, library)}
    parts: dict[tuple[str, str, int, int], tuple[float, dict[str, float]]] = {}
    for (op, name, lay), size_set in runs.items():
        nat, sizes, variant = algos.get((op, name)), sorted(size_set), _ops.default_variant(op, prof)
        if nat is None:
            continue

        def predict(p: Profile, op=op, nat=nat, layout=layouts[lay], sizes=sizes, variant=variant) -> np.ndarray:
            # as the choice predicted it: with the library's own protocol (libraries.run_by)
            return _ops.native_predict(op, library, run_by(p, library), layout, sizes, variant=variant, algorithm=nat)

        try:
            base, by = shares(predict, prof, grown)
        except HnowError:  # not predicted here: its rows say so
            continue
        for i, m in enumerate(sizes):
            parts[(op, name, lay, m)] = (float(base[i]), {k: float(v[i]) for k, v in by.items() if v[i] > 1e-9})
    out = {}
    for r in rows:
        d, c = parts.get((r.op, r.default, 0, r.size)), parts.get((r.op, r.chosen, tuned, r.size))
        if r.default_us is not None and (d is None or not (_close(d, r.default_us) and _close(c, r.chosen_us))):
            out[(r.op, r.size)] = "not taken apart (the model's terms give another time here)"
            continue
        label = "chosen" if r.chosen != r.default else "tuned order"
        out[(r.op, r.size)] = why_text(d, c, r.chosen != r.default or r.chosen_us != r.default_us, label)
    return out
