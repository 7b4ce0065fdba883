"""File output that never leaves a half-written file and never overwrites one by surprise.

Writes go to a temporary file in the same folder, then are renamed into place, so a crash or Ctrl-C leaves
either the old file or the new one. New files get the permissions the user's umask gives (``0666 & ~umask``),
as ``open()`` would, also when an existing file is replaced. :func:`check_output` finds an unwritable or
already existing output *before* a long run starts.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> p = atomic_write(os.path.join(d, "a.txt"), "x")
>>> atomic_write(p, "y", overwrite=False)
Traceback (most recent call last):
...
hnowmodel.errors.InputError: output ... exists (use --force to overwrite it)
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import InputError

__all__ = ["atomic_write", "write_json_atomic", "read_json", "check_output", "umask_mode"]


def umask_mode(base: int = 0o666) -> int:
    """``base`` with the process's umask applied: the mode ``open()`` would give a new file."""
    mask = os.umask(0o022)
    os.umask(mask)
    return base & ~mask


def atomic_write(path: str | os.PathLike, data: str | bytes, *, overwrite: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically (temp file + rename), with umask permissions; returns the path.

    ``overwrite=False`` refuses (:class:`InputError`) when ``path`` exists, atomically (the file is linked into
    place, which fails if something is there).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, umask_mode())
        with os.fdopen(fd, mode) as fh:
            fh.write(data)
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise InputError(f"output {str(path)!r} exists (use --force to overwrite it)") from None
            os.unlink(tmp)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_json_atomic(path: str | os.PathLike, doc: Any, *, overwrite: bool = True) -> Path:
    """Write ``doc`` as indented strict JSON (no NaN/inf), atomically."""
    try:
        text = json.dumps(doc, indent=2, sort_keys=False, allow_nan=False)
    except ValueError as e:
        raise InputError(f"{path}: cannot be written as JSON ({e})") from None
    return atomic_write(path, text + "\n", overwrite=overwrite)


def read_json(path: str | os.PathLike, what: str = "file") -> Any:
    """Read a JSON file; raise :class:`InputError` naming the file on any problem."""
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


def check_output(path: str | os.PathLike, *, force: bool = False, folder: bool = False, flag: str = "-o") -> Path:
    """Check, before any long run, that ``path`` can be written: its folder is writable (a file is really created
    and removed there) and, unless ``force``, nothing is in the way (an existing file; for ``folder=True`` a
    non-empty folder). :class:`InputError` names the flag and the problem.

    >>> import tempfile
    >>> check_output(tempfile.mkdtemp(), folder=True).is_dir()
    True
    """
    p = Path(path)
    if folder:
        if p.exists() and not p.is_dir():
            raise InputError(f"{flag} {str(p)!r}: exists and is not a folder")
        if p.is_dir() and any(p.iterdir()) and not force:
            raise InputError(f"{flag} {str(p)!r}: folder exists and is not empty (use --force to write into it)")
        probe_dir = p
    else:
        if p.is_dir():
            raise InputError(f"{flag} {str(p)!r}: is a folder, expected a file name")
        if p.exists() and not force:
            raise InputError(f"{flag} {str(p)!r}: exists (use --force to overwrite it)")
        probe_dir = p.parent if str(p.parent) else Path(".")
    existing = probe_dir
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{flag} {str(p)!r}: {str(existing)!r} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".hnow-probe-", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(f"{flag} {str(p)!r}: cannot write in {str(existing)!r} ({e.strerror})") from None
    return p
