"""``python -m calibrate TASK [options]``: the MPI side of hnow, run under mpiexec/srun on every rank.

Arguments are parsed (and files validated) before mpi4py is imported; the thread level is pinned to
``single`` (mpi4py's default ``multiple`` changes which algorithms MPICH picks). The protocol with the launching
``hnow`` is :mod:`hnowmodel.jobs.wire`: rank 0 prints its result as one ``hnow-result:`` line on stdout (with the
world size, so the launcher can check that the job it asked for is the one that started); nothing is written to
files, so node-local ``/tmp`` on other hosts is no obstacle. An exception on any rank prints one
``hnow-error: rank R: step S: message`` line and aborts the whole job, so no rank hangs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

from hnowmodel.jobs.wire import ERROR_PREFIX, result_line, world_line

TASKS: dict[str, str] = {
    "calibrate": "calibrate.calibration",
    "measure": "calibrate.collectives",
    "bench": "calibrate.bench",
    "info": "calibrate.info",
}


def _launcher_rank() -> int:
    """This process's rank as the launcher told it (before MPI is initialised); 0 if unknown."""
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK"):
        if var in os.environ:
            try:
                return int(os.environ[var])
            except ValueError:
                pass
    return 0


def _say_error(message: str) -> None:
    if _launcher_rank() == 0:
        print(f"{ERROR_PREFIX} {message}", file=sys.stderr, flush=True)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        _say_error(message)
        self.exit(2)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m calibrate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="task", metavar="TASK", parser_class=_Parser)
    sub.required = True
    argv = sys.argv[1:] if argv is None else argv
    # Import only the task asked for (every rank does this at start-up); all of them only for --help.
    wanted = [argv[0]] if argv and argv[0] in TASKS else list(TASKS)
    for name in wanted:
        mod = importlib.import_module(TASKS[name])
        p = sub.add_parser(name, help=mod.HELP)
        p.add_argument("--quiet", action="store_true", help="no progress lines")
        mod.add_arguments(p)
        p.set_defaults(_mod=mod)
    args = parser.parse_args(argv)

    from hnowmodel.errors import HnowError

    try:
        prepared = args._mod.prepare(args) if hasattr(args._mod, "prepare") else None
    except HnowError as e:  # bad files or flags: one line from rank 0, exit 2, before MPI starts
        _say_error(str(e))
        return 2

    import mpi4py

    mpi4py.rc.thread_level = "single"
    from mpi4py import MPI

    from .runtime import Runtime, node_name

    rt = None
    try:
        rt = Runtime(MPI.COMM_WORLD, quiet=args.quiet)
        with rt.step("start-up check"):
            hosts = rt.comm.gather(node_name(), root=0)
        if rt.rank == 0:  # the launching process checks the world before the task runs for long
            print(world_line(rt.size, hosts), file=sys.stderr, flush=True)
        result = args._mod.main(args, rt, prepared)
    except BaseException as e:  # noqa: BLE001 - any failure must abort every rank
        msg = str(e) or type(e).__name__
        rank = MPI.COMM_WORLD.Get_rank()
        step = rt.current_step if rt is not None else "start-up"
        print(f"{ERROR_PREFIX} rank {rank}: step {step}: {msg}", file=sys.stderr, flush=True)
        # a moment for the launcher to forward that line: Abort tears the job down at once, and a launcher's
        # proxy can drop a line still in flight (seen once in CI with 3 ranks: "failed without an error report")
        time.sleep(0.25)
        MPI.COMM_WORLD.Abort(2)
        return 2
    if rt.rank == 0:
        sys.stdout.write(result_line({"world_size": rt.size, "hosts": hosts, "result": result}) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
