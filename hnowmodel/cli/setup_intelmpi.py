"""``hnow setup-intelmpi``: create the Intel MPI environment that ``--mpi intelmpi`` runs the ranks in."""

from __future__ import annotations

import argparse

from .setup_env import add_setup_arguments, help_text, run_setup

__all__ = ["HELP", "add_arguments", "run"]

HELP = help_text("intelmpi")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_setup_arguments(p, "intelmpi")


def run(args: argparse.Namespace) -> int:
    return run_setup(args, "intelmpi")
