"""Model parameters: node types, the network, per-type-pair links, and the profile file.

The package, lowest first: :mod:`~hnowmodel.params.schema` (schema names, keys, limits, the checks of numbers and
lines), :mod:`~hnowmodel.params.regimes` (regimes, node types, links), :mod:`~hnowmodel.params.terms` (network
terms, shared-memory costs, NICs), :mod:`~hnowmodel.params.reducecost` (what combining two buffers costs a node
type, γ), :mod:`~hnowmodel.params.profile` (the :class:`Profile`, its file, the paper's
profile). Every public name is imported from ``hnowmodel.params`` itself.

Units are microseconds and bytes everywhere; every field name carries its unit.

Convention (see ``docs/model.md``): a profile keeps the constant transmission cost ``Xc_us`` separate from the
receive overhead, so ``T_ptp(a->b, m) = S_a(m) + X_ab(m) + R_b(m)`` with ``S = Sc + Sm*m``, ``X = Xc + Xm*m``,
``R = Rc + Rm*m``. The paper's Table 1 folds ``Xc`` into ``Rc`` (eq. 5, Table 2: 60 + 110 = 170); the built-in
:func:`paper_profile` therefore stores ``Rc = Table-1 Rc - Xc`` so that one-way latencies equal Table 2, and
``paper_profile(convention="as-printed")`` gives Table 1 verbatim (which then counts ``Xc`` twice).

Regimes (``hnowmodel.profile/2``): each of S, R (per node type) and X (network, per-pair links) is piecewise-linear
in the message size. A parameter set is an ordered list of :class:`Regime` / :class:`LinkRegime` lines, each valid
for sizes up to and including its ``upto_bytes``; the last one has ``upto_bytes=None`` and covers every larger size.
A size ``m`` uses the first regime with ``m <= upto_bytes`` (the bound is **inclusive**). Every model computation
evaluates the parameters at the size in question (:meth:`NodeType.send_us`, :meth:`Link.us`, :meth:`Profile.at`,
:meth:`Profile.segments`); the flat attributes ``Sc_us``, ``Xc_us``, ... are the *first* regime's values.

>>> p = paper_profile()
>>> float(p.ptp_us("fast", "slow", 0))
200.0
>>> p.types["slow"].Sc_us
90.0
>>> t = NodeType.piecewise("f", [Regime(8192, 1.0, 0.001, 2.0, 0.001), Regime(None, 10.0, 0.0001, 3.0, 0.0001)])
>>> t.send_us([8192, 8193]).tolist()
[9.192, 10.8193]
"""

from __future__ import annotations

from .profile import Profile, paper_profile
from .reducecost import REDUCE_DATATYPE, REDUCE_OP, ReduceCost, ReduceRegime, ReduceTerms
from .regimes import Link, LinkRegime, NodeType, Regime, parse_links, parse_network, parse_types
from .schema import (
    COPY_KEYS,
    LINK_KEYS,
    MAX_CONST_US,
    MAX_PER_BYTE_US,
    MAX_UPTO_BYTES,
    PROFILE_SCHEMA,
    PROFILE_SCHEMA_V1,
    PROFILE_SCHEMA_V3,
    PROFILE_SCHEMAS,
    REDUCE_KEYS,
    TYPE_KEYS,
)
from .terms import NetworkTerms, Nic, ShmCosts, Windows
from .terms import parse_hosts as parse_hosts

__all__ = [
    "NodeType",
    "Link",
    "Regime",
    "LinkRegime",
    "Profile",
    "NetworkTerms",
    "Windows",
    "ShmCosts",
    "Nic",
    "ReduceRegime",
    "ReduceCost",
    "ReduceTerms",
    "REDUCE_OP",
    "REDUCE_DATATYPE",
    "paper_profile",
    "PROFILE_SCHEMA",
    "PROFILE_SCHEMA_V1",
    "PROFILE_SCHEMA_V3",
    "PROFILE_SCHEMAS",
    "TYPE_KEYS",
    "COPY_KEYS",
    "LINK_KEYS",
    "REDUCE_KEYS",
    "MAX_CONST_US",
    "MAX_PER_BYTE_US",
    "MAX_UPTO_BYTES",
    "parse_types",
    "parse_network",
    "parse_links",
]
