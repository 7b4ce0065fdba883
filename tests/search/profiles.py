"""Profiles shared by the search tests: the paper's two types, and a three-type variant with a slower fast-slow link."""

from __future__ import annotations

from hnowmodel.params import Link, NodeType, Profile, paper_profile

__all__ = ["PROF", "THREE", "TYPES3"]

PROF = paper_profile()
THREE = Profile(
    {"fast": PROF.types["fast"], "slow": PROF.types["slow"], "medium": NodeType("medium", 75, 0.1, 110, 0.05)},
    PROF.network,
    {("fast", "slow"): Link(30, 0.08)},
)
TYPES3 = ["fast", "slow", "medium"]
