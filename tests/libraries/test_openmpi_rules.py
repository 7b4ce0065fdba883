"""Open MPI's coll/tuned rules file as Open MPI 5.0.x reads it, and its fixed rules (what runs without a file).

The fixed rules are checked against a line-by-line transliteration of ``ompi_coll_tuned_{bcast,scatter,gather}_
intra_dec_fixed`` (``ompi/mca/coll/tuned/coll_tuned_decision_fixed.c``, v5.0.x) on a grid of communicator and
message sizes around every threshold; the reader against the rules of ``coll_tuned_dynamic_file.c`` (and the
look-ups of ``coll_tuned_dynamic_rules.c``), including the example file of Open MPI's own documentation.
"""

from __future__ import annotations

import pytest

from hnowmodel.errors import InputError
from hnowmodel.libraries.openmpi import rules as R


# ---- the fixed rules ---------------------------------------------------------------------------------------------
def _bcast_c(n: int, s: int) -> int:  # ompi_coll_tuned_bcast_intra_dec_fixed, as written
    if n < 4:
        if s < 32:
            return 3
        elif s < 256:
            return 5
        elif s < 512:
            return 3
        elif s < 1024:
            return 7
        elif s < 32768:
            return 1
        elif s < 131072:
            return 5
        elif s < 262144:
            return 2
        elif s < 524288:
            return 1
        elif s < 1048576:
            return 6
        return 5
    elif n < 8:
        if s < 64:
            return 5
        elif s < 128:
            return 6
        elif s < 2048:
            return 5
        elif s < 8192:
            return 6
        elif s < 1048576:
            return 1
        return 2
    elif n < 16:
        if s < 8:
            return 7
        elif s < 64:
            return 5
        elif s < 4096:
            return 7
        elif s < 16384:
            return 5
        elif s < 32768:
            return 6
        return 1
    elif n < 32:
        if s < 4096:
            return 7
        elif s < 1048576:
            return 6
        return 8
    elif n < 64:
        return 6 if s < 2048 else 7
    elif n < 128:
        return 7
    elif n < 256:
        if s < 2:
            return 6
        elif s < 16384:
            return 5
        elif s < 32768:
            return 1
        elif s < 65536:
            return 5
        return 7
    elif n < 1024:
        if s < 16384:
            return 7
        elif s < 32768:
            return 4
        return 7
    elif n < 2048:
        return 7 if s < 524288 else 8
    elif n < 4096:
        return 7 if s < 262144 else 8
    if s < 8192:
        return 7
    elif s < 16384:
        return 5
    elif s < 262144:
        return 7
    return 8


def _scatter_c(n: int, s: int) -> int:  # ompi_coll_tuned_scatter_intra_dec_fixed
    if n < 4:
        if s < 2:
            return 3
        elif s < 131072:
            return 1
        elif s < 262144:
            return 3
        return 1
    elif n < 8:
        if s < 2048:
            return 2
        elif s < 4096:
            return 1
        elif s < 8192:
            return 2
        elif s < 32768:
            return 1
        elif s < 1048576:
            return 3
        return 1
    elif n < 16:
        if s < 16384:
            return 2
        elif s < 1048576:
            return 3
        return 1
    elif n < 32:
        if s < 16384:
            return 2
        elif s < 32768:
            return 1
        return 3
    elif n < 64:
        if s < 512:
            return 2
        elif s < 8192:
            return 3
        elif s < 16384:
            return 2
        return 3
    return 2 if s < 512 else 3


def _gather_c(n: int, s: int) -> int:  # ompi_coll_tuned_gather_intra_dec_fixed
    if n < 4:
        if s < 2:
            return 3
        elif s < 4:
            return 1
        elif s < 32768:
            return 2
        elif s < 65536:
            return 1
        elif s < 131072:
            return 2
        return 3
    elif n < 8:
        if s < 1024:
            return 2
        elif s < 8192:
            return 1
        elif s < 32768:
            return 2
        elif s < 262144:
            return 1
        return 3
    elif n < 256:
        return 2
    elif n < 512:
        if s < 2048:
            return 2
        elif s < 8192:
            return 1
        return 2
    return 2


_EDGES = [2, 4, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1 << 20]
_SIZES = sorted({0, 1, 3, *(e + d for e in _EDGES for d in (-1, 0, 1)), 1 << 24})
_COMMS = sorted({2, 3, 5, 4000, 5000, *(e + d for e in _EDGES[1:13] for d in (-1, 0, 1))})


