"""How fast is a virtual cluster up and down, and does repeating it leave anything behind?

Brings an 8-host cluster (3 speeds) up and down ``--cycles`` times through the library (``hm.cluster.up`` /
``hm.cluster.down``, what ``hnow cluster up|down`` call), times each, and after every ``down`` looks for anything
named like the cluster: network namespaces, links (veths, bridge), the state file and the exec wrapper. Needs root
and network namespaces. Writes ``cluster_cycles.csv`` and ``cluster_cycles.md`` under
``experiments/out/cluster_cycles/``.
"""

from __future__ import annotations

import statistics
import time

from common import command_line, md_table, outdir, parser, write_csv, write_markdown

import hnowmodel as hm
from hnowmodel.cluster import netns
from hnowmodel.cluster.spec import IFNAME_PREFIX, NETNS_PREFIX

SPEC = {
    "schema": "hnowmodel.cluster/1",
    "name": "cyc",
    "hosts": [
        {"name": n, "egress_mbit": r, "ingress_mbit": r, "slots": 1}
        for n, r in [
            ("f1", 150),
            ("s1", 20),
            ("m1", 50),
            ("f2", 150),
            ("s2", 20),
            ("m2", 50),
            ("f3", 150),
            ("s3", 20),
        ]
    ],
}


def _left(name: str) -> list[str]:
    """Everything named like cluster ``name`` that is still there (empty: clean)."""
    ns = sorted(n for n in netns.existing_namespaces() if n.startswith(f"{NETNS_PREFIX}{name}-"))
    links = sorted(n for n in netns.existing_links() if n.startswith(f"{IFNAME_PREFIX}{name}"))
    states = [f"state file of {s.name}" for s in hm.cluster.status() if s.name == name]
    return ns + links + states


def main() -> None:
    p = parser("cluster_cycles", __doc__)
    p.add_argument("--cycles", type=int, default=20, help="up/down cycles (default 20)")
    args = p.parse_args()
    out = outdir(args.out)
    if hm.cluster.status(SPEC["name"]):
        hm.cluster.down(SPEC["name"])
    rows = []
    for i in range(args.cycles):
        t0 = time.perf_counter()
        st = hm.cluster.up(SPEC)
        t1 = time.perf_counter()
        hm.cluster.down(st.name)
        t2 = time.perf_counter()
        left = _left(st.name)
        rows.append({"cycle": i + 1, "up_s": t1 - t0, "down_s": t2 - t1, "left_behind": " ".join(left) or "nothing"})
        print(f"cycle {i + 1}/{args.cycles}: up {t1 - t0:.2f} s, down {t2 - t1:.2f} s, left: {rows[-1]['left_behind']}")
    write_csv(out / "cluster_cycles.csv", rows)
    ups, downs = [r["up_s"] for r in rows], [r["down_s"] for r in rows]
    clean = all(r["left_behind"] == "nothing" for r in rows)
    summary = [
        {
            "hosts": len(SPEC["hosts"]),
            "cycles": len(rows),
            "up_median_s": statistics.median(ups),
            "up_max_s": max(ups),
            "down_median_s": statistics.median(downs),
            "down_max_s": max(downs),
            "left_behind": "nothing" if clean else "see cluster_cycles.csv",
        }
    ]
    body = [
        f"Reproduce with: `{command_line()}` (as root).",
        "",
        f"- up of {len(SPEC['hosts'])} hosts < 2 s (max): **{'holds' if max(ups) < 2 else 'does not hold'}**",
        f"- down < 1 s (max): **{'holds' if max(downs) < 1 else 'does not hold'}**",
        f"- {len(rows)} cycles leave nothing behind: **{'holds' if clean else 'does not hold'}**",
        "",
        md_table(summary, fmt="{:.3g}"),
    ]
    write_markdown(out / "cluster_cycles.md", "Virtual cluster: up/down speed and leftovers", ["\n".join(body) + "\n"])
    print((out / "cluster_cycles.md").read_text())


if __name__ == "__main__":
    main()
