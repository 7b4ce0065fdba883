"""Results of outside benchmarks read into hnow: the Intel MPI Benchmarks (``IMB-MPI1``) and the OSU
micro-benchmarks (``osu_latency``, ``osu_bcast``, ...), as a user runs them on their own cluster.

:func:`load_outside` (``hnow import imb|osu FILE``) parses the file (:mod:`.imb`, :mod:`.osu`: one
:class:`OutsideRow` per benchmark, process count and size, the size also as the operation registry's ``m``:
:func:`registry_m`) and, given a profile, checks the ping-pong rows against
it: the predicted one-way time of one message between the first two ranks' node types (the model's 2-rank bcast,
under the profile's default variant) beside the measured one, ``error_pct = 100·(predicted − measured)/measured``
(:mod:`.check`). Collective rows come back as a table.
"""

from __future__ import annotations

from .check import PingPongCheck, load_outside, pingpong_checks
from .imb import parse_imb
from .osu import parse_osu
from .rows import DATATYPE_BYTES, HNOW_REDUCTION_DATATYPE, KINDS, OutsideResult, OutsideRow, registry_m

__all__ = [
    "KINDS",
    "DATATYPE_BYTES",
    "HNOW_REDUCTION_DATATYPE",
    "registry_m",
    "OutsideRow",
    "OutsideResult",
    "PingPongCheck",
    "parse_imb",
    "parse_osu",
    "pingpong_checks",
    "load_outside",
]
