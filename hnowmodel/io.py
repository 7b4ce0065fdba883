"""Atomic file output: write to a temporary file in the same folder, then rename.

A crash or a Ctrl-C therefore never leaves a half-written file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "write_json_atomic", "read_json"]


def atomic_write(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file + ``os.replace``); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_json_atomic(path: str | os.PathLike, doc: Any) -> Path:
    """Write ``doc`` as indented JSON, atomically."""
    return atomic_write(path, json.dumps(doc, indent=2, sort_keys=False) + "\n")


def read_json(path: str | os.PathLike, what: str = "file") -> Any:
    """Read a JSON file; raise :class:`~hnowmodel.errors.InputError` naming the file on any problem."""
    from .errors import InputError

    try:
        with open(path) as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise InputError(f"{what} {str(path)!r}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{what} {str(path)!r}: is a directory") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{what} {str(path)!r}: not valid JSON ({e.msg} at line {e.lineno})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{what} {str(path)!r}: cannot read ({e})") from None
