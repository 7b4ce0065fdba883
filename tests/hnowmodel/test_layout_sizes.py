"""Layout and size parsing: the command-line syntaxes of docs/file-formats.md and their errors."""

from __future__ import annotations

import json

import pytest

from hnowmodel.errors import InputError, LayoutError
from hnowmodel.layout import layout_string, parse_layout
from hnowmodel.sizes import format_size, parse_size, parse_sizes

TYPES = ("fast", "slow")


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("FFSS", ("fast", "fast", "slow", "slow")),
        ("fs", ("fast", "slow")),
        ("fast,slow,fast", ("fast", "slow", "fast")),
        ("fast*2,slow*1", ("fast", "fast", "slow")),
    ],
)
def test_layout_syntaxes(spec, expected):
    assert parse_layout(spec, TYPES) == expected


def test_layout_file(tmp_path):
    f = tmp_path / "l.json"
    f.write_text(json.dumps(["slow", "fast"]))
    assert parse_layout(f"@{f}", TYPES) == ("slow", "fast")


@pytest.mark.parametrize("spec, needle", [("FFXS", "'X'"), ("fast,medium", "medium"), ("fast*-1", "-1"), ("", "empty")])
def test_layout_errors(spec, needle):
    with pytest.raises(LayoutError, match=needle):
        parse_layout(spec, TYPES)


def test_layout_string_roundtrip():
    assert layout_string(("fast", "slow", "slow")) == "FSS"
    assert parse_layout(layout_string(("fast", "slow")), TYPES) == ("fast", "slow")


def test_sizes():
    assert parse_sizes("0,1K,4KiB") == [0, 1024, 4096]
    assert parse_sizes("1K..8K") == [1024, 2048, 4096, 8192]
    assert parse_sizes("0..4") == [0, 1, 2, 4]
    assert parse_size("2M") == 2 * 1024 * 1024
    assert format_size(4096) == "4K"


@pytest.mark.parametrize("text", ["-5", "abc", "4K..1K", "1.5", ""])
def test_bad_sizes(text):
    with pytest.raises(InputError):
        parse_sizes(text)
