"""``hnow setup-openmpi``: create the Open MPI environment that ``--mpi openmpi`` runs the ranks in."""

from __future__ import annotations

import argparse

from .setup_env import add_setup_arguments, help_text, run_setup

__all__ = ["HELP", "add_arguments", "run"]

HELP = help_text("openmpi")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_setup_arguments(p, "openmpi")


def run(args: argparse.Namespace) -> int:
    return run_setup(args, "openmpi")
