"""The golden corpus: predictions recorded before the model engine's refactor, recomputed now.

``python -m tests.golden_corpus write`` records the corpus (``tests/data/golden/corpus.json``) from the code as it
is; :mod:`tests.hnowmodel.test_golden` recomputes every case with :func:`evaluate` and asserts the same numbers
(relative difference <= 1e-12). The profiles are three kinds the model meets: the paper's Table 1, a profile
calibrated on a 6-host virtual cluster (MPICH, ``hnow calibrate --np 6 --cluster … --layout auto``) and a
piecewise real-MPI profile (2 ranks over shared memory, ``hnow calibrate --np 2 --layout fast,slow``), both stored
beside the corpus as they were measured. Only :func:`evaluate` may follow the library's API; the cases and the
numbers never change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

import hnowmodel as hm
from hnowmodel import runopts, variants

__all__ = ["DATA", "profiles", "cases", "evaluate", "outcome", "load"]

DATA = Path(__file__).parent / "data" / "golden"

#: Every tree family (with a parameter where it takes one), the chosen ones included.
FAMILIES = (
    "binomial",
    "sequential",
    "chain",
    "kary:3",
    "knomial:3",
    "mpich-knomial1:3",
    "mpich-knomial2:3",
    "ompi-binomial",
    "ompi-in-order-binomial",
    "ompi-tree:2",
    "ompi-chain:4",
    "ompi-linear",
    "hierarchical",
    "fnf",
)


def profiles() -> dict[str, tuple[Any, list[str], list[float]]]:
    """name -> (profile, layout, sizes in bytes)."""
    out = {"paper": (hm.paper_profile(), ["fast", "slow", "fast", "slow", "slow", "fast"], [0, 1024, 4096, 65536])}
    for name, sizes in (("cluster", [16384, 32768, 65536, 262144]), ("realmpi", [8, 4096, 65536, 1048576])):
        prof = hm.Profile.load(str(DATA / f"{name}_profile.json"))
        layout = [d["type"] for d in sorted(prof.nodes, key=lambda d: d["rank"])] if name == "cluster" else None
        if layout is None:
            types = sorted(prof.types)
            layout = [types[i % len(types)] for i in range(6)]
        out[name] = (prof, layout, sizes)
    return out


def cases() -> list[dict[str, Any]]:
    """Every case, as plain data (what :func:`evaluate` takes)."""
    out: list[dict[str, Any]] = []
    for pname in ("paper", "cluster", "realmpi"):
        for op in hm.ops.tree_names():  # the tree families run the operations trees run
            for variant in hm.ops.get(op).variants:
                for tree in FAMILIES:
                    for root in (0, 2):
                        out.append(
                            {
                                "kind": "predict",
                                "profile": pname,
                                "op": op,
                                "variant": variant,
                                "tree": tree,
                                "root": root,
                            }
                        )
                out.append(
                    {"kind": "per_rank", "profile": pname, "op": op, "variant": variant, "tree": "binomial", "root": 0}
                )
                for lib in hm.ops.native_libraries(op):
                    for nat in hm.ops.native_choices(op, lib):
                        out.append(
                            {
                                "kind": "native",
                                "profile": pname,
                                "op": op,
                                "variant": variant,
                                "library": lib,
                                "algorithm": nat.algorithm,
                            }
                        )
            for size_i in range(4):
                out.append({"kind": "best_tree", "profile": pname, "op": op, "size_i": size_i})
                out.append({"kind": "optimal", "profile": pname, "op": op, "size_i": size_i})
            out.append({"kind": "rank_order", "profile": pname, "op": op, "size_i": 2})
        out.append({"kind": "common_start", "profile": pname})
    return out


def evaluate(case: dict[str, Any], profs: dict[str, Any]) -> list[float]:
    """The numbers of one case with today's API (µs; for trees the time and then the parent array)."""
    prof, layout, sizes = profs[case["profile"]]
    kind, n = case["kind"], len(layout)
    if kind in ("predict", "per_rank"):
        spec = hm.treespec.parse_spec(case["tree"])
        tree = hm.treespec.resolve(spec, n, root=case["root"], layout=layout, profile=prof)
        variant = variants.check(hm.ops.get(case["op"]), case["variant"])
        t = variant.predict(hm.ops.get(case["op"]), prof, layout, tree, sizes, per_rank=kind == "per_rank")
        return np.ravel(t).tolist()
    if kind == "native":
        nat = next(a for a in hm.ops.native_choices(case["op"], case["library"]) if a.algorithm == case["algorithm"])
        t = hm.ops.native_predict(
            case["op"], case["library"], prof, layout, sizes, variant=case["variant"], algorithm=nat
        )
        return np.ravel(t).tolist()
    if kind == "best_tree":
        b = hm.search.best_tree(prof, layout, op=case["op"], size=sizes[case["size_i"]])
        return [b.time_us, *map(float, b.tree.parent), *(float(c) for kids in b.tree.children for c in kids)]
    if kind == "optimal":
        size = sizes[case["size_i"]]
        spec = hm.treespec.parse_spec(f"optimal:{case['op']}:{int(size)}")
        tree = hm.treespec.resolve(spec, n, layout=layout, profile=prof)
        return [*map(float, tree.parent), *(float(c) for kids in tree.children for c in kids)]
    if kind == "rank_order":
        ro = hm.search.rank_order(prof, layout, "binomial", case["op"], sizes[case["size_i"]])
        return [ro.time_us, ro.baseline_us, *map(float, ro.perm)]
    if kind == "common_start":
        return runopts.common_start_us(prof, sizes).tolist()
    raise ValueError(f"unknown case kind {kind!r}")


def outcome(case: dict[str, Any], profs: dict[str, Any]) -> dict[str, Any]:
    """``{"values": [...]}`` or, where the library refuses the case, ``{"error": "<HnowError subclass>"}``."""
    try:
        return {"values": evaluate(case, profs)}
    except hm.HnowError as e:  # e.g. a flow variant on a profile whose links carry no per-byte cost
        return {"error": type(e).__name__}


def load() -> list[dict[str, Any]]:
    return json.loads((DATA / "corpus.json").read_text())["cases"]


def _write() -> None:
    profs = profiles()
    rows = [{"case": c, **outcome(c, profs)} for c in cases()]
    (DATA / "corpus.json").write_text(json.dumps({"cases": rows}, indent=0) + "\n")
    print(f"{len(rows)} cases written to {DATA / 'corpus.json'}")


if __name__ == "__main__" and sys.argv[1:] == ["write"]:
    _write()
