"""The measurement protocol's constants, in one place: how often, how long, how far apart the calibration measures.

Every number the calibration's steps use to decide *how* to measure (not what the measurement gave) is here, with
its unit: passes and rounds, repetitions, the idle gaps between isolated messages, the time budgets that bound the
sizes measured on a network, the sleeps of the ranks that wait, and the size bounds of the special measurements.
The steps that use them are :mod:`calibrate.sharedmemory` (ranks on one host), :mod:`calibrate.network` (ranks on
several hosts), :mod:`calibrate.sendmodes` (eager / delivery / rendezvous), :mod:`calibrate.hinge` (the token
bucket's burst) and :mod:`calibrate.selfcheck`.
The why of each value is in docs/model.md ("How the regimes are measured on real MPI") and
docs/calibrating-a-cluster.md.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_GAP_US",
    "REFERENCE_SIZES",
    "ONEWAY_PASSES",
    "SHM_ROUNDS",
    "SHM_REPS",
    "SELF_CHECK_WARN_PCT",
    "NET_ROUNDS",
    "NET_REPS",
    "NET_BUDGET_US",
    "NET_BUDGET_QUICK_US",
    "QUICK_REPS",
    "NET_GAP_MIN_US",
    "REFILL_SAFETY",
    "NET_MAX_SIZE",
    "MIN_BURST_BYTES",
    "GROUP_TOLERANCE",
    "CPU_TOLERANCE",
    "CPU_PROBE_BYTES",
    "CPU_PROBE_COPIES",
    "RESTED_SEND_MAX_BYTES",
    "FANOUT_SIZES",
    "QUEUED_MAX_BYTES",
    "QUEUED_FINE_UPTO_BYTES",
    "QUEUED_COARSE_STEP_BYTES",
    "QUEUED_STEP_BYTES",
    "STRUCT_FROM_BYTES",
    "ABOVE_BURST_BYTES",
    "SMALL_BYTES",
    "REFILL_IDLE_MAX_US",
    "REDUCE_MIN_BYTES",
    "REDUCE_MAX_BYTES",
    "REDUCE_ROUNDS",
    "REDUCE_REPS",
    "REDUCE_SAMPLE_BYTES",
    "REDUCE_MAX_CALLS",
    "QUIET_POLL_S",
    "BYSTANDER_SLEEP_S",
    "PAIR_BYSTANDER_SLEEP_S",
    "refill_gap_us",
]

# ---- ranks on one host (shared memory) ------------------------------------------------------------------------
#: Idle gap between isolated messages, µs; also the lead of the collectives' common start on shared memory.
DEFAULT_GAP_US = 10.0
#: Sizes (bytes) at which the plain C ping-pong reference is measured in every round.
REFERENCE_SIZES = (8, 1024, 65536, 1 << 20)
#: Sweeps of the one-way sizes per round, spread over the round (at its start, after the common-start one-way,
#: after the overheads, after the native collectives): a sweep costs ~0.1 s on shared memory, and on this machine
#: the one-way time of one size moves 10-15 % between moments a few hundred ms apart; eight sweeps a round bring
#: the self-check's worst miss from ~10 % to under 5 % (docs/model.md, "How the regimes are measured on real MPI").
ONEWAY_PASSES = 8
#: Rounds of a shared-memory calibration without ``--rounds``: ``(with --quick, without)``.
SHM_ROUNDS = (3, 9)
#: Repetitions of one kernel call in one round, messages up to 64 KiB: ``(with --quick, without)``; larger messages
#: take half as many (at least 5): they are long and steady.
SHM_REPS = (11, 51)
#: The self-check warns above this worst miss (%).
SELF_CHECK_WARN_PCT = 10.0

# ---- ranks on several hosts (the network) ---------------------------------------------------------------------
#: Rounds of a network calibration without ``--rounds``: ``(with --quick, without)``.
NET_ROUNDS = (2, 3)
#: Repetitions per size and round on the network: ``(with --quick, without)``; sizes up to 16 KiB take three times
#: as many (cheap, and noisy from scheduling).
NET_REPS = (3, 5)
#: One isolated message may take at most this long (µs) on a pair: larger sizes are not measured there.
NET_BUDGET_US = 40_000.0
#: ... with ``--quick`` (µs).
NET_BUDGET_QUICK_US = 25_000.0
#: Repetitions of each host probe (pairwise slopes, NIC fan-out and fan-in) under ``--quick`` (full: 5 and 9): the
#: median of 3 still tells NICs of 4:1 and 2:1 rates apart, which is what ``--quick`` runs are for (tests, demos).
QUICK_REPS = 3
#: Smallest idle gap between isolated messages on the network (µs).
NET_GAP_MIN_US = 1_000.0
#: The gap after an m-byte message is this many times the measured per-byte cost × m (µs), at least the minimum.
REFILL_SAFETY = 1.5
#: Sizes above this are never measured on the network (bytes).
NET_MAX_SIZE = 1 << 20
#: A fitted token-bucket burst below this (bytes) is taken as no burst at all.
MIN_BURST_BYTES = 512
#: Two hosts' per-byte costs agree (same group) when they differ by at most this fraction, or within their CIs.
GROUP_TOLERANCE = 0.05
#: Two hosts of one NIC group have the same CPU when the slower one's probe takes at most this fraction longer than
#: the faster one's, or the gap is within both medians' confidence intervals (as ranks on one host,
#: :func:`calibrate.calibration.auto_layout`).
CPU_TOLERANCE = 0.25
#: Bytes of the CPU probe's ``memcpy`` (:func:`calibrate.host_probes.measure_cpus`): source and destination stay in the
#: core's caches, so the probe times the core. (A 32 MiB copy timed memory, whose speed differs between processes
#: of one virtual machine: it split two hosts of equal processors in 2 of 5 runs of the test suite, 2026-11-26.)
CPU_PROBE_BYTES = 64 << 10
#: Copies of :data:`CPU_PROBE_BYTES` timed back to back in one repetition of the CPU probe: about 40 ms of one
#: core, many scheduler ticks and CFS periods, so a host whose CPU share is a quota is slowed evenly (the kernel
#: enforces a quota at its tick, 4 ms here: a single copy of a few ms often runs unthrottled).
CPU_PROBE_COPIES = 32768
#: The rested send (:meth:`calibrate.ckernels.Kernels.rested_send`) is timed up to this size (bytes): what it
#: adds to ``S`` comes from the token bucket's burst (a few KiB), the same from a few KiB on.
RESTED_SEND_MAX_BYTES = 65536
#: Struct-datatype sends are probed from this size (bytes): below MPIR_CVAR_GATHER_VSMALL_MSG_SIZE (1 KiB) MPICH's
#: gather copies a relay's blocks together and sends them contiguously.
STRUCT_FROM_BYTES = 1024
#: One-way times at and above this size (bytes) are beyond the token bucket's burst: they give the per-byte cost.
ABOVE_BURST_BYTES = 16384
#: ... and at or below this size (bytes) they give the small-message constant.
SMALL_BYTES = 2048
#: On a network every native repetition timed in C starts after the ranks slept as long as the untimed first run
#: took, up to this (µs): a token bucket the collective drained refills within the time the collective kept its link
#: busy, so every repetition starts with full buckets, as the model's burst term assumes. Back to back, MPICH's
#: 16 KiB bcast on the virtual cluster took 6.4 ms instead of 4.9 ms (docs/model.md). 20 ms refills a tbf burst of
#: 8 KiB down to 3.3 Mbit/s.
REFILL_IDLE_MAX_US = 20000.0
#: A fan-out (rank 0 ``MPI_Send``s to every other rank in turn) is timed at these sizes (bytes) when the job has at
#: least 3 ranks: a message posted behind others waits one round of what they keep queued on the sender's link,
#: which is most of a small message's time (16 KiB at 20 Mbit/s: 6.9 ms; a few packets: ~2 ms), so the queued bytes
#: of the model's round-robin egress (``extensions.network.queued_bytes``) are fitted to it. The 64 and 128 KiB
#: fan-outs see how much a host whose TCP hands its link large segments queues (Linux's defaults: GSO and a 1 MiB
#: ``tcp_limit_output_bytes``; 16 and 32 KiB messages go whole there, and the flat trees at 64-256 KiB were
#: predicted 14 % fast with the least term 32 KiB allows, docs/accuracy.md).
FANOUT_SIZES = (16384, 32768, 65536, 131072)
#: The queued bytes are looked for in 0 .. this (bytes): twice the largest fan-out, so that a fan-out whose messages
#: all went whole is told from one that queued part of its largest ones.
QUEUED_MAX_BYTES = 262144.0
#: ... on a grid of this step (bytes) first, then refined to a byte around the best grid point; from
#: :data:`QUEUED_FINE_UPTO_BYTES` on, of :data:`QUEUED_COARSE_STEP_BYTES` (a few packets either way are a small part
#: of a term that large, and every grid point is one model evaluation per fan-out size).
QUEUED_STEP_BYTES = 256.0
QUEUED_FINE_UPTO_BYTES = 65536.0
QUEUED_COARSE_STEP_BYTES = 2048.0

# ---- the reduction cost γ (calibrate.reducecost) ----------------------------------------------------------------
#: Smallest and largest buffer (bytes) whose combining is timed: a few hundred doubles, up to well beyond the caches
#: (the in-cache and out-of-cache regimes of the fit).
REDUCE_MIN_BYTES = 1024
REDUCE_MAX_BYTES = 4 << 20
#: Rounds over the sizes, per node type: ``(with --quick, without)``; a size's value is the median over rounds.
REDUCE_ROUNDS = (3, 5)
#: Repetitions of one size in one round (µs per call, their median): ``(with --quick, without)``.
REDUCE_REPS = (7, 15)
#: Calls back to back in one repetition: enough to combine this many bytes (tens of µs: the clock's own ~50 ns
#: stays below 0.2 %), at most :data:`REDUCE_MAX_CALLS`.
REDUCE_SAMPLE_BYTES = 1 << 20
REDUCE_MAX_CALLS = 1024

# ---- ranks that wait (sleeping, so that the measuring ranks keep the CPU) -------------------------------------
#: A rank taking part in a Python-timed measurement tests its request between sleeps of this long (s; MPICH's
#: blocking wait spins a core).
QUIET_POLL_S = 30e-6
#: Ranks sitting out a Python-timed measurement test between growing sleeps, from the first to the cap (s): frequent
#: wake-ups delay the measuring ranks' busy periods on a loaded 2-core machine.
BYSTANDER_SLEEP_S = (50e-6, 1e-3)
#: Ranks outside the measured pair of a C kernel (:class:`calibrate.pairkernels.PairKernels`): growing sleeps from the
#: first to the cap (s; 2 cores, 6 ranks: a busy-polling bystander delays the pair's messages by whole time slices).
PAIR_BYSTANDER_SLEEP_S = (1e-4, 2e-3)


def refill_gap_us(k_us_per_byte: float, m: int, gap_min_us: float) -> float:
    """The rule of the idle gap on a network (µs) after an ``m``-byte message: long enough for a token bucket
    drained by the message to refill (``m`` bytes at the measured per-byte cost ``k_us_per_byte``, with
    :data:`REFILL_SAFETY`), never shorter than ``gap_min_us``.

    >>> round(refill_gap_us(0.1, 65536, 1000.0), 2)
    10521.92
    """
    return float(max(gap_min_us, REFILL_SAFETY * k_us_per_byte * m * 1.05 + 200.0))
