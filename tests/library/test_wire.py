"""The wire protocol between hnow and the ranks, and what the launcher makes of the ranks' output."""

from __future__ import annotations

import pytest

from hnowmodel.jobs.launcher import _Follow
from hnowmodel.jobs.wire import ProtocolError, pack, parse_step, result_line, step_line, unpack


def test_pack_round_trip_and_garbage():
    doc = {"rows": [{"op": "bcast", "size": 4096, "measured_us": 12.5}], "nan": None}
    assert unpack(pack(doc)) == doc
    assert "\n" not in pack(doc) and " " not in pack(doc)
    with pytest.raises(ProtocolError):
        unpack("not a packed value")


def test_steps_are_followed_per_rank_and_glued_lines_are_split():
    f = _Follow(np=3, progress=None)
    f.line(step_line(0, 1, "tree binomial"))
    # hydra forwarded two ranks' lines in one chunk, without the newline between them
    f.line(step_line(1, 2, "tree binomial") + step_line(2, 3, "gather binomial 16384 B"))
    f.line("hnow-error: rank 2: step x: boom")
    assert f.steps == {0: (1, "tree binomial"), 1: (2, "tree binomial"), 2: (3, "gather binomial 16384 B")}
    assert f.errors == ["rank 2: step x: boom"]
    assert "rank 0 in step 'tree binomial' (furthest behind)" in f.where()


def test_result_lines_and_chatter():
    f = _Follow(np=1, progress=None)
    f.line(result_line({"world_size": 1, "result": 7}))
    f.line("Abort(1) on node 0: something")
    f.line("rank 0 could not open its device")
    assert unpack(f.results[0]) == {"world_size": 1, "result": 7}
    assert f.last_words() == "; last output: rank 0 could not open its device"
    assert parse_step("no step here") is None
