"""Interleaved rounds: one round's medians gathered on rank 0, then the medians over rounds.

A calibration measures everything once per round, so that the machine's drift is common to all series; every rank
keeps what it measured in a dict ``{key: {name: {size: µs}}}`` (``key``: ``"T"``, ``"S"``, ``"R"``, ...; ``name``: a
pair ``"a-b"`` or a node type), which :func:`gather_round` merges on rank 0, and :func:`over_rounds` summarises.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["gather_round", "over_rounds"]


def gather_round(comm: Any, mine: dict[str, Any]) -> dict[str, Any] | None:
    """Every rank's part of one round merged on rank 0 (collective; None on the other ranks): per key and name the
    union of the parts' sizes (a value that is not a dict is taken as it is)."""
    parts = comm.gather(mine, root=0)
    if comm.Get_rank() != 0:
        return None
    merged: dict[str, Any] = {key: {} for key in mine}
    for part in parts:
        for key, val in part.items():
            for name, series in val.items():
                if isinstance(series, dict):
                    merged[key].setdefault(name, {}).update(series)
                else:
                    merged[key][name] = series
    return merged


def over_rounds(raw: dict[str, Any], key: str, name: str, sizes: Sequence[int]) -> tuple[list[int], np.ndarray]:
    """Median over rounds of the per-round medians of one series, on the sizes every round that has it has.

    >>> raw = {"rounds": [{"T": {"0-1": {0: 1.0, 8: 2.0}}}, {"T": {"0-1": {0: 3.0, 8: 4.0}}}]}
    >>> over_rounds(raw, "T", "0-1", [0, 8, 16])
    ([0, 8], array([2., 3.]))
    """
    have = [r[key][name] for r in raw["rounds"] if name in r.get(key, {})]
    ms = [m for m in sizes if all(m in h for h in have)]
    return ms, np.array([np.median([h[m] for h in have]) for m in ms])