@pytest.mark.parametrize("op, c", [("bcast", _bcast_c), ("scatter", _scatter_c), ("gather", _gather_c)])
def test_the_fixed_rules_are_open_mpis(op, c):
    for n in _COMMS:
        for s in _SIZES:
            assert R.default_algorithm(op, n, s) == c(n, s), (op, n, s)


def test_cases_read_from_the_source():
    # 4..7 ranks: bcast binary tree below 64 B, basic linear from 8 KiB, chain (faninout 0: the pipeline) from 1 MiB
    assert [R.default_algorithm("bcast", 4, s) for s in (63, 64, 8192, 262144, 1 << 20)] == [5, 6, 1, 1, 2]
    assert R.canonical("bcast", 2) == (2, 1, 0)  # build_chain forces a fanout of 0 to 1
    # scatter/gather by the block (the root's count x type size): 4 ranks, 64 KiB blocks
    assert R.default_algorithm("scatter", 4, 65536) == 3 and R.default_algorithm("gather", 4, 65536) == 1
    assert R.default_algorithm("gather", 4, 262144) == 3 and R.default_algorithm("scatter", 3, 1) == 3


def test_canonical_keeps_only_what_the_algorithm_reads():
    assert R.canonical("bcast", 2, 40) == (2, 32, 0)  # MAXTREEFANOUT
    assert R.canonical("bcast", 6, 3, 8192) == (6, 0, 8192)  # binomial reads the segment size, not the fanout
    assert R.canonical("bcast", 1, 3, 8192) == (1, 0, 0)
    assert R.canonical("scatter", 2, 4, 1024) == (2, 0, 0) and R.canonical("gather", 3, 0, 1024) == (3, 0, 1024)
    assert R.algorithm_name("bcast", 7) == "knomial" and R.algorithm_name("bcast", 10) == "algorithm 10 (invalid)"


# ---- the file ----------------------------------------------------------------------------------------------------
def test_round_trip_and_look_up():
    rules = R.for_comm_size(
        6,
        {
            "bcast": [(0, (6, 0, 0)), (16385, (2, 3, 0)), (262145, R.FIXED)],
            "gather": [(0, R.FIXED), (4097, (1, 0, 0)), (65537, R.FIXED)],
        },
    )
    text = R.format_rules(rules, ["made by a test", ""])
    assert R.validate(text) == rules and text.startswith("# made by a test\n#\n2 ")
    assert "rule-file-version" not in text  # version 1: every 5.0.x reads it
    bcast = rules.collectives[7]
    assert [c.comm_size for c in bcast] == [0, 6, 7] and [r.msg_bytes for r in bcast[1].rules] == [0, 16385, 262145]
    # gather's rules are by block x ranks: a 4097-byte block on 6 ranks is 24582 bytes
    assert [r.msg_bytes for r in rules.collectives[9][1].rules] == [0, 6 * 4097, 6 * 65537]
    assert R.runs(rules, "bcast", 6, 16384) == (6, 0, 0) and R.runs(rules, "bcast", 6, 16385) == (2, 3, 0)
    assert R.runs(rules, "bcast", 6, 262145) == (1, 0, 0)  # above: the fixed rules (basic linear)
    assert R.runs(rules, "bcast", 6, 1 << 20) == (2, 1, 0)  # (from 1 MiB, the chain with faninout 0: a pipeline)
    assert R.runs(rules, "gather", 6, 512) == (2, 0, 0) == R.runs(None, "gather", 6, 512)
    assert R.runs(rules, "gather", 6, 8192) == (1, 0, 0)
    for n in (2, 5, 7, 64):  # other communicator sizes: the fixed rules
        assert R.select(rules, "bcast", n, 32768).algorithm == 0
        assert R.runs(rules, "bcast", n, 32768) == R.runs(None, "bcast", n, 32768)
    assert R.select(rules, "scatter", 6, 8) is None  # no scatter rules at all
    assert R.for_comm_size(4, {"bcast": [(0, R.FIXED)]}).collectives == {}  # nothing to change: nothing written


