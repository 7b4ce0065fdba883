"""coll/han's dynamic rules file (Open MPI 5.0.x, ``ompi/mca/coll/han/coll_han_dynamic_file.{c,h}``, v5.0.10):
which component runs an operation on the whole communicator, per communicator size and message size - coll/han
itself with one of its algorithms (``han``, ``han @simple``) or coll/tuned (``tuned``, which then reads its own rules
file) - written (:func:`han_rules_text`) and read back as Open MPI reads it (:func:`read_han_rules`,
:func:`runs`).

Read with ``OMPI_MCA_coll_han_use_dynamic_file_rules=1`` and ``OMPI_MCA_coll_han_dynamic_rules_filename=<file>``;
the file's rules come before the ``coll_han_<op>_dynamic_<level>_module`` parameters, and a level or operation it
does not name keeps them (the sub-communicators' levels: tuned). Its grammar: the number of collectives, then per
collective its name, the number of topological levels, per level its name, the number of configurations, per
configuration its communicator size (the first 1; the rule of the largest size <= the communicator's applies), the
number of message-size rules, and per rule ``FROM_BYTES COMPONENT [@ALGORITHM]`` (the first from 0; the last rule
from at most the call's size applies). The message size is the call's count times its type's size: a reduction's
vector, an allgather's block (bytes per rank, the registry's ``m``). ``#`` starts a comment.

>>> text = han_rules_text(12, {"allreduce": [(0, "han@simple"), (65536, "tuned")]}, ["example"])
>>> rules = read_han_rules(text)
>>> [runs(rules, "allreduce", 12, m) for m in (16384, 65536)], runs(rules, "allreduce", 13, 65536)
(['han@simple', 'tuned'], 'han')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...errors import InputError

__all__ = ["HAN", "HAN_SIMPLE", "TUNED", "LEAVES", "han_rules_text", "read_han_rules", "runs", "HanRules"]

#: The leaves a rule can say: coll/han's default algorithm, its simple algorithm, coll/tuned.
HAN, HAN_SIMPLE, TUNED = "han", "han@simple", "tuned"
LEAVES = (HAN, HAN_SIMPLE, TUNED)
_GLOBAL = "global_communicator"  # coll_han_component.c's name of the GLOBAL_COMMUNICATOR level
#: (op, communicator size of a configuration) -> its rules ``(from_bytes, leaf)``, in the file's order.
HanRules = Mapping[tuple[str, int], tuple[tuple[int, str], ...]]


def _rule_line(lo: int, leaf: str) -> str:
    comp, _, alg = leaf.partition("@")
    return f"{lo} {comp}" + (f" @{alg}" if alg else "")


def han_rules_text(n: int, per_op: Mapping[str, Sequence[tuple[int, str]]], header: Sequence[str]) -> str:
    """The file that runs ``per_op[op]`` (``(from_bytes, leaf)``, increasing, the first from 0; leaves of
    :data:`LEAVES`) for ``op`` on communicators of exactly ``n`` ranks, and coll/han's default on every other size.

    >>> han_rules_text(4, {"reduce": [(0, "tuned")]}, []).splitlines()[5:11]
    ['1', '1 # rules', '0 han', '4', '1 # rules', '0 tuned']
    """
    if n < 2:
        raise InputError(f"han rules: a communicator of at least 2 ranks, got {n}")
    out = [*(f"# {h}" for h in header), f"{len(per_op)} # collectives"]
    for op, rules in per_op.items():
        if not rules or rules[0][0] != 0 or any(leaf not in LEAVES for _, leaf in rules):
            raise InputError(f"internal: han rules for {op}: {list(rules)!r}")
        out += [op, "1 # topological levels", _GLOBAL, "3 # communicator sizes"]
        for size, these in ((1, [(0, HAN)]), (n, list(rules)), (n + 1, [(0, HAN)])):
            out += [str(size), f"{len(these)} # rules", *(_rule_line(lo, leaf) for lo, leaf in these)]
    return "\n".join(out) + "\n"


def _tokens(text: str) -> list[str]:
    """The file's words as Open MPI's reader takes them: whitespace-separated, ``#`` to the end of the line out,
    ``@`` a word of its own."""
    words: list[str] = []
    for line in text.splitlines():
        for w in line.split("#", 1)[0].replace("@", " @ ").split():
            words.append(w)
    return words


def _int(words: list[str], what: str, lo: int = 0) -> int:
    if not words:
        raise InputError(f"han rules: the file ends before {what}")
    w = words.pop(0)
    if not w.isdigit() or int(w) < lo:
        raise InputError(f"han rules: {what} must be a whole number >= {lo}, got {w!r}")
    return int(w)


def read_han_rules(text: str) -> dict[tuple[str, int], tuple[tuple[int, str], ...]]:
    """``text`` read as ``mca_coll_han_init_dynamic_rules`` reads it (global-communicator rules only: the levels
    hnow writes); :class:`InputError` where Open MPI would find the file invalid (and silently ignore it)."""
    words, got = _tokens(text), {}
    for _ in range(_int(words, "the number of collectives", 1)):
        op = words.pop(0) if words else ""
        for _ in range(_int(words, f"{op}'s number of levels", 1)):
            level = words.pop(0) if words else ""
            if level != _GLOBAL:
                raise InputError(f"han rules: {op}: level {level!r} (hnow writes {_GLOBAL} only)")
            for k in range(_int(words, f"{op}'s number of communicator sizes")):
                size = _int(words, f"{op}'s communicator size", 1)
                if k == 0 and size != 1:
                    raise InputError(f"han rules: {op}: the first communicator size must be 1, got {size}")
                rules = []
                for i in range(_int(words, f"{op}'s number of rules")):
                    lo = _int(words, f"{op}'s message size")
                    if i == 0 and lo > 1:
                        raise InputError(f"han rules: {op}: the first message size must be 0, got {lo}")
                    leaf = words.pop(0) if words else ""
                    if words[:1] == ["@"]:
                        leaf += "@" + words[1]
                        del words[:2]
                    if leaf not in LEAVES:
                        raise InputError(f"han rules: {op}: unknown component or algorithm {leaf!r}")
                    rules.append((lo, leaf))
                got[(op, size)] = tuple(rules)
    if words:
        raise InputError(f"han rules: unexpected {words[0]!r} after the last collective")
    return got


def runs(rules: HanRules, op: str, n: int, m: int) -> str:
    """What runs ``op`` on ``n`` ranks at ``m`` bytes under ``rules``: the rule of the largest communicator size
    <= ``n``, the last from at most ``m`` bytes (coll/han's default where the file says nothing)."""
    sizes = [size for (o, size) in rules if o == op and size <= n]
    if not sizes:
        return HAN
    these = [leaf for lo, leaf in rules[(op, max(sizes))] if lo <= m]
    return these[-1] if these else HAN
