"""Intel MPI under a real Slurm on 3 virtual hosts (#27): ``--mpi intelmpi --launcher srun`` from outside an
allocation (``--cluster``) and inside one (``salloc -N 3``, ``--launcher-args "-N 3"``). The jobs finish, rank i runs
on host i, the ranks were given Slurm's PMI-2 library where there is one (``I_MPI_PMI_LIBRARY``), and the measured
rows and the profile are valid. Behaviour, not timing.

Skipped, with the reason, where there is no root, no network namespaces, no Slurm (installed where it can be) or no
Intel MPI environment (``hnow setup-intelmpi``)."""

from __future__ import annotations

import json
import sys

import pytest

import hnowmodel as hm
from hnowmodel.jobs.mpienv import intelmpi_missing
from hnowmodel.mpi_programs import find_pmi_library
from tests.helpers import SLURM_NAME, check_measured_row, run_hnow, slurm_cluster
from tests.helpers import slurm_run as run

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

MISSING = intelmpi_missing()
_RATES = [120, 30, 120]


@pytest.fixture(scope="module")
def slurm3(slurm_ok, python_on_hosts, tmp_path_factory):
    """A 3-host, 2-speed cluster with Slurm for the module, and its spec file."""
    if MISSING:
        pytest.skip(f"no Intel MPI environment here: {MISSING}")
    name = f"{SLURM_NAME}i"
    yield from slurm_cluster(tmp_path_factory.mktemp("spec"), name, _RATES)


def _check_info(doc: dict) -> None:
    assert doc["library"].startswith("Intel(R) MPI Library 2021"), doc
    assert doc["hosts"] == ["h1", "h2", "h3"], doc  # rank i on host i
    assert doc["mpi_env"]["mpi"] == "intelmpi" and doc["provider"] == "tcp", doc
    assert doc["pmi_library"] == (find_pmi_library() or ""), doc  # Slurm's libpmi2 where there is one


def test_info_and_measure_through_srun_outside_an_allocation(slurm3):
    _, spec = slurm3
    where = ("--np", "3", "--cluster", spec, "--mpi", "intelmpi", "--launcher", "srun")
    res = run_hnow("info", *where, "--json", timeout=300, cwd="/")
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    _check_info(doc)
    assert doc["fabric"]["FI_TCP_IFACE"] == "eth0", doc  # the cluster's links, not the loopback
    res = run_hnow(
        "measure", *where, "--op", "bcast", "--tree", "binomial,native:binomial", "--sizes", "16K", "--reps", "2",
        "--json", timeout=300, cwd="/",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    rows = json.loads(res.stdout)["rows"]
    assert sorted(r["tree"] for r in rows) == ["binomial", "native:binomial"], rows
    for r in rows:
        assert (r["op"], r["size"]) == ("bcast", 16384)
        check_measured_row(r)  # payload verified, spread ordered, measured = its stat


def test_info_and_calibrate_inside_salloc(slurm3, tmp_path):
    """hnow runs here (a login node) with the allocation in its environment; srun starts Intel MPI's ranks on it."""
    st, _ = slurm3
    hnow = (sys.executable, "-m", "hnowmodel.cli")
    where = ("--np", "3", "--mpi", "intelmpi", "--launcher", "srun", "--launcher-args", "-N 3")
    res = run(st, "salloc", "-N", "3", *hnow, "info", *where, "--json", timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    _check_info(json.loads(res.stdout))
    prof = tmp_path / "prof.json"
    # one round of the network measurement (--quick has two) at one size per octave (--quick's: two): the types
    # come from the hosts' NICs, measured before
    res = run(st, "salloc", "-N", "3", *hnow, "calibrate", *where, "--layout", "auto", "--quick", "--rounds", "1",
              "--sizes", "0,256..1M", "-o", str(prof), timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(prof.read_text())
    assert [n["host"] for n in doc["nodes"]] == ["h1", "h2", "h3"]  # Slurm node names, in rank order
    types = [n["type"] for n in doc["nodes"]]
    assert types[0] == types[2] != types[1]  # the two speeds, found by measuring (as under MPICH)
    assert set(hm.Profile.load(prof).types) == set(types)
