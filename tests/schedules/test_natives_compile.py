"""Every MPI library's own algorithm that hnow models (its model tree and run options, hnowmodel.libraries) compiles
to a message schedule (hnowmodel.schedules.tree_schedule) on the calibrated 6-host cluster: the schedule moves the
bytes the tree does, and where the flow engine's tree code models the same run options (all but a pipelined
bcast's segments), the schedule's event-driven evaluation gives its numbers. A gather whose parents take messages
as they arrive is refused in one line (no fixed order of steps)."""

from __future__ import annotations

import numpy as np
import pytest

import hnowmodel as hm
from hnowmodel import flow, ops
from hnowmodel.errors import InputError
from hnowmodel.layout import Layout
from hnowmodel.schedules import flows, tree_schedule
from hnowmodel.trees import make_tree
from tests.golden_corpus import DATA

GOLDEN = str(DATA / "cluster_profile.json")
SIZE = 65536


def _natives():
    for op in ops.tree_names():  # the natives modelled by trees (the others are schedule algorithms already)
        for lib in ops.native_libraries(op):
            for nat in ops.native_algorithms(op, lib):
                if ops.get(op).schedule_algorithm(nat.model_tree) is None:  # MPICH's scatter + allgather bcasts are
                    yield op, lib, nat  # message schedules already (tests/schedules/test_bcast.py)


@pytest.fixture(scope="module")
def prof():
    return hm.Profile.load(GOLDEN)


@pytest.mark.parametrize(("op", "lib", "nat"), list(_natives()), ids=lambda v: getattr(v, "algorithm", str(v)))
def test_every_native_algorithm_compiles_to_a_message_schedule(prof, op, lib, nat):
    o = ops.get(op)
    lay = Layout([d["type"] for d in sorted(prof.nodes, key=lambda d: d["rank"])])
    run = nat.on(lay, SIZE)
    if run is None:  # a default whose tree hnow does not know here: nothing to compile
        return
    tree = make_tree(run[0], len(lay), layout=lay)
    options = run[1]
    if o.movement.toward_root and options.recv_order in ("posted", "arrival"):
        with pytest.raises(InputError, match="not on a fixed order of steps"):
            tree_schedule(tree, o.movement, SIZE, options, profile=prof)
        return
    sched = tree_schedule(tree, o.movement, SIZE, options, profile=prof)
    edge = o.movement.edge_bytes(tree, SIZE)
    sent = sched.bytes_sent() if not o.movement.toward_root else sched.bytes_received()
    moved = np.zeros(tree.n)
    kids = tree.parent >= 0
    np.add.at(moved, tree.parent[kids], edge[kids])
    np.testing.assert_allclose(sent, moved)  # each parent sends (down) or receives (up) its children's edges
    if options.segment_bytes or options.common_start:
        return  # the flow engine's tree code takes a relay as store-and-forward; the schedule pipelines it
    got = flows.simulate(prof, lay, sched).completion_us
    fields = {k: getattr(options, k) for k in ("root_copy", "copy_first", "recv_order", "relay_waits", "sync")}
    want = flow.simulate(o.movement, prof, lay, tree, SIZE, **fields).completion_us
    assert got == pytest.approx(want, rel=1e-9), (op, lib, nat.algorithm)