def test_open_mpis_own_example_reads():
    """docs/tuning-apps/coll-tuned.rst (v5.0.x): version 2, max_requests, comment lines; alltoall (3) on 64 ranks."""
    text = """rule-file-version-2
1   # num of collectives
3   # collective ID
1   # number of comm sizes
#=====================
64   # comm size
14   # number of rules
# Bytes   alg topo segs reqs
#----------------------
0            0 0 0 0
512000       4 0 0 64
1536000      4 0 0 64
3072000      4 0 0 64
6144000      4 0 0 64
12288000     4 0 0 16
24576000     4 0 0 16
49152000     4 0 0 16
98304000     4 0 0 16
196608000    4 0 0 8
393216000    4 0 0 8
786432000    4 0 0 1
1572864000   4 0 0 1
2621440000   0 0 0 0
"""
    rules = R.parse(text)
    (comm,) = rules.collectives[3]
    assert rules.version == 2 and comm.comm_size == 64 and len(comm.rules) == 14
    assert comm.rules[1] == R.Rule(512000, 4, 0, 0, 64) and comm.rules[-1].max_requests == 0
    R.check(rules)  # alltoall's linear_sync (4): an algorithm it has
    assert R.runs(rules, "alltoall", 64, 8000) == (4, 0, 0)  # 8000 B blocks x 64 ranks = 512000 B
    assert R.runs(rules, "alltoall", 64, 7999) == R.runs(None, "alltoall", 64, 7999) == (1, 0, 0)


def test_max_requests_only_on_the_same_line_in_version_2():
    rules = R.parse("rule-file-version-2\n1\n7\n1\n4\n2\n0 6 0 0\n4096 5 0 0 9\n")
    assert [r.max_requests for r in rules.collectives[7][0].rules] == [None, 9]
    # version 1 reads no fifth number: here it would be the next rule's message size
    with pytest.raises(InputError, match="line 6: the first rule .* message size 9|text after the last rule"):
        R.parse("1\n7\n1\n4\n1\n0 6 0 0 9\n")


@pytest.mark.parametrize(
    "text, says",
    [
        ("1\n7\n1\n4\n1\n8 6 0 0\n", "line 6: the first rule of communicator size 4 is for message size 8"),
        ("1\n7\n1\n4\n1\n0 -6 0 0\n", "line 6: an algorithm number -6 is negative"),
        ("1\n7\n1\n4\n1\n0 six 0 0\n", "line 6: 'six' where an algorithm number should be"),
        ("1\n7\n1\n4\n1\n0 6 0\n", "the file ends where a segment size should be"),
        ("1\n7\n1\n4\n1\n0 06 0 0\n", "leading 0 as octal"),
        ("1\n7\n1\n4\n1\n0 6 0 0\n0 5 0 0\n", "text after the last rule"),
        ("23\n", "23 collectives, more than there are (22)"),
        ("1\n22\n", "collective id 22 is not below 22"),
        ("2\n7\n1\n4\n1\n0 6 0 0\n7\n1\n4\n1\n0 6 0 0\n", "collective 7 (bcast) a second time"),
        ("rule-file-v2\n1\n", "must read 'rule-file-version-N'"),
        ("bcast 7\n", "'bcast' where the number of collectives should be"),
    ],
)
def test_what_open_mpi_would_drop_is_refused_with_its_line(text, says):
    with pytest.raises(InputError, match=says.replace("(", "\\(").replace(")", "\\)")):
        R.parse(text)


@pytest.mark.parametrize(
    "text, says",
    [
        ("1\n7\n1\n4\n1\n0 10 0 0\n", "algorithm 10 does not exist (0..9; the bcast would fail)"),
        ("1\n15\n1\n4\n1\n0 4 0 0\n", "algorithm 4 does not exist (0..3"),
        ("1\n7\n2\n8\n1\n0 6 0 0\n4\n1\n0 6 0 0\n", "communicator size 4 after 8"),
        ("1\n9\n1\n4\n2\n0 1 0 0\n0 2 0 0\n", "message size 0 after 0"),
        ("1\n7\n0\n", "bcast has no communicator sizes"),
        ("1\n6\n1\n4\n1\n0 1 0 0\n", "collective 6 (barrier) is not one hnow checks"),
        ("1\n2\n1\n4\n1\n0 7 0 0\n", "algorithm 7 does not exist (0..6; the allreduce would fail)"),
    ],
)
def test_what_open_mpi_would_read_wrongly_is_refused(text, says):
    R.parse(text)  # Open MPI reads it...
    with pytest.raises(InputError, match=says.replace("(", "\\(").replace(")", "\\)")):
        R.validate(text)  # ...but not as it looks


def test_comments_and_blank_lines_are_skipped_like_open_mpi_does():
    text = "# a\n\n1 # one\n7\n  1\n# x 99\n4 1\n0 6 0 0 # binomial 42\n"
    assert R.validate(text).collectives[7][0].rules == (R.Rule(0, 6, 0, 0),)
    # the first communicator entry serves smaller communicators too (Open MPI's look-up starts from it)
    assert R.select(R.parse(text), "bcast", 2, 8).algorithm == 6
