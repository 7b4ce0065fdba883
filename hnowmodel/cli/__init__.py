"""The ``hnow`` command: a thin layer over the library.

Each subcommand lives in its own module (``hnowmodel.cli.<name>``) exposing ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``; :data:`COMMANDS` maps names to modules and is the only
place to register one. ``hnow CMD`` imports only CMD's module, and that module imports what its options need (the
registries their help names); the library call ``run`` makes is imported inside ``run``, so ``hnow CMD --help``
and a usage error start without loading the jobs, the launcher or the virtual cluster. Any
:class:`~hnowmodel.errors.HnowError` becomes exit status 2 and one line on stderr. Every command is one call into
the library (:mod:`hnowmodel.jobs` for what runs under MPI) plus formatting; this package starts no process and
never imports MPI.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Collection

from .. import __version__
from ..errors import HnowError
from ..jobs.procgroup import Terminated

__all__ = ["main", "COMMANDS", "build_parser"]

COMMANDS: dict[str, str] = {
    "predict": "hnowmodel.cli.predict",
    "calibrate": "hnowmodel.cli.calibrate",
    "measure": "hnowmodel.cli.measure",
    "compare": "hnowmodel.cli.compare",
    "best-tree": "hnowmodel.cli.best_tree",
    "best": "hnowmodel.cli.best_tree",  # the same command: it chooses trees and algorithms (issue #34)
    "plan": "hnowmodel.cli.plan",
    "bench": "hnowmodel.cli.bench",
    "demo": "hnowmodel.cli.demo",
    "info": "hnowmodel.cli.info",
    "cluster": "hnowmodel.cli.cluster",
    "slurm-script": "hnowmodel.cli.slurm_script",
    "export": "hnowmodel.cli.export",
    "tune": "hnowmodel.cli.tune",
    "setup-openmpi": "hnowmodel.cli.setup_openmpi",
    "setup-intelmpi": "hnowmodel.cli.setup_intelmpi",
    "import": "hnowmodel.cli.outside",
}


class _Parser(argparse.ArgumentParser):
    """argparse with exit status 2 and a single line for usage errors (no usage dump)."""

    def error(self, message: str):  # noqa: D401
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``hnow`` parser: every command's options, or with ``command`` (one of :data:`COMMANDS`) only that
    command's, the others named without importing their modules (a command starts without loading what the others
    need: the export backends, the search, matplotlib)."""
    return _parser(COMMANDS if command is None else (command,))


def _parser(built: Collection[str]) -> argparse.ArgumentParser:
    """The ``hnow`` parser with the options of the commands in ``built``; the others are only named."""
    parser = _Parser(
        prog="hnow", description="Model, predict, choose and check MPI collectives on heterogeneous clusters."
    )
    parser.add_argument("--version", action="version", version=f"hnow {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, modname in COMMANDS.items():
        if name not in built:
            sub.add_parser(name)
            continue
        mod = importlib.import_module(modname)
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        p.add_argument("--json", action="store_true", help="print one JSON document on stdout, nothing else")
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The command ``argv`` names (its first word that is not an option) when it is one of :data:`COMMANDS`, else
    None (``hnow``, ``hnow --help``, a misspelt command: the whole parser answers those).

    >>> _command_of(["predict", "--op", "bcast"]), _command_of(["--help"]), _command_of(["predcit"])
    ('predict', None, None)
    """
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def _built(argv: list[str]) -> Collection[str]:
    """The commands whose modules the parser of ``argv`` imports: the command it names; every one for the overview
    (``-h``/``--help``, which prints each command's help line); none for ``hnow``, ``hnow --version`` or a misspelt
    command (their names are enough).

    >>> _built(["predict", "-h"]), _built(["--version"]), _built(["predcit"]), len(_built(["--he"])) == len(COMMANDS)
    (('predict',), (), (), True)
    """
    command = _command_of(argv)
    if command is not None:
        return (command,)
    return COMMANDS if any(a.startswith(("-h", "--h")) for a in argv) else ()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser(_built(argv))
    args = parser.parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except HnowError as e:
        print(f"hnow {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"hnow {args.command}: interrupted; the MPI job was stopped", file=sys.stderr)
        return 130
    except Terminated:
        print(f"hnow {args.command}: terminated; the MPI job was stopped", file=sys.stderr)
        return 143
    except BrokenPipeError:
        return 0
