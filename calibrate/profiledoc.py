"""The one builder of the profile documents the calibration writes (``hnowmodel.params.PROFILE_SCHEMA``).

Every calibration (the Python-kernel fit of :mod:`calibrate.paperfit`, the shared-memory fit of
:mod:`calibrate.shmprofile`, the network fit of :mod:`calibrate.netprofile`) ends in :func:`profile_document`;
:func:`type_regime` writes one regime of a node type's ``S``, ``R`` and ``C`` lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hnowmodel.params import PROFILE_SCHEMA

__all__ = ["profile_document", "type_regime", "add_cores"]


def profile_document(
    types: dict[str, Any],
    network: dict[str, Any],
    links: list[dict[str, Any]] | None,
    layout: Sequence[str],
    hosts: Sequence[str],
    provenance: dict[str, Any],
    **after_nodes: Any,
) -> dict[str, Any]:
    """A profile document: the schema, ``types``, ``network``, ``links`` (left out when None), one node per rank
    (``layout[r]`` on ``hosts[r]``), the sections ``after_nodes`` in their order (those that are None left out:
    ``protocol``, ``extensions``), then ``provenance``.

    >>> doc = profile_document({"node": {}}, {"Xc_us": 1.0}, None, ["node"], ["h1"], {}, protocol=None)
    >>> list(doc), doc["schema"], doc["nodes"]
    (['schema', 'types', 'network', 'nodes', 'provenance'], 'hnowmodel.profile/2', [{'rank': 0, 'host': 'h1', \
'type': 'node'}])
    """
    doc: dict[str, Any] = {"schema": PROFILE_SCHEMA, "types": types, "network": network}
    if links is not None:
        doc["links"] = links
    doc["nodes"] = [{"rank": r, "host": hosts[r], "type": t} for r, t in enumerate(layout)]
    doc.update({key: val for key, val in after_nodes.items() if val is not None})
    doc["provenance"] = provenance
    return doc


def add_cores(doc: dict[str, Any] | None, cores: Sequence[int | None]) -> dict[str, Any] | None:
    """``doc`` with each node's host's logical CPUs (``cores``, by rank: what ``hnow tune`` warns about when a
    shape puts more ranks on a host), in place; None stays None.

    >>> add_cores({"nodes": [{"rank": 0, "host": "h", "type": "t"}]}, [8])["nodes"]
    [{'rank': 0, 'host': 'h', 'type': 't', 'cores': 8}]
    """
    for n in (doc or {}).get("nodes", ()):
        if cores[n["rank"]]:
            n["cores"] = int(cores[n["rank"]])
    return doc


def type_regime(upto: int | None, s: Sequence[float], r: Sequence[float], c: Sequence[float]) -> dict[str, Any]:
    """One regime of a node type up to ``upto`` bytes (None: no bound) from its ``S``, ``R`` and ``C`` lines, each
    ``(intercept µs, slope µs/byte)``.

    >>> type_regime(None, (1.0, 0.1), (2.0, 0.2), (0.5, 0.0))["Rm_us_per_byte"]
    0.2
    """
    return {
        "upto_bytes": upto,
        "Sc_us": s[0],
        "Sm_us_per_byte": s[1],
        "Rc_us": r[0],
        "Rm_us_per_byte": r[1],
        "Cc_us": c[0],
        "Cm_us_per_byte": c[1],
    }
