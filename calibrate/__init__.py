"""calibrate: the measuring side of hnowmodel. Owns every MPI call; runs under mpiexec/srun.

Run tasks with ``python -m calibrate TASK`` (``hnow`` starts them for you). Importing this package does not
import mpi4py; the modules that talk to MPI import it when they run.
"""

__all__ = ["transport", "runtime"]
