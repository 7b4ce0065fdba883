"""The finished steps of a calibration, saved so that a killed run continues from its last finished step.

A calibration into an output folder (``hnow calibrate -o profile.json``: ``profile.json.steps/``; ``hnow tune -o
DIR``: ``DIR/calibration/``) saves each finished step (the measurements of one size, the host pairs, the NICs, the
network rounds, the reduction cost γ, ...) as one file, ``step-<name>.json``, written atomically
(:func:`hnowmodel.io.atomic_write`: a file is there whole or not at all)::

    {"schema": "hnowmodel.calibration-step/1", "step": "size-1024",
     "depends_on": {"hosts": [...], "options": {...}, "version": {...}}, "data": ...}

``depends_on`` is everything the measurement depends on (the ranks' hosts and the job's size, the options that
change what is measured, the versions of hnow, Python and the MPI library); a rerun whose ``depends_on`` differs
starts over (:func:`differences` says why). ``data`` is the step's value in a tagged JSON that gives back exactly
what was saved (:func:`encode`, :func:`decode`: numpy arrays and scalars with their dtype, tuples, dicts with keys
that are not strings, NaN and infinities). A file of another schema version is refused, never guessed at.

>>> import numpy as np, tempfile
>>> d = tempfile.mkdtemp()
>>> _ = save_step(d, "size-0", {"hosts": ["a"]}, {(0, 1): np.array([1.5, float("nan")])})
>>> found = read_steps(d)
>>> found["size-0"].depends_on, decode(found["size-0"].data)[(0, 1)].tolist()
({'hosts': ['a']}, [1.5, nan])
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError
from .io import atomic_write

__all__ = [
    "STEP_SCHEMA",
    "StepFile",
    "encode",
    "decode",
    "step_path",
    "save_step",
    "read_steps",
    "check_steps_folder",
    "differences",
    "remove_steps",
]

#: The schema of a step file; a file naming another version is refused.
STEP_SCHEMA = "hnowmodel.calibration-step/1"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_FILE = re.compile(r"^step-(.+)\.json$")
_TAG = "__hnow_"


@dataclass(frozen=True)
class StepFile:
    """One finished step read back: its ``step`` name, what it was measured with (``depends_on``) and its
    ``data`` (still encoded: :func:`decode`), and where it is (``path``)."""

    step: str
    depends_on: Mapping[str, Any]
    data: Any
    path: Path


def encode(value: Any) -> Any:
    """``value`` as plain JSON that :func:`decode` turns back into an equal value of the same types.

    >>> encode((1, 2.0)), encode({3: "x"}), encode(float("inf"))
    ({'__hnow_tuple__': [1, 2.0]}, {'__hnow_items__': [[3, 'x']]}, {'__hnow_float__': 'inf'})
    """
    if isinstance(value, np.ndarray):
        return {f"{_TAG}array__": encode(value.ravel().tolist()), "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return {f"{_TAG}scalar__": encode(value.item()), "dtype": value.dtype.str}
    if isinstance(value, float) and not math.isfinite(value):
        return {f"{_TAG}float__": repr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {f"{_TAG}tuple__": [encode(x) for x in value]}
    if isinstance(value, list):
        return [encode(x) for x in value]
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and not k.startswith(_TAG) for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {f"{_TAG}items__": [[encode(k), encode(v)] for k, v in value.items()]}
    raise TypeError(f"a calibration step holds plain data, not {type(value).__name__}")


def decode(doc: Any) -> Any:
    """The value :func:`encode` was given.

    >>> decode(encode({(1, "a"): [float("nan"), (2,)]}))
    {(1, 'a'): [nan, (2,)]}
    """
    if isinstance(doc, list):
        return [decode(x) for x in doc]
    if not isinstance(doc, dict):
        return doc
    if f"{_TAG}array__" in doc:
        flat = np.array(decode(doc[f"{_TAG}array__"]), dtype=np.dtype(doc["dtype"]))
        return flat.reshape(doc["shape"])
    if f"{_TAG}scalar__" in doc:
        return np.dtype(doc["dtype"]).type(decode(doc[f"{_TAG}scalar__"]))
    if f"{_TAG}float__" in doc:
        return float(doc[f"{_TAG}float__"])
    if f"{_TAG}tuple__" in doc:
        return tuple(decode(x) for x in doc[f"{_TAG}tuple__"])
    if f"{_TAG}items__" in doc:
        return {_key(decode(k)): decode(v) for k, v in doc[f"{_TAG}items__"]}
    return {k: decode(v) for k, v in doc.items()}


def _key(k: Any) -> Any:
    """A dict key back (a list, which JSON makes of nothing else here, cannot be one: a tuple was encoded)."""
    return tuple(k) if isinstance(k, list) else k


def step_path(folder: str | os.PathLike, name: str) -> Path:
    """The file of step ``name`` in ``folder`` (a name of letters, digits, ``.``, ``_``, ``-``)."""
    if not _NAME.match(name):
        raise ValueError(f"step name {name!r}: letters, digits, '.', '_' and '-' only")
    return Path(folder) / f"step-{name}.json"


def save_step(folder: str | os.PathLike, name: str, depends_on: Mapping[str, Any], value: Any) -> Path:
    """Save step ``name``'s ``value`` measured with ``depends_on`` in ``folder``, atomically; its path."""
    doc = {"schema": STEP_SCHEMA, "step": name, "depends_on": dict(depends_on), "data": encode(value)}
    return atomic_write(step_path(folder, name), json.dumps(doc, allow_nan=False) + "\n")


