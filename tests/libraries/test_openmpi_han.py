"""Open MPI's coll/han default reduce, allreduce and allgather (hnowmodel/libraries/openmpi/han.py) as message
schedules, and a profile's one-way-at-a-time rendezvous between two ranks (Profile.rendezvous_duplex, the flow
engine's connections): what runs where, the messages each level sends, and the times by hand (no MPI)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hnowmodel import ops
from hnowmodel.errors import ProfileError
from hnowmodel.layout import Layout
from hnowmodel.libraries import run_by
from hnowmodel.libraries.openmpi.han import HanSegments, han_run, libnbc_ibcast, libnbc_ireduce
from hnowmodel.params import Link, NodeType, Profile
from hnowmodel.schedules import MessageSchedule, Step
from hnowmodel.schedules.flows import simulate

FOUR_BY_THREE = Layout(["f"] * 3 + ["s"] * 3 + ["m"] * 3 + ["f"] * 3, [i // 3 for i in range(12)])


def test_han_default_is_pinned_for_the_three_operations_and_modelled_only_where_han_runs():
    for op in ("reduce", "allreduce", "allgather"):
        nat = ops.native_for("native:han:default", op, "Open MPI")
        assert nat.env == {"OMPI_MCA_coll": "^hcoll,ucc"} and f"OMPI_MCA_coll_tuned_{op}_algorithm" in nat.unset
        assert nat.on(FOUR_BY_THREE, 16384) is not None
        assert nat.on(["f"] * 4, 16384) is None  # one rank per host: han hands the call to tuned
        assert nat.on(Layout(["f"] * 5, [0, 0, 0, 1, 1]), 16384) is None  # unequal hosts: likewise


def test_libnbc_defaults_follow_its_source():
    # nbc_ireduce.c: Rabenseifner's on > 2 ranks with >= pof2 elements; binomial below 64 KiB on 2; else a chain
    assert [libnbc_ireduce(h, 65536) for h in (2, 3, 4, 8)] == [None, "rabenseifner", "rabenseifner", "rabenseifner"]
    assert libnbc_ireduce(2, 65535) == "binomial" and libnbc_ireduce(8, 8) == "binomial"  # 1 element < pof2 8
    # nbc_ibcast.c: linear on <= 4 ranks, binomial below 64 KiB, chains of 8 KiB / 32 KiB segments above
    assert [libnbc_ibcast(h, 1 << 20)[0] for h in (2, 4, 5)] == ["ompi-linear", "ompi-linear", "chain"]
    assert libnbc_ibcast(5, 1 << 20)[1].segment_bytes == 32768 and libnbc_ibcast(5, 1000)[0] == "binomial"


def test_han_allgather_gathers_on_each_host_allgathers_the_host_blocks_and_bcasts_everything():
    alg, _ = han_run("allgather", FOUR_BY_THREE, 1024)
    assert alg.name == "han:binomial/recursive_doubling/binomial"  # tuned's fixed rules on 4 leaders: 3
    s = alg.schedule(12, 1024.0)
    up = [(st.src.tolist(), st.nbytes.tolist()) for st in s.steps if set(st.src.tolist()) <= {0, 3, 6, 9}]
    # the leaders exchange the 3-block host blocks, then 6 blocks; every host's bcast carries all 12 blocks
    assert up[0] == ([0, 3, 6, 9], [3072.0] * 4) and up[1] == ([0, 3, 6, 9], [6144.0] * 4)
    assert s.bytes_sent()[[1, 2]].sum() == 2048.0  # each non-leader sends its own block, once
    assert max(st.nbytes.max() for st in s.steps) == 12 * 1024.0


def test_han_reduce_and_allreduce_cut_the_vector_into_64_kib_segments_each_run_through_every_level():
    lay = Layout(["f"] * 6, [0, 0, 0, 1, 1, 1])
    red = HanSegments("reduce", ((0, 1, 2), (3, 4, 5)))
    # one segment up to 64 KiB: reduce on each host (2 binomial steps), the two leaders' binomial reduce (< 64 KiB)
    one = red(6, 32768.0)
    assert [st.src.tolist() for st in one.steps] == [[1, 4], [2, 5], [3]]
    # 256 KiB: four segments one after another; 2 hosts run libnbc's chain there (not modelled), 3 do not
    assert han_run("reduce", lay, 262144) is None
    three = HanSegments("reduce", ((0, 1), (2, 3), (4, 5)))(6, 262144.0)
    # per segment: 3 hosts reduce 64 KiB each; Rabenseifner on 3 leaders moves 3 x 64 KiB (fold, halving, gather)
    assert three.bytes_sent().sum() == pytest.approx(4 * (3 * 65536 + 3 * 65536))
    # a root on another host: each host reduces to the root's local rank, the leaders' reduce ends at the root
    rooted = red(6, 8.0, 4)
    assert [st.dst.tolist() for st in rooted.steps] == [[1, 4], [1, 4], [4]]
    # allreduce: libnbc's reduce to rank 0's host, its linear bcast from there, a bcast on every host
    alg, _ = han_run("allreduce", lay, 16384)
    assert alg.name == "han:binomial/binomial/ompi-linear/binomial" and not alg.rooted
    s = alg.schedule(6, 16384.0)
    assert [st.src.tolist() for st in s.steps][2:] == [[3], [0], [0, 3], [0, 3]]


def _exchange(b: float) -> MessageSchedule:
    return MessageSchedule(2, (Step.of([0, 1], [1, 0], b),))


def test_a_rendezvous_exchange_runs_one_way_at_a_time_where_the_profile_says_so():
    """Two hosts at 100 bytes/µs: an exchange of rendezvous messages takes one message's time both ways at once,
    both messages' one after another where the profile says so (Open MPI with more ranks than cores measured 2.0x,
    docs/open-mpi.md); eager messages are unchanged."""
    prof = Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(0, 0.01), rendezvous_from_bytes=1000)
    half = replace(prof, rendezvous_duplex=False)
    assert simulate(prof, ["f", "f"], _exchange(5000.0)).completion_us == pytest.approx(50.0)
    assert simulate(half, ["f", "f"], _exchange(5000.0)).completion_us == pytest.approx(100.0)
    assert simulate(half, ["f", "f"], _exchange(500.0)).completion_us == pytest.approx(5.0)  # eager: both at once
    assert simulate(half, ["f", "f"], _exchange(5000.0), sharing="rr").completion_us == pytest.approx(100.0)


def test_a_profile_says_one_way_rendezvous_in_its_file_and_keeps_it():
    prof = replace(Profile({"f": NodeType("f", 0, 0, 0, 0)}, Link(0, 0.01), rendezvous_from_bytes=1000),
                   rendezvous_duplex=False)  # fmt: skip
    doc = prof.to_dict()
    assert doc["protocol"] == {"rendezvous_from_bytes": 1000, "rendezvous_duplex": False}
    assert not Profile.from_dict(doc).rendezvous_duplex
    assert Profile.from_dict({**doc, "protocol": {"rendezvous_from_bytes": 1000}}).rendezvous_duplex  # the default
    assert "rendezvous_duplex" not in replace(prof, rendezvous_duplex=True).to_dict()["protocol"]
    assert run_by(prof, "Open MPI").rendezvous_duplex is False  # kept as the file says
    with pytest.raises(ProfileError, match="rendezvous_duplex: must be true or false"):
        Profile.from_dict({**doc, "protocol": {"rendezvous_duplex": "no"}})
