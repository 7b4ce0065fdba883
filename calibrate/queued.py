"""The bytes a sender's link keeps queued per connection, fitted to a measured fan-out (bytes).

The model's round-robin egress (``flow-rr``, docs/model.md, "Round-robin egress") lets a message that a sender
posts behind others wait one round of what they already keep queued on its link: ``extensions.network.
queued_bytes``. Nothing in a point-to-point time shows it; a fan-out does (rank 0 ``MPI_Send``s m bytes to every
other rank in turn, :func:`calibrate.network._fanout`): its completion grows with the queued bytes, by most of a
small message's time. So the term is the one value for which the model, with every other parameter as fitted,
predicts the measured fan-out: least squares of the relative error over the fan-out's sizes, searched in
``0 .. QUEUED_MAX_BYTES``. The fit uses the model (:mod:`hnowmodel.ops`, ``flow-rr`` over the sequential tree),
which is why it is checked against what it cannot see: the collectives measured afterwards
(``experiments/cluster_accuracy.py``) and, on an hnow virtual cluster, the packets its hosts' TCP keeps queued.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hnowmodel import ops
from hnowmodel.params import Profile
from hnowmodel.trees import sequential

from .protocol import QUEUED_COARSE_STEP_BYTES, QUEUED_FINE_UPTO_BYTES, QUEUED_MAX_BYTES, QUEUED_STEP_BYTES
from .rounds import over_rounds

__all__ = ["QUEUED_VARIANT", "fit_queued_bytes"]

#: The model variant whose term is fitted (the round-robin egress).
QUEUED_VARIANT = "flow-rr"


def fit_queued_bytes(raw: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """``{"bytes": fitted or None, "points": [...], "how": ...}`` from the fan-out medians of ``raw`` (series ``Q``,
    root ``"0"``) and the profile document ``doc`` fitted without the term (its ``nodes`` give the layout).
    None where there is no fan-out (fewer than 3 ranks) or where it fits as well over a range of the term wider than
    two grid steps (``undetermined_bytes``: that range) from 0: the fan-out's last message does not wait there; the
    range's low end where it reaches up to :data:`QUEUED_MAX_BYTES` (:func:`_at_least`). Before that, where
    ranks share hosts, the three-host fan-out (series ``Q3`` over ``raw["fanout3"]``'s ranks,
    :func:`calibrate.network.three_host_fanout`) is fitted instead (``from``: ``three-host fan-out``, ``ranks``, and
    the full fan-out's result in ``full_fanout``).

    >>> fit_queued_bytes({"rounds": [{"T": {}}]}, {})["bytes"] is None
    True
    """
    out = _fit(raw, doc, "Q", None)
    three = raw.get("fanout3")
    if out["bytes"] is None and "undetermined_bytes" in out and three:
        alt = _fit(raw, doc, "Q3", [int(r) for r in three])
        if alt["points"]:
            out = {**alt, "from": "three-host fan-out", "ranks": list(three), "full_fanout": out}
    return _at_least(out)


def _at_least(out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with the smallest term the fan-out allows where it allows every term from some size up to
    :data:`QUEUED_MAX_BYTES` (``at_least``: True): the fan-out's messages were queued whole, as on a host whose TCP
    hands its link large segments (the kernel's defaults: GSO, ``tcp_limit_output_bytes`` of 1 MiB), so the model
    must not interleave them packet by packet (the term 0, which an absent term means). Where the range starts at 0
    (the fan-out's last message waited behind nothing) nothing is claimed.

    >>> _at_least({"bytes": None, "undetermined_bytes": [32768.0, QUEUED_MAX_BYTES]})["bytes"]
    32768.0
    >>> _at_least({"bytes": None, "undetermined_bytes": [0.0, QUEUED_MAX_BYTES]})["bytes"] is None
    True
    """
    lo, hi = out.get("undetermined_bytes") or (0.0, 0.0)
    if out["bytes"] is not None or lo <= 0 or hi < QUEUED_MAX_BYTES:
        return out
    return {**out, "bytes": lo, "at_least": True}


def _fit(raw: dict[str, Any], doc: dict[str, Any], series: str, ranks: list[int] | None) -> dict[str, Any]:
    """The term fitted to the fan-out ``series`` of ``raw`` over the ranks ``ranks`` (None: every rank)."""
    sizes = sorted({m for r in raw["rounds"] for m in r.get(series, {}).get("0", {})})
    ms, measured = over_rounds(raw, series, "0", sizes) if sizes else ([], np.array([]))
    out: dict[str, Any] = {"bytes": None, "points": [], "how": _HOW}
    if not ms:
        return out
    # the layout with its hosts when the document has host terms (ranks sharing a host share its NIC and talk
    # through shared memory: without them the term would absorb what the hosts cost)
    layout = Profile.from_dict(doc).host_layout
    if ranks is not None:
        layout = layout.take(ranks)
    tree = sequential(len(layout), 0)

    def predicted(q: float) -> np.ndarray:
        ext = {**doc.get("extensions", {})}
        ext["network"] = {**ext.get("network", {}), "queued_bytes": float(q)}
        prof = Profile.from_dict({**doc, "extensions": ext})
        return ops.predict("bcast", prof, layout, tree, ms, variant=QUEUED_VARIANT)

    def loss(q: float) -> float:
        return float(np.sum(((predicted(q) - measured) / measured) ** 2))

    lo = predicted(0.0)
    # the completion is piecewise in the term (which message waits behind which changes with it): a grid first,
    # then Brent's method within a step of its best point
    grid = _grid()
    losses = np.array([loss(q) for q in grid])
    near = grid[losses <= losses.min() * (1 + 1e-6) + 1e-12]
    out["points"] = [{"bytes": int(m), "measured_us": float(t)} for m, t in zip(ms, measured, strict=True)]
    g = grid[int(np.argmin(losses))]
    step = _step(g)
    if near.max() - near.min() > 2 * step:  # the fan-out fits as well over a range: not determined
        out["undetermined_bytes"] = [float(near.min()), float(near.max())]
        return out
    bounds = (max(0.0, g - step), min(QUEUED_MAX_BYTES, g + step))
    from scipy.optimize import minimize_scalar  # here: only the fitting rank loads it (calibrate.stats says why)

    best = minimize_scalar(loss, bounds=bounds, method="bounded", options={"xatol": 1.0})
    q = float(best.x) if best.fun <= loss(g) else float(g)
    fit = predicted(q)
    out["bytes"] = round(q, 1)
    out["points"] = [
        {"bytes": int(m), "measured_us": float(t), "predicted_us": float(p), "predicted_without_us": float(p0)}
        for m, t, p, p0 in zip(ms, measured, fit, lo, strict=True)
    ]
    return out


def _grid() -> np.ndarray:
    """The queued bytes tried first: every :data:`QUEUED_STEP_BYTES` up to :data:`QUEUED_FINE_UPTO_BYTES`, then
    every :data:`QUEUED_COARSE_STEP_BYTES` up to :data:`QUEUED_MAX_BYTES`.

    >>> g = _grid(); len(g), float(g[256] - g[255]), float(g[257] - g[256]), float(g[-1])
    (353, 256.0, 2048.0, 262144.0)
    """
    fine = np.arange(0.0, QUEUED_FINE_UPTO_BYTES, QUEUED_STEP_BYTES)
    return np.concatenate([fine, np.arange(QUEUED_FINE_UPTO_BYTES, QUEUED_MAX_BYTES + 1.0, QUEUED_COARSE_STEP_BYTES)])


def _step(q: float) -> float:
    """The grid's step at ``q`` (bytes): the distance to the next grid point."""
    return QUEUED_STEP_BYTES if q < QUEUED_FINE_UPTO_BYTES else QUEUED_COARSE_STEP_BYTES


_HOW = (
    "rank 0 MPI_Sends m bytes to every other rank in turn (common start, buckets full; median over repetitions, "
    "then over rounds); the queued bytes are the value for which the flow-rr model over the sequential tree, every "
    "other parameter as fitted, predicts those completions (least squares of the relative error); where ranks "
    "share hosts and that leaves the term open, the same over three ranks: rank 0, then the host it reaches "
    "fastest, then the one it reaches slowest"
)