def _read(path: Path) -> StepFile:
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(
            f"calibration step {str(path)!r}: cannot be read ({e}); delete it to measure that step again"
        ) from None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema != STEP_SCHEMA:
        raise InputError(
            f"calibration step {str(path)!r}: schema {schema!r} is not {STEP_SCHEMA!r} (another hnow version "
            "wrote it?); delete the folder to calibrate afresh"
        )
    if (
        not isinstance(doc.get("depends_on"), dict)
        or "data" not in doc
        or doc.get("step") != _FILE.match(path.name).group(1)
    ):
        raise InputError(f"calibration step {str(path)!r}: not a complete step file; delete it")
    return StepFile(doc["step"], doc["depends_on"], doc["data"], path)


def read_steps(folder: str | os.PathLike) -> dict[str, StepFile]:
    """The step files in ``folder`` by step name (none when it does not exist); :class:`InputError` for a file of
    another schema version or one that is not a step file whole. Other files (and the temporary files of a write
    cut short, ``.step-*.tmp``) are left alone."""
    p = Path(folder)
    if not p.is_dir():
        return {}
    out = {}
    for f in sorted(p.iterdir()):
        if _FILE.match(f.name) and f.is_file():
            s = _read(f)
            out[s.step] = s
    return out


def check_steps_folder(folder: str | os.PathLike, flag: str = "-o") -> Path:
    """``folder`` when it can hold the steps (absent, or a folder whose step files are all readable: checked
    before any MPI run); :class:`InputError` otherwise."""
    p = Path(folder)
    if p.exists() and not p.is_dir():
        raise InputError(f"{flag}: {str(p)!r} (where the calibration's finished steps go) is not a folder")
    read_steps(p)
    return p


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What changed between two ``depends_on``, one short phrase per changed entry (``options.sizes: [0, 1024]
    -> [0, 2048]``); empty when they are equal.

    >>> differences({"hosts": ["a", "a"], "options": {"quick": True}}, {"hosts": ["a", "b"], "options": {}})
    ["hosts: ['a', 'a'] -> ['a', 'b']", 'options.quick: True -> None']
    """
    out = []
    for k in sorted({*old, *new}):
        a, b = old.get(k), new.get(k)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += [f"{k}.{d}" for d in differences(a, b)]
        elif a != b:
            out.append(f"{k}: {a!r} -> {b!r}")
    return out


def remove_steps(folder: str | os.PathLike) -> int:
    """Remove the step files of ``folder`` (nothing else); how many."""
    p = Path(folder)
    gone = 0
    for f in p.iterdir() if p.is_dir() else ():
        if _FILE.match(f.name) and f.is_file():
            f.unlink()
            gone += 1
    return gone
