"""The application helper (calibrate.treecoll): bcast/scatter/gather over any tree deliver the right bytes, with
trees given as objects or as the file ``hnow best-tree -o`` writes, for several dtypes, sizes and roots."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hnowmodel.jobs import mpi_lock

pytestmark = pytest.mark.mpi

_SCRIPT = r"""
import json, sys
import numpy as np
from mpi4py import MPI
from calibrate.treecoll import bcast, scatter, gather
from hnowmodel import trees

comm = MPI.COMM_WORLD
n, rank = comm.Get_size(), comm.Get_rank()
cases = [trees.binomial(n, root=0), trees.sequential(n, root=0), trees.make_tree("chain", n, root=2),
         trees.from_parent([3, 3, 3, -1, 2, 4][:n] if n == 6 else [-1] + [0] * (n - 1)), sys.argv[1]]
bad = []
for t in cases:
    for count, dtype in ((0, np.uint8), (1, np.float64), (1000, np.int32), (70000, np.uint8)):
        tr = t if not isinstance(t, str) else trees.load_tree(t, n=n)
        root = tr.root
        b = np.arange(count, dtype=dtype) * 3 + 1 if rank == root else np.zeros(count, dtype=dtype)
        bcast(comm, b, t)
        if not np.array_equal(b, np.arange(count, dtype=dtype) * 3 + 1):
            bad.append(f"bcast {tr.name} {count} {dtype.__name__} rank {rank}")
        send = np.concatenate([np.full(count, r + 1, dtype=dtype) for r in range(n)]) if rank == root else None
        mine = np.zeros(count, dtype=dtype)
        scatter(comm, send, mine, t)
        if not np.array_equal(mine, np.full(count, rank + 1, dtype=dtype)):
            bad.append(f"scatter {tr.name} {count} rank {rank}")
        every = np.zeros(count * n, dtype=dtype) if rank == root else None
        gather(comm, np.full(count, 10 * rank + 1, dtype=dtype), every, t)
        if rank == root and not np.array_equal(every, np.repeat(np.arange(n) * 10 + 1, count).astype(dtype)):
            bad.append(f"gather {tr.name} {count} {dtype.__name__}")
bad = comm.gather(bad)
if rank == 0:
    print(json.dumps(sum(bad, [])))
"""


def test_every_tree_delivers_the_right_bytes(tmp_path):
    tree_file = tmp_path / "tree.json"
    p = subprocess.run(
        [sys.executable, "-m", "hnowmodel.cli", "best-tree", "--layout", "FFSSFS", "--size", "4K", "-o",
         str(tree_file)], capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    script = tmp_path / "app.py"
    script.write_text(_SCRIPT)
    with mpi_lock():
        p = subprocess.run(
            ["mpiexec", "-n", "6", sys.executable, str(script), str(tree_file)],
            capture_output=True,
            text=True,
            timeout=180,
            stdin=subprocess.DEVNULL,
        )
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout) == []


def test_a_tree_of_the_wrong_size_is_refused(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(
        "import numpy as np\nfrom mpi4py import MPI\nfrom calibrate.treecoll import bcast\n"
        "from hnowmodel import trees\n"
        "try:\n    bcast(MPI.COMM_WORLD, np.zeros(4), trees.binomial(3))\n    msg = 'accepted'\n"
        "except Exception as e:\n    msg = str(e)\n"
        # every rank refuses; rank 0 alone prints, so the two lines cannot interleave
        "msgs = MPI.COMM_WORLD.gather(msg)\nif msgs is not None:\n    print(*msgs, sep='\\n')\n"
    )
    with mpi_lock():
        p = subprocess.run(
            ["mpiexec", "-n", "2", sys.executable, str(script)], capture_output=True, text=True, timeout=60
        )
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["the tree has 3 ranks, the communicator 2"] * 2
