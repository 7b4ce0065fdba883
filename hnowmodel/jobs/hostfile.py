"""Hostfiles in either launcher's syntax: read, check, place ranks, and write for the launcher that runs.

Two syntaxes are read, one host per line, ``#`` starting a comment:

* MPICH hydra: ``host`` or ``host:SLOTS``;
* Open MPI: ``host``, ``host slots=SLOTS`` (``max_slots=M`` is accepted and ignored).

Whichever syntax a user wrote, :func:`format_hostfile` writes it for the launcher that starts the job, and
:func:`place` says on which host each rank lands (filling each host's slots in order, then starting over, as hydra
does), so that the job that started can be checked against the hostfile.

>>> hs = parse_hostfile("n1:2\\nn2 slots=1  # slow node\\n")
>>> [(h.host, h.slots) for h in hs]
[('n1', 2), ('n2', 1)]
>>> place(hs, 4)
('n1', 'n1', 'n2', 'n1')
>>> print(format_hostfile(hs, "openmpi"), end="")
n1 slots=2
n2 slots=1
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["HostEntry", "parse_hostfile", "read_hostfile", "place", "format_hostfile", "FLAVOURS"]

#: Hostfile syntaxes :func:`format_hostfile` writes.
FLAVOURS = ("hydra", "openmpi")

_HOST = r"[A-Za-z0-9_.\-\[\]:]*[A-Za-z0-9_.\-\]]"  # names, IPv4, bracketed IPv6
_MAX_SLOTS = 1_000_000


@dataclass(frozen=True)
class HostEntry:
    """One line of a hostfile: a host name (or address) and how many ranks it takes (slots, >= 1)."""

    host: str
    slots: int = 1


def _slots(text: str, where: str) -> int:
    if not re.fullmatch(r"[0-9]+", text) or not 1 <= int(text) <= _MAX_SLOTS:
        raise InputError(f"{where}: slots must be a whole number from 1 to {_MAX_SLOTS}, got {text!r}")
    return int(text)


def parse_hostfile(text: str, name: str = "hostfile") -> tuple[HostEntry, ...]:
    """The entries of a hostfile's text (hydra or Open MPI syntax); :class:`InputError` naming the line otherwise."""
    out: list[HostEntry] = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{name}:{i}"
        words = line.split()
        first = words[0]
        slots = 1
        m = re.fullmatch(r"([^:\s]+):([^:\s]+)", first)
        if m and len(words) == 1:  # hydra host:n
            host, slots = m.group(1), _slots(m.group(2), where)
        else:
            host = first
            for w in words[1:]:
                key, eq, val = w.partition("=")
                if not eq or key not in ("slots", "max_slots", "max-slots"):
                    raise InputError(f"{where}: unknown hostfile item {w!r} (expected host, host:N or host slots=N)")
                if key == "slots":
                    slots = _slots(val, where)
                else:
                    _slots(val, where)
        if not re.fullmatch(_HOST, host):
            raise InputError(f"{where}: {host!r} is not a host name or address")
        out.append(HostEntry(host, slots))
    if not out:
        raise InputError(f"{name}: no hosts in the hostfile")
    return tuple(out)


def read_hostfile(path: str | Path) -> tuple[HostEntry, ...]:
    """:func:`parse_hostfile` of a file; a missing or unreadable file is an :class:`InputError`."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"--hostfile {str(path)!r}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    return parse_hostfile(text, name=str(path))


def place(entries: tuple[HostEntry, ...], np: int) -> tuple[str, ...]:
    """The host of each of ``np`` ranks: each host's slots filled in order, starting over when all are full."""
    seq = [e.host for e in entries for _ in range(e.slots)]
    return tuple(seq[i % len(seq)] for i in range(np))


def format_hostfile(entries: tuple[HostEntry, ...], flavour: str) -> str:
    """The hostfile text for a launcher: ``hydra`` (``host:N``) or ``openmpi`` (``host slots=N``)."""
    if flavour == "hydra":
        return "".join(f"{e.host}:{e.slots}\n" for e in entries)
    if flavour == "openmpi":
        return "".join(f"{e.host} slots={e.slots}\n" for e in entries)
    raise InputError(f"unknown hostfile syntax {flavour!r} (choose from: {', '.join(FLAVOURS)})")
