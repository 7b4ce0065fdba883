"""A calibration's finished steps on disk (:mod:`hnowmodel.stepfiles`): what is saved comes back exactly, a file is
there whole or not at all, another schema version is refused, and what changed between two runs is named."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hnowmodel.errors import InputError
from hnowmodel.stepfiles import (
    STEP_SCHEMA,
    check_steps_folder,
    decode,
    differences,
    encode,
    read_steps,
    remove_steps,
    save_step,
    step_path,
)

KEY = {"hosts": ["h0", "h0"], "options": {"quick": True, "sizes": None}, "version": {"hnow": "0.1.0"}}


def test_what_a_measuring_step_returns_comes_back_with_its_types():
    value = {
        "hosts": ["a", "b"],
        "cost": np.array([[np.nan, 0.5], [0.25, np.nan]]),
        "ranks": {"fast": 0, "slow": np.int64(1)},
        "rounds": [{"fast": {8: 1.5, 4096: float("inf")}}],
        (0, 1): (np.float64(2.0), True, None),
        "empty": np.zeros((0, 3), dtype=np.int32),
    }
    back = decode(json.loads(json.dumps(encode(value), allow_nan=False)))
    assert back.keys() == value.keys()
    np.testing.assert_array_equal(back["cost"], value["cost"])
    assert back["cost"].dtype == np.float64 and back["empty"].shape == (0, 3) and back["empty"].dtype == np.int32
    assert back["ranks"] == value["ranks"] and type(back["ranks"]["slow"]) is np.int64
    assert back["rounds"] == value["rounds"] and list(back["rounds"][0]["fast"]) == [8, 4096]
    assert back[(0, 1)] == value[(0, 1)] and isinstance(back[(0, 1)], tuple)
    with pytest.raises(TypeError, match="plain data"):
        encode({"x": object()})


def test_a_saved_step_is_read_back_and_nothing_half_written_remains(tmp_path):
    path = save_step(tmp_path, "size-1024", KEY, [[{"size": 1024, "samples_us": [1.0, 2.0]}], []])
    assert path == step_path(tmp_path, "size-1024") and json.loads(path.read_text())["schema"] == STEP_SCHEMA
    (tmp_path / ".step-size-2048.json.abc.tmp").write_text('{"sch')  # what a write cut short leaves: ignored
    (tmp_path / "notes.txt").write_text("mine")
    found = read_steps(tmp_path)
    assert list(found) == ["size-1024"] and dict(found["size-1024"].depends_on) == KEY
    assert decode(found["size-1024"].data)[0][0]["samples_us"] == [1.0, 2.0]
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == [".step-size-2048.json.abc.tmp"]
    assert remove_steps(tmp_path) == 1 and (tmp_path / "notes.txt").exists() and not read_steps(tmp_path)
    assert read_steps(tmp_path / "absent") == {}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (json.dumps({"schema": "hnowmodel.calibration-step/9", "step": "nics", "depends_on": {}, "data": 1}), "/9"),
        ('{"schema": "hnowmodel.calibration-step/1", "step": "ni', "cannot be read"),
        (json.dumps({"schema": STEP_SCHEMA, "step": "other", "depends_on": {}, "data": 1}), "not a complete"),
    ],
)
def test_a_step_file_of_another_version_or_broken_is_refused(tmp_path, text, needle):
    (tmp_path / "step-nics.json").write_text(text)
    with pytest.raises(InputError, match=needle):
        check_steps_folder(tmp_path)
    with pytest.raises(InputError, match="is not a folder"):
        check_steps_folder(tmp_path / "step-nics.json")


def test_the_differences_name_what_changed():
    new = {**KEY, "hosts": ["h0", "h1"], "options": {"quick": False, "sizes": None}}
    assert differences(KEY, new) == ["hosts: ['h0', 'h0'] -> ['h0', 'h1']", "options.quick: True -> False"]
    assert differences(KEY, json.loads(json.dumps(KEY))) == []
