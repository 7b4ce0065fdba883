"""The wire protocol between hnow and the ranks, and what the launcher makes of the ranks' output."""

from __future__ import annotations

import pytest

from hnowmodel.jobs.launcher import _Follow
from hnowmodel.jobs.wire import ProtocolError, pack, parse_step, result_line, step_line, unpack, world_line


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


def test_a_progress_or_result_line_glued_after_a_step_line_is_not_lost():
    said: list[str] = []
    f = _Follow(np=2, progress=said.append)
    f.line(step_line(1, 4, "pingpong 0->1 8192 B") + "[hnow    0.4s] size 8192 B (3/3): ping-pong 1 pair(s)")
    f.line(step_line(1, 5, "collect") + result_line("abc"))
    assert said == ["[   0.4s] size 8192 B (3/3): ping-pong 1 pair(s)"]
    assert f.steps[1] == (5, "collect") and [unpack(r) for r in f.results] == ["abc"]


def test_result_lines_and_chatter():
    f = _Follow(np=1, progress=None)
    f.line("srun: job 7 queued and waiting for resources")
    f.line("srun: job 7 has been allocated resources")
    # before the ranks reported their world, the launcher's last three lines explain a start-up failure or hang
    assert f.last_words() == (
        "; the launcher's last output: srun: job 7 queued and waiting for resources | "
        "srun: job 7 has been allocated resources"
    )
    f.line(world_line(1, ["n1"]))
    assert f.world == (1, ("n1",)) and not f.errors
    f.line(result_line({"world_size": 1, "result": 7}))
    f.line("Abort(1) on node 0: something")
    f.line("rank 0 could not open its device")
    assert unpack(f.results[0]) == {"world_size": 1, "result": 7}
    assert f.last_words() == "; last output: rank 0 could not open its device"


def test_a_wrong_world_stops_the_job_at_once():
    killed = []
    f = _Follow(np=4, progress=None)
    f.kill = lambda: killed.append(True)
    f.line(world_line(1, ["n1"]) + world_line(1, ["n1"]))  # singletons, glued by the launcher
    assert killed and len(f.errors) == 1 and "singletons" in f.errors[0]
    assert parse_step("no step here") is None
