"""Intel MPI as a third library: its own environment (``hnow setup-intelmpi``), chosen by ``--mpi intelmpi``, its
fabric and tuning file reported by ``hnow info``, its binomial collectives pinned by ``I_MPI_ADJUST_*``.

The tests that start Intel MPI need the environment ``hnow setup-intelmpi`` makes (``.ci/run`` makes it); they are
skipped, with the reason, where it is missing. Real MPI, 2 ranks; nothing here asserts a time.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import hnowmodel.cluster as hc
from hnowmodel import ops, paper_profile
from hnowmodel.cluster.wrapper import INTELMPI_TCP_ENV
from hnowmodel.errors import InputError
from hnowmodel.jobs import Launch, task_command
from hnowmodel.jobs.launcher import SRUN_MPICH_ENV, srun_defaults
from hnowmodel.jobs.mpienv import (
    INTELMPI_ENV,
    INTELMPI_VENV_ENV,
    MPI_LIBRARIES,
    MPIEnv,
    intelmpi_missing,
    intelmpi_venv,
    setup_intelmpi,
    under_srun,
)
from hnowmodel.mpi_programs import PMI2_NAMES, find_pmi_library
from hnowmodel.trees import make_tree
from tests.helpers import one_error_line

MISSING = intelmpi_missing()
needs_impi = pytest.mark.skipif(bool(MISSING), reason=f"no Intel MPI environment here: {MISSING}")


# ---- without Intel MPI: the choice is checked before anything starts ---------------------------------------------
def test_unknown_mpi_names_every_library(hnow):
    p = hnow("info", "--np", "2", "--mpi", "lam", timeout=60)
    assert p.returncode == 2 and one_error_line(p.stderr), p.stderr
    assert "--mpi 'lam': choose from auto, mpich, openmpi, intelmpi" in p.stderr, p.stderr


def test_a_missing_environment_is_one_line_and_exit_2(hnow, tmp_path):
    p = hnow("info", "--np", "2", "--mpi", "intelmpi", env={INTELMPI_VENV_ENV: str(tmp_path / "nowhere")}, timeout=60)
    assert p.returncode == 2 and one_error_line(p.stderr), p.stderr
    assert "no Intel MPI environment at" in p.stderr and "hnow setup-intelmpi" in p.stderr, p.stderr
    with pytest.raises(InputError, match="--mpi openmpi uses mpirun there"):  # Intel MPI runs under srun now
        Launch(np=2, mpi="openmpi", cluster="demo", launcher="srun")


def _planned(tmp_path):
    """A planned (not started) 2-host cluster: ``a`` with one slot, ``b`` with two."""
    spec = {
        "schema": "hnowmodel.cluster/1",
        "name": "t",
        "hosts": [{"name": "a", "egress_mbit": 100, "ingress_mbit": 100, "slots": 1}]
        + [{"name": "b", "egress_mbit": 50, "ingress_mbit": 50, "slots": 2}],
    }
    return hc._plan(hc.from_dict(spec), ipaddress.ip_network("10.213.7.0/24"), str(tmp_path / "w.sh"))


def test_intel_hydra_starts_through_the_wrapper_with_the_bridge_as_its_interface(tmp_path):
    """Intel's hydra: ssh bootstrap through the exec wrapper, the ranks per host, the proxies told the bridge's
    interface (else they look for this machine's host name), libfabric's TCP over each host's eth0."""
    st = _planned(tmp_path)
    ls = hc.launch_settings_for("intelmpi")(st, 2)  # one rank on each host: -hosts with -ppn
    args = ls.mpiexec_args
    assert args[args.index("-bootstrap") + 1] == "ssh" and args[args.index("-bootstrap-exec") + 1] == st.wrapper
    assert args[args.index("-hosts") + 1] == "a,b" and args[args.index("-ppn") + 1] == "1" and ls.hosts == ["a", "b"]
    assert ls.env["I_MPI_HYDRA_IFACE"] == st.bridge and ls.env["FI_TCP_IFACE"] == "eth0"
    # unequal counts: Intel's hydra ignores -hosts a:1,b:2 (it fills each host's cores), so a machinefile
    ls = hc.launch_settings_for("intelmpi")(st, 3)
    args = ls.mpiexec_args
    assert "-hosts" not in args and ls.hosts == ["a", "b", "b"]
    assert open(args[args.index("-machinefile") + 1]).read() == "a:1\nb:2\n"
    with pytest.raises(InputError, match="choose from: mpich, openmpi, intelmpi"):
        hc.launch_settings_for("lam")


def test_its_binomial_collectives_are_pinned_by_i_mpi_adjust():
    """MPICH's binomial code underneath: the same model tree and schedule as MPICH's pinned binomial, asked for as
    ``native:binomial`` (what ``native`` is under MPICH)."""
    for op in ops.tree_names():  # hnow pins none of Intel MPI's algorithms for the others (docs/operations.md)
        nat = ops.native_for("native:binomial", op, "Intel MPI")
        assert nat.env == {f"I_MPI_ADJUST_{op.upper()}": "1"} and nat.leaf == 1 and nat.model_tree == "binomial"
        assert nat.schedule == ops.get(op).native["MPICH"].schedule
    # every library's settings for native:binomial at once (what a rank sets before it knows its library)
    env = ops.native_spec_env("native:binomial", ["bcast"])
    assert env["I_MPI_ADJUST_BCAST"] == "1" and env["MPIR_CVAR_BCAST_INTRA_ALGORITHM"] == "binomial"


def test_native_under_intel_mpi_is_its_default_modelled_where_the_wire_showed_it():
    """``native`` under Intel MPI is the library's own choice (nothing pinned: no I_MPI_ADJUST_*), modelled on 6
    ranks at 16-256 KiB by the trees read off the wire (docs/intel-mpi.md), not modelled elsewhere (None)."""
    assert "I_MPI_ADJUST_BCAST" not in ops.native_spec_env("native", ["bcast", "scatter", "gather"])
    bcast = ops.get("bcast").native["Intel MPI"]
    assert bcast.env == {} and bcast.leaf is None  # nothing pinned: no I_MPI_ADJUST number
    sizes = (8192, 20200, 20300, 131072, 138500, 139000, 355000, 360000, 1396108)
    got = [bcast.tree_at(6, m) for m in sizes]
    assert got == ["mpich-knomial1:4"] * 2 + ["mpich-knomial1:2"] * 3 + ["kary:2"] * 2 + ["binomial"] * 2
    for m, n in ((20250, 6), (138750, 6), (357500, 6), (4096, 6), (1 << 21, 6), (65536, 5)):  # not known there
        assert bcast.tree_at(n, m) is None, (n, m)
    assert bcast.tree_at(6, 65536, one_per_host=False) is None  # read with one rank per host only
    for op in ("scatter", "gather"):
        assert ops.get(op).native["Intel MPI"].tree_at(6, 65536) == "ompi-linear"
    # predicted per size with the tree that runs there; NaN where none is known
    prof = paper_profile()
    lay = ["fast", "slow"] * 3
    t = ops.native_predict("bcast", "Intel MPI", prof, lay, [4096, 16384, 65536, 262144])
    assert np.isnan(t[0]) and np.all(np.isfinite(t[1:]))
    for m, spec in ((16384, "mpich-knomial1:4"), (65536, "mpich-knomial1:2"), (262144, "kary:2")):
        one = ops.predict("bcast", prof, lay, make_tree(spec, 6), [m])
        assert float(ops.native_predict("bcast", "Intel MPI", prof, lay, [m])[0]) == float(one[0])


# ---- under srun, without MPI: Slurm's PMI-2 library, the ranks' environment, the settings on a virtual cluster ----
def test_slurms_pmi2_library_is_found_beside_srun_first(tmp_path):
    """``PREFIX/bin/srun`` (followed through a link) -> ``PREFIX/lib*``; the development link before the runtime
    library; nothing there and no system search: None."""
    prefix = tmp_path / "slurm"
    (prefix / "bin").mkdir(parents=True)
    srun = prefix / "bin" / "srun"
    srun.write_text("#!/bin/sh\n")
    link = tmp_path / "elsewhere" / "bin" / "srun"
    link.parent.mkdir(parents=True)
    link.symlink_to(srun)
    assert find_pmi_library(str(srun), system=False) is None
    runtime = prefix / "lib" / "x86_64-linux-gnu" / "libpmi2.so.0"
    runtime.parent.mkdir(parents=True)
    runtime.write_bytes(b"")
    assert find_pmi_library(str(srun), system=False) == str(runtime)
    assert find_pmi_library(str(link), system=False) == str(runtime)  # the prefix of the file the link names
    dev = prefix / "lib" / "x86_64-linux-gnu" / "libpmi2.so"
    dev.write_bytes(b"")
    assert find_pmi_library(str(srun), system=False) == str(dev)
    assert PMI2_NAMES == ("libpmi2.so", "libpmi2.so.0")


def test_the_system_pmi2_library_is_the_one_the_linker_lists():
    """With no Slurm prefix of its own, the one ``ldconfig -p`` lists (Debian's libpmi2-0: libpmi2.so.0)."""
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    if not os.access(ldconfig, os.X_OK):
        pytest.skip("no ldconfig here")
    listed = [
        ln.split(" => ")[-1].strip()
        for ln in subprocess.run([ldconfig, "-p"], capture_output=True, text=True).stdout.splitlines()
        if ln.strip().split(" ")[0] in PMI2_NAMES
    ]
    got = find_pmi_library("/nowhere/bin/srun")
    if not listed:
        assert got is None or os.path.basename(got) in PMI2_NAMES
    else:
        assert got in listed, (got, listed)


def test_under_srun_the_ranks_load_slurms_pmi_library_and_keep_no_one_host_setting():
    impi = MPIEnv(
        MPI_LIBRARIES["intelmpi"], "/v/bin/python", "/v/bin/mpiexec", ("-x",), {**INTELMPI_ENV, "MPI4PY_LIBMPI": "/v/l"}
    )
    got = under_srun(impi, "/usr/lib/x86_64-linux-gnu/libpmi2.so.0")
    assert (got.library, got.python, got.launcher, got.launcher_args, got.forward) == (
        impi.library,
        "/v/bin/python",
        None,  # srun starts the ranks: nothing replaces it, no mpiexec arguments
        (),
        False,
    )
    want = {k: v for k, v in impi.env.items() if k != "FI_TCP_IFACE"}  # lo holds on one host only
    assert got.env == {**want, "I_MPI_PMI_LIBRARY": "/usr/lib/x86_64-linux-gnu/libpmi2.so.0"}
    assert under_srun(impi, None).env == want  # no library: Intel MPI's own PMI-1 client
    mpich = MPIEnv(MPI_LIBRARIES["mpich"], "/p", None, (), {"A": "1"})
    assert under_srun(mpich, "/x/libpmi2.so.0").env == {"A": "1"}  # MPICH names no PMI library


def test_on_a_virtual_cluster_srun_starts_mpich_and_intel_mpi_ranks_not_open_mpis(tmp_path):
    st = _planned(tmp_path)
    ls = hc.srun_settings_for("intelmpi")(st, 3)
    assert ls.hosts == ["a", "b", "b"] and ls.mpiexec_args == [] and ls.env == INTELMPI_TCP_ENV
    assert ls.env["FI_TCP_IFACE"] == "eth0" and "I_MPI_HYDRA_IFACE" not in ls.env  # no hydra under srun
    ls = hc.srun_settings_for("mpich")(st, 2)
    assert ls.hosts == ["a", "b"] and {k: ls.env[k] for k in hc.TCP_ENV} == hc.TCP_ENV
    with pytest.raises(InputError, match=r"--mpi 'openmpi': no srun launch .*choose from: mpich, intelmpi\)"):
        hc.srun_settings_for("openmpi")
    with pytest.raises(InputError, match="--cluster with --launcher srun starts MPICH or Intel MPI ranks"):
        Launch(np=2, mpi="openmpi", cluster="demo", launcher="srun")


def test_a_pmi_library_that_is_not_there_and_open_mpi_under_srun_are_refused(tmp_path):
    """Before anything starts, with one line: a PMI library that is no file (Intel MPI would only print "Could not
    open" and fall back to its own client), an empty one (its ranks crash in MPI_Init: seen under the virtual
    cluster's Slurm), Open MPI's environment under srun."""
    gone = str(tmp_path / "libpmi2.so.0")
    with pytest.raises(InputError, match=f"I_MPI_PMI_LIBRARY={gone}: no such file .*libpmi2-0"):
        Launch(np=2, mpi="intelmpi", launcher="srun", env={"I_MPI_PMI_LIBRARY": gone})
    with pytest.raises(InputError, match="I_MPI_PMI_LIBRARY is set but empty: Intel MPI's ranks crash in MPI_Init"):
        Launch(np=2, mpi="intelmpi", launcher="srun", env={"I_MPI_PMI_LIBRARY": ""})
    with pytest.raises(InputError, match="--mpi openmpi starts the ranks with Open MPI's mpirun, not --launcher 'srun"):
        Launch(np=2, mpi="openmpi", launcher="srun")


@needs_impi
def test_the_job_runs_under_srun_with_the_intel_environment_and_slurms_pmi_library():
    if shutil.which("srun") is None:
        pytest.skip("no srun here (Slurm's slurm-client package)")
    venv = intelmpi_venv()
    launch = Launch(np=2, mpi="intelmpi", launcher="srun", launcher_args="-N 2")
    argv = task_command(launch, "info", [])
    assert argv[0] == shutil.which("srun") and argv[argv.index("-n") + 1] == "2" and "--mpi=pmi2" in argv
    assert argv[-4:] == [str(venv / "bin" / "python"), "-m", "calibrate", "info"] and "-bootstrap" not in argv
    env = launch.mpi_env.env
    assert env["MPI4PY_LIBMPI"] == str(venv / "lib" / MPI_LIBRARIES["intelmpi"].libmpi) and "FI_TCP_IFACE" not in env
    assert env.get("I_MPI_PMI_LIBRARY") == find_pmi_library(shutil.which("srun"))
    # MPICH's netmod settings are for an MPICH's ranks only (this Python may have one beside it)
    assert not set(srun_defaults(launch)[1]) & set(SRUN_MPICH_ENV)
    argv = task_command(Launch(np=2, mpi="intelmpi", launcher="srun --mpi=pmix"), "info", [])
    assert "--mpi=pmi2" not in argv and "--mpi=pmix" in argv


# ---- with the environment -------------------------------------------------------------------------------------------
@needs_impi
def test_the_job_runs_in_the_intel_environment():
    venv = intelmpi_venv()
    launch = Launch(np=2, mpi="intelmpi")
    argv = task_command(launch, "info", [])
    assert argv[0] == str(venv / "bin" / "mpiexec") and argv[-4:] == [
        str(venv / "bin" / "python"),
        "-m",
        "calibrate",
        "info",
    ]
    env = launch.mpi_env.env
    assert env["MPI4PY_LIBMPI"] == str(venv / "lib" / MPI_LIBRARIES["intelmpi"].libmpi)
    assert env["I_MPI_FABRICS"] == "shm:ofi" and env["FI_PROVIDER"] == "tcp" and env["I_MPI_THREAD_YIELD"] == "2"


@needs_impi
def test_setting_up_again_keeps_a_complete_environment():
    info = setup_intelmpi()
    assert info["created"] is False and info["venv"] == str(intelmpi_venv())
    assert info["library"] == "Intel MPI" and info["version"] == "2021.16.2"


@pytest.mark.mpi
@needs_impi
def test_info_names_intel_mpi_its_fabric_and_tuning_file(hnow):
    p = hnow("info", "--np", "2", "--mpi", "intelmpi", "--json", timeout=180)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["library"].startswith("Intel(R) MPI Library 2021.16") and doc["ranks"] == 2
    assert doc["mpi_env"]["mpi"] == "intelmpi"
    assert doc["fabric"]["I_MPI_FABRICS"] == "shm:ofi" and doc["provider"] == "tcp"
    assert os.path.basename(doc["tuning_file"]).startswith("tuning_") and os.path.isfile(doc["tuning_file"]), doc
    p = hnow("info", "--np", "2", "--mpi", "intelmpi", timeout=180)
    assert p.returncode == 0 and "Intel(R) MPI Library" in p.stdout and "tuning file : " in p.stdout, p.stderr


def test_the_default_and_a_pinned_algorithm_are_measured_in_separate_jobs():
    """Intel MPI reads I_MPI_ADJUST_* once, in MPI_Init: its default (``native``) needs them unset, ``native:binomial``
    sets them, so one measurement runs them in two jobs, and a rank asked for both at once refuses before MPI."""
    from calibrate.collectives import _check_pinned
    from hnowmodel.jobs.measure_job import job_groups

    names = ops.tree_names()  # Intel MPI's defaults hnow knows
    assert ops.native_spec_unset("native", names) == {f"I_MPI_ADJUST_{op.upper()}" for op in names}
    assert ops.native_spec_unset("native:binomial", names) == set()
    groups = job_groups({"native": None, "binomial": make_tree("binomial", 4), "native:binomial": None}, names)
    assert [sorted(g) for g in groups] == [["binomial", "native"], ["native:binomial"]]
    with pytest.raises(InputError, match="I_MPI_ADJUST_BCAST set, another .* unset"):
        _check_pinned(["native", "native:binomial"], ["bcast"])


@needs_impi
def test_with_a_hostfile_the_ranks_do_not_get_the_loopback_interface(tmp_path):
    """On one host Intel MPI's TCP provider is told ``FI_TCP_IFACE=lo``; ranks a hostfile spreads over machines must
    not be (they would not reach each other): libfabric chooses, or the user's own value is kept."""
    from hnowmodel.jobs.launcher import _rank_env

    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    assert _rank_env(Launch(np=2, mpi="intelmpi"), {}).get("FI_TCP_IFACE") == os.environ.get("FI_TCP_IFACE", "lo")
    env = _rank_env(Launch(np=2, mpi="intelmpi", hostfile=str(hosts)), {})
    assert env.get("FI_TCP_IFACE") == os.environ.get("FI_TCP_IFACE") and env["FI_PROVIDER"] == "tcp"
    mine = _rank_env(Launch(np=2, mpi="intelmpi", hostfile=str(hosts), env={"FI_TCP_IFACE": "ib0"}), {})
    assert mine["FI_TCP_IFACE"] == "ib0"
