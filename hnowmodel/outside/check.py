"""Ping-pong rows of an outside benchmark checked against a profile, and the one call ``hnow import`` makes.

A ping-pong's time is one message's one-way time (half the round trip, in IMB and OSU alike): hnow predicts it as
its 2-rank bcast over the node types of the two ranks (``layout``, default the profile's first two ranks), under
the profile's default variant (:func:`hnowmodel.ops.default_variant`) - the time from the send's start until the
receiver holds the message.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import ops as _ops
from ..errors import InputError
from ..layout import parse_layout
from ..params import Profile
from ..trees import make_tree
from .imb import parse_imb
from .osu import parse_osu
from .rows import KINDS, OutsideResult, OutsideRow

__all__ = ["PingPongCheck", "pingpong_checks", "load_outside"]


@dataclass(frozen=True)
class PingPongCheck:
    """One ping-pong size: measured and predicted one-way µs, ``error_pct = 100·(pred − meas)/meas``, between
    node types ``pair``, predicted under ``variant``."""

    size: int
    measured_us: float
    predicted_us: float
    pair: tuple[str, str]
    variant: str
    benchmark: str = ""

    @property
    def error_pct(self) -> float | None:
        if not self.measured_us:
            return None
        return 100.0 * (self.predicted_us - self.measured_us) / self.measured_us

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "size": self.size,
            "pair": list(self.pair),
            "variant": self.variant,
            "measured_us": self.measured_us,
            "predicted_us": self.predicted_us,
            "error_pct": self.error_pct,
        }


def pingpong_checks(
    rows: Sequence[OutsideRow], profile: Profile, layout: Sequence[str] | str | None = None
) -> tuple[PingPongCheck, ...]:
    """The ping-pong rows of ``rows`` beside the profile's prediction for the pair ``layout`` (two node types;
    default the profile's first two ranks, on their calibration hosts). Two ranks of one host (``fast/2``) are
    predicted through the type's shared memory (docs/model.md, "Hosts"). :class:`InputError` when no pair can be
    named."""
    if layout is None:
        calibrated = profile.host_layout
        if calibrated is None or len(calibrated) < 2:
            raise InputError("--layout: give the node types of the two ping-pong ranks (the profile records none)")
        layout = calibrated.take([0, 1])
    pair = parse_layout(layout, profile.type_names)
    if len(pair) != 2:
        raise InputError(f"--layout: a ping-pong runs between 2 ranks, got {len(pair)} node types")
    pp = [r for r in rows if r.op == "pingpong"]
    if not pp:
        return ()
    variant = _ops.default_variant("bcast", profile)
    sizes = [r.size for r in pp]
    pred = _ops.predict("bcast", profile, pair, make_tree("binomial", 2), sizes, variant=variant)
    return tuple(
        PingPongCheck(r.size, r.t_us, float(p), (pair[0], pair[1]), variant, r.benchmark)
        for r, p in zip(pp, np.asarray(pred, dtype=float), strict=True)
    )


def load_outside(
    kind: str,
    path: str | os.PathLike,
    *,
    profile: Profile | str | None = None,
    layout: Sequence[str] | str | None = None,
    np: int | None = None,
) -> OutsideResult:
    """Read an outside benchmark's output file (``kind``: ``imb`` or ``osu``; ``np``: OSU's process count, which its
    output does not say) and, with ``profile`` (a :class:`Profile` or a file), check its ping-pong rows against it
    (:func:`pingpong_checks`). :class:`InputError` names a bad kind, a missing file or the line that cannot be
    read."""
    if kind not in KINDS:
        raise InputError(f"unknown benchmark suite {kind!r} (choose from: {', '.join(KINDS)})")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{kind} output {str(path)!r}: no such file")
    text = p.read_text(errors="replace")
    rows, header = parse_imb(text) if kind == "imb" else parse_osu(text, np)
    checks: tuple[PingPongCheck, ...] = ()
    if profile is not None:
        prof = profile if isinstance(profile, Profile) else Profile.load(profile)
        checks = pingpong_checks(rows, prof, layout)
    elif layout is not None:
        raise InputError("--layout applies with --profile only (the ping-pong pair's node types)")
    return OutsideResult(kind, str(path), rows, checks, header)
