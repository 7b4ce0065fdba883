/*
 * hnow_kernels.c — the tight timing loops of hnowmodel's calibration, in C.
 *
 * Built as a shared library with the running MPI installation's own mpicc
 *     mpicc -O2 -shared -fPIC -o libhnowk.so hnow_kernels.c
 * and loaded with ctypes into the running mpi4py process (calibrate/ckernels.py), so Python drives these loops
 * round by round inside one MPI job. Python owns MPI_Init/MPI_Finalize; nothing here initialises MPI.
 *
 * Conventions shared by every kernel
 *   - The communicator is passed as its Fortran handle (comm.py2f() in mpi4py) and turned back with MPI_Comm_f2c.
 *   - Every hk_* function taking a communicator is COLLECTIVE over it: every rank must call it with the same
 *     arguments. Ranks that are not one of the pair (a, b) do no timing; they only take part in the two status
 *     agreements (an MPI_Allreduce after set-up and one at the end), so a kernel returns the same status on every
 *     rank. Those idle ranks wait (busy-poll) inside the final MPI_Allreduce while the pair measures.
 *   - Times come from clock_gettime(CLOCK_MONOTONIC) in ns, written out as microseconds (double). The clock is
 *     shared by all processes on one Linux machine (network namespaces included).
 *   - Raw per-repetition samples go into caller-provided double arrays of length reps; C never summarises
 *     (except the stated per-send / per-round-trip divisions inside one sample).
 *   - Buffers: separate send and receive buffers; aligned != 0 -> page-aligned (posix_memalign 4096, as OSU
 *     allocates them); aligned == 0 -> plain malloc plus a 16-byte offset (never page-aligned; the offsets of
 *     send and receive buffers can be set apart at compile time with -DHK_SEND_OFFSET / -DHK_RECV_OFFSET).
 *     Send buffers are filled with a byte pattern and receive buffers zeroed before timing (so all pages are
 *     touched); after the timed loop every receiver checks the bytes it got and the received counts. All buffers
 *     are freed.
 *   - Gaps and settle times are spent SPINNING on the clock, never sleeping (a core woken from sleep is slow);
 *     the exceptions leave the cores to the other ranks: the idle_us before a repetition and the wait for a
 *     repetition's common start (wait_until: asleep until 0.3 ms before it, then spinning with sched_yield).
 *   - Return value: 0 on success, or a negative HK_E* code (the same on every rank).
 */
#include <mpi.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Bump whenever a signature or the meaning of an output changes (part of the build cache key). */
#define HK_VERSION 11

#define HK_OK 0
#define HK_EARGS (-1)     /* bad arguments (rank out of range, a == b, negative size, reps < 1, ...) */
#define HK_EALLOC (-2)    /* a buffer could not be allocated */
#define HK_EPAYLOAD (-3)  /* a receiver got wrong bytes or a wrong byte count */
#define HK_EOP (-4)       /* unknown collective op */

#define HK_PAGE 4096
#ifndef HK_SEND_OFFSET
#define HK_SEND_OFFSET 16 /* aligned == 0: send buffers start this far past what malloc returned */
#endif
#ifndef HK_RECV_OFFSET
#define HK_RECV_OFFSET 16 /* aligned == 0: receive buffers start this far past what malloc returned */
#endif

int hk_version(void) { return HK_VERSION; }

/* ---------------------------------------------------------------------------------------------------------- */
/* clock                                                                                                      */

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

static inline double ns_to_us(int64_t ns) { return (double)ns / 1e3; }

/* Spin until the clock reaches t_ns; returns the clock value that ended the spin. */
static inline int64_t spin_until(int64_t t_ns) {
    int64_t t = now_ns();
    while (t < t_ns) t = now_ns();
    return t;
}

static inline void spin_us(double us) {
    if (us > 0.0) spin_until(now_ns() + (int64_t)(us * 1e3));
}

/* Wait until CLOCK_MONOTONIC reads t_ns: sleep until HK_WAKE_NS before it, then spin yielding the CPU; returns the
 * clock then. Sleeping and yielding because ranks may be oversubscribed on few cores (7 ranks on 2 in the demo): a
 * rank spinning the whole lead keeps the one due to start off the CPU for a scheduler slice (the demo's fan-out
 * measured 9.5 ms at 16 KiB that way, against 5.0 ms for the same sends from the tree executor, which sleeps). */
#define HK_WAKE_NS 300000LL
static int64_t wait_until(int64_t t_ns) {
    int64_t t = now_ns();
    if (t_ns - t > HK_WAKE_NS) {
        long long ns = (long long)(t_ns - t - HK_WAKE_NS);
        struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
        nanosleep(&ts, NULL);
    }
    for (t = now_ns(); t < t_ns; t = now_ns()) sched_yield();
    return t;
}

/* One repetition's common start (collective on comm): after the warm-up (rep -1), sleep idle_us first - sleep, not
 * spin: the links' token buckets refill while the ranks idle - then a barrier, and root announces an instant lead_us
 * ahead on the shared CLOCK_MONOTONIC; every rank waits for it (wait_until) and returns the clock value then. */
static int64_t rep_start(MPI_Comm comm, int root, int rank, int rep, double lead_us, double idle_us) {
    if (idle_us > 0.0 && rep >= 0) {
        long long ns = (long long)(idle_us * 1e3);
        struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
        nanosleep(&ts, NULL);
    }
    MPI_Barrier(comm);
    int64_t start = 0;
    if (rank == root) start = now_ns() + (int64_t)(lead_us * 1e3);
    MPI_Bcast(&start, 1, MPI_INT64_T, root, comm);
    return wait_until(start);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* buffers                                                                                                    */

typedef struct {
    void *base; /* what to free */
    unsigned char *p; /* where the data live */
} hk_buf;

/* Allocate n bytes (at least 1): page-aligned, or malloc + off bytes (moved on by another off if that would land
 * on a page boundary, so an unaligned buffer is never page-aligned). */
static int buf_alloc_off(hk_buf *b, size_t n, int aligned, size_t off) {
    b->base = NULL;
    b->p = NULL;
    if (n == 0) n = 1;
    if (aligned) {
        if (posix_memalign(&b->base, HK_PAGE, n) != 0) return HK_EALLOC;
        b->p = (unsigned char *)b->base;
    } else {
        b->base = malloc(n + 2 * off);
        if (!b->base) return HK_EALLOC;
        if ((((uintptr_t)b->base + off) % HK_PAGE) == 0) off *= 2;
        b->p = (unsigned char *)b->base + off;
    }
    return HK_OK;
}

static int buf_alloc(hk_buf *b, size_t n, int aligned) { return buf_alloc_off(b, n, aligned, HK_SEND_OFFSET); }
static int rbuf_alloc(hk_buf *b, size_t n, int aligned) { return buf_alloc_off(b, n, aligned, HK_RECV_OFFSET); }

static void buf_free(hk_buf *b) {
    free(b->base);
    b->base = NULL;
    b->p = NULL;
}

static inline unsigned char pattern_byte(long j, int seed) {
    return (unsigned char)((j * 131 + seed * 17 + 7) & 0xff);
}

static void fill_pattern(unsigned char *p, long n, int seed) {
    for (long j = 0; j < n; j++) p[j] = pattern_byte(j, seed);
}

/* 0 when p[0..n) holds the pattern of `seed`, HK_EPAYLOAD otherwise. Exported so tests can check the checker. */
int hk_verify(const unsigned char *p, long n, int seed) {
    for (long j = 0; j < n; j++)
        if (p[j] != pattern_byte(j, seed)) return HK_EPAYLOAD;
    return HK_OK;
}

static int check_count(const MPI_Status *st, long m) {
    int got = -1;
    MPI_Get_count(st, MPI_BYTE, &got);
    return got == m ? HK_OK : HK_EPAYLOAD;
}

/* Make every rank return the same status: the most negative one. Also the final synchronisation point. */
static int agree(MPI_Comm comm, int rc) {
    int all = rc;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

static int pair_args_ok(MPI_Comm comm, int a, int b, long m, int reps) {
    int size;
    MPI_Comm_size(comm, &size);
    if (a < 0 || b < 0 || a >= size || b >= size || a == b) return 0;
    if (m < 0 || m > INT_MAX || reps < 1) return 0;
    return 1;
}

#define TAG_DATA 4711
#define TAG_ACK 4712
#define TAG_SYNC 4713

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_oneway: one-way time from an isolated message and a 0-byte acknowledgement.                            */
/*                                                                                                            */
/* Per repetition: both a and b spin gap_us; a sends m bytes (its send buffer) to b; b receives them into its  */
/* receive buffer and answers with a 0-byte message; out[i] = a's time from before the send to after the       */
/* acknowledgement (µs). One untimed repetition first. With m = 0 this is the 0-byte round trip; the caller     */
/* takes T(m) = rtt(m) - rtt(0)/2. out is written on rank a only.                                              */
int hk_oneway(int comm_f, int a, int b, long m, int reps, double gap_us, int aligned, double *out) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)comm_f);
    int rank, rc = HK_OK;
    MPI_Comm_rank(comm, &rank);
    if (!pair_args_ok(comm, a, b, m, reps)) return agree(comm, HK_EARGS);
    hk_buf buf = {0};
    if (rank == a || rank == b) {
        rc = rank == a ? buf_alloc(&buf, (size_t)m, aligned) : rbuf_alloc(&buf, (size_t)m, aligned);
        if (rc == HK_OK) {
            if (rank == a) fill_pattern(buf.p, m, a);
            else memset(buf.p, 0, (size_t)(m ? m : 1));
        }
    }
    rc = agree(comm, rc);
    if (rc != HK_OK) {
        buf_free(&buf);
        return rc;
    }
    char ack = 0;
    MPI_Status st;
    if (rank == a) {
        for (int i = -1; i < reps; i++) {
            spin_us(gap_us);
            int64_t t0 = now_ns();
            MPI_Send(buf.p, (int)m, MPI_BYTE, b, TAG_DATA, comm);
            MPI_Recv(&ack, 0, MPI_BYTE, b, TAG_ACK, comm, MPI_STATUS_IGNORE);
            int64_t t1 = now_ns();
            if (i >= 0) out[i] = ns_to_us(t1 - t0);
        }
    } else if (rank == b) {
        for (int i = -1; i < reps; i++) {
            spin_us(gap_us);
            MPI_Recv(buf.p, (int)m, MPI_BYTE, a, TAG_DATA, comm, &st);
            MPI_Send(&ack, 0, MPI_BYTE, a, TAG_ACK, comm);
        }
        rc = check_count(&st, m);
        if (rc == HK_OK) rc = hk_verify(buf.p, m, a);
    }
    buf_free(&buf);
    return agree(comm, rc);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_pingpong: the classic OSU-style ping-pong.                                                               */
/*                                                                                                            */
/* a sends m bytes from its send buffer, b receives into its receive buffer and sends m bytes back from its OWN */
/* send buffer (no echo of what it received); `batch` back-to-back round trips per sample; out[i] = half the   */
/* mean round trip of sample i (µs), on rank a. One untimed batch first.                                        */
int hk_pingpong(int comm_f, int a, int b, long m, int reps, int batch, int aligned, double *out) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)comm_f);
    int rank, rc = HK_OK;
    MPI_Comm_rank(comm, &rank);
    if (!pair_args_ok(comm, a, b, m, reps) || batch < 1) return agree(comm, HK_EARGS);
    hk_buf sb = {0}, rb = {0};
    if (rank == a || rank == b) {
        rc = buf_alloc(&sb, (size_t)m, aligned);
        if (rc == HK_OK) rc = rbuf_alloc(&rb, (size_t)m, aligned);
        if (rc == HK_OK) {
            fill_pattern(sb.p, m, rank);
            memset(rb.p, 0, (size_t)(m ? m : 1));
        }
    }
    rc = agree(comm, rc);
    if (rc != HK_OK) {
        buf_free(&sb);
        buf_free(&rb);
        return rc;
    }
    MPI_Status st;
    if (rank == a) {
        for (int i = -1; i < reps; i++) {
            int64_t t0 = now_ns();
            for (int k = 0; k < batch; k++) {
                MPI_Send(sb.p, (int)m, MPI_BYTE, b, TAG_DATA, comm);
                MPI_Recv(rb.p, (int)m, MPI_BYTE, b, TAG_DATA, comm, &st);
            }
            int64_t t1 = now_ns();
            if (i >= 0) out[i] = ns_to_us(t1 - t0) / (2.0 * batch);
        }
    } else if (rank == b) {
        for (int i = -1; i < reps; i++) {
            for (int k = 0; k < batch; k++) {
                MPI_Recv(rb.p, (int)m, MPI_BYTE, a, TAG_DATA, comm, &st);
                MPI_Send(sb.p, (int)m, MPI_BYTE, a, TAG_DATA, comm);
            }
        }
    }
    if (rank == a || rank == b) {
        rc = check_count(&st, m);
        if (rc == HK_OK) rc = hk_verify(rb.p, m, rank == a ? b : a);
    }
    buf_free(&sb);
    buf_free(&rb);
    return agree(comm, rc);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_sends: consecutive sends (the paper's §2.1 experiment for the send overhead S).                          */
/*                                                                                                            */
/* Per repetition: b posts `count` MPI_Irecv (into `count` separate m-byte slots of one receive buffer, since   */
/* pending receives must not share memory), then sends a 0-byte "ready" to a; a receives it, then times        */
/* `count` back-to-back MPI_Send of m bytes from one send buffer; out[i] = a's elapsed time / count (µs per     */
/* send), on rank a. b completes its receives (MPI_Waitall) before the next "ready". One untimed repetition     */
/* first. Memory at b: count * m bytes.                                                                         */
int hk_sends(int comm_f, int a, int b, long m, int count, int reps, int aligned, double *out) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)comm_f);
    int rank, rc = HK_OK;
    MPI_Comm_rank(comm, &rank);
    if (!pair_args_ok(comm, a, b, m, reps) || count < 1) return agree(comm, HK_EARGS);
    hk_buf buf = {0};
    MPI_Request *req = NULL;
    MPI_Status *sts = NULL;
    if (rank == a) {
        rc = buf_alloc(&buf, (size_t)m, aligned);
        if (rc == HK_OK) fill_pattern(buf.p, m, a);
    } else if (rank == b) {
        rc = rbuf_alloc(&buf, (size_t)m * (size_t)count, aligned);
        req = malloc(sizeof(MPI_Request) * (size_t)count);
        sts = malloc(sizeof(MPI_Status) * (size_t)count);
        if (rc == HK_OK && (!req || !sts)) rc = HK_EALLOC;
        if (rc == HK_OK) memset(buf.p, 0, m * count > 0 ? (size_t)m * (size_t)count : 1);
    }
    rc = agree(comm, rc);
    if (rc != HK_OK) {
        buf_free(&buf);
        free(req);
        free(sts);
        return rc;
    }
    char ready = 0;
    if (rank == a) {
        for (int i = -1; i < reps; i++) {
            MPI_Recv(&ready, 0, MPI_BYTE, b, TAG_SYNC, comm, MPI_STATUS_IGNORE);
            int64_t t0 = now_ns();
            for (int k = 0; k < count; k++) MPI_Send(buf.p, (int)m, MPI_BYTE, b, TAG_DATA, comm);
            int64_t t1 = now_ns();
            if (i >= 0) out[i] = ns_to_us(t1 - t0) / count;
        }
    } else if (rank == b) {
        for (int i = -1; i < reps; i++) {
            for (int k = 0; k < count; k++)
                MPI_Irecv(buf.p + (size_t)k * (size_t)m, (int)m, MPI_BYTE, a, TAG_DATA, comm, &req[k]);
            MPI_Send(&ready, 0, MPI_BYTE, a, TAG_SYNC, comm);
            MPI_Waitall(count, req, sts);
        }
        for (int k = 0; k < count && rc == HK_OK; k++) {
            rc = check_count(&sts[k], m);
            if (rc == HK_OK) rc = hk_verify(buf.p + (size_t)k * (size_t)m, m, a);
        }
    }
    buf_free(&buf);
    free(req);
    free(sts);
    return agree(comm, rc);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_recv: receive overhead of a message that has already arrived.                                           */
/*                                                                                                            */
/* Per repetition: b sends a 0-byte "go" to a and then SPINS settle_us; a receives "go" and sends m bytes; after */
/* the spin b times MPI_Recv alone; out[i] = that receive time (µs), on rank b. (Above the eager limit the      */
/* receive includes the receiver-side copy of the rendezvous protocol, which is receive work.) One untimed      */
/* repetition first. settle_us must exceed the time the message takes to arrive.                               */
int hk_recv(int comm_f, int a, int b, long m, int reps, double settle_us, int aligned, double *out) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)comm_f);
    int rank, rc = HK_OK;
    MPI_Comm_rank(comm, &rank);
    if (!pair_args_ok(comm, a, b, m, reps)) return agree(comm, HK_EARGS);
    hk_buf buf = {0};
    if (rank == a || rank == b) {
        rc = rank == a ? buf_alloc(&buf, (size_t)m, aligned) : rbuf_alloc(&buf, (size_t)m, aligned);
        if (rc == HK_OK) {
            if (rank == a) fill_pattern(buf.p, m, a);
            else memset(buf.p, 0, (size_t)(m ? m : 1));
        }
    }
    rc = agree(comm, rc);
    if (rc != HK_OK) {
        buf_free(&buf);
        return rc;
    }
    char go = 0;
    MPI_Status st;
    if (rank == a) {
        for (int i = -1; i < reps; i++) {
            MPI_Recv(&go, 0, MPI_BYTE, b, TAG_SYNC, comm, MPI_STATUS_IGNORE);
            MPI_Send(buf.p, (int)m, MPI_BYTE, b, TAG_DATA, comm);
        }
    } else if (rank == b) {
        for (int i = -1; i < reps; i++) {
            MPI_Send(&go, 0, MPI_BYTE, a, TAG_SYNC, comm);
            spin_us(settle_us);
            int64_t t0 = now_ns();
            MPI_Recv(buf.p, (int)m, MPI_BYTE, a, TAG_DATA, comm, &st);
            int64_t t1 = now_ns();
            if (i >= 0) out[i] = ns_to_us(t1 - t0);
        }
        rc = check_count(&st, m);
        if (rc == HK_OK) rc = hk_verify(buf.p, m, a);
    }
    buf_free(&buf);
    return agree(comm, rc);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_coll: a native collective timed with a COMMON START on the shared clock.                                 */
/*                                                                                                            */
/* op 0 = MPI_Bcast of m bytes from root; op 1 = MPI_Scatter, op 2 = MPI_Gather, m bytes (MPI_BYTE) per rank;   */
/* op 3 = one point-to-point message of m bytes, MPI_Send from root to rank (root + 1) % size, MPI_Recv there    */
/* (the other ranks take part in the start only): the one-way time under the collectives' own timing style;    */
/* op 4 = a fan-out: the root MPI_Sends m bytes to every other rank in turn, (root + 1) % size first, each rank  */
/* MPI_Recvs it (the sequential tree's broadcast, the library's point-to-point sends as the tree executor's).   */
/* Per repetition: (timed ones only) sleep idle_us, 0 = not at all; MPI_Barrier; root picks start = now + lead_us */
/* and broadcasts it (a small MPI_Bcast, before the instant); every rank spins until start, calls the collective */
/* once and reads the clock.                                                                                   */
/*   out_start[i]  = the clock value that ended this rank's spin (µs, absolute CLOCK_MONOTONIC): within a few   */
/*                   tens of ns of the common instant when the rank was on time, later when the broadcast of   */
/*                   the instant reached it after the instant (lead_us too small) — the caller can detect that. */
/*   out_finish[i] = this rank's clock when its collective call returned (µs, absolute).                         */
/* Completion of repetition i = max over ranks of out_finish[i] - min over ranks of out_start[i] (caller).      */
/* One untimed repetition first. Root's scatter send / gather receive buffer is size * m bytes; the root's own */
/* block is copied by the library (no MPI_IN_PLACE), as in the model.                                            */
int hk_coll(int comm_f, int op, int root, long m, int reps, double lead_us, double idle_us, int aligned,
            double *out_start, double *out_finish) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)comm_f);
    int rank, size, rc = HK_OK;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (root < 0 || root >= size || m < 0 || m > INT_MAX || reps < 1 || lead_us < 0.0) return agree(comm, HK_EARGS);
    if (op < 0 || op > 4) return agree(comm, HK_EOP);
    hk_buf sb = {0}, rb = {0};
    size_t nm = (size_t)m * (size_t)size;
    int peer = (root + 1) % size;
    if (op == 0 || op == 3 || op == 4) {
        rc = rank == root ? buf_alloc(&sb, (size_t)m, aligned) : rbuf_alloc(&sb, (size_t)m, aligned);
        if (rc == HK_OK) {
            if (rank == root) fill_pattern(sb.p, m, root);
            else memset(sb.p, 0, (size_t)(m ? m : 1));
        }
    } else if (op == 1) { /* scatter: root sends size blocks, block r seeded with r */
        rc = rbuf_alloc(&rb, (size_t)m, aligned);
        if (rc == HK_OK && rank == root) rc = buf_alloc(&sb, nm, aligned);
        if (rc == HK_OK) {
            memset(rb.p, 0, (size_t)(m ? m : 1));
            if (rank == root)
                for (int r = 0; r < size; r++) fill_pattern(sb.p + (size_t)r * (size_t)m, m, r);
        }
    } else { /* gather: every rank sends its block seeded with its rank */
        rc = buf_alloc(&sb, (size_t)m, aligned);
        if (rc == HK_OK && rank == root) rc = rbuf_alloc(&rb, nm, aligned);
        if (rc == HK_OK) {
            fill_pattern(sb.p, m, rank);
            if (rank == root) memset(rb.p, 0, nm ? nm : 1);
        }
    }
    rc = agree(comm, rc);
    if (rc != HK_OK) {
        buf_free(&sb);
        buf_free(&rb);
        return rc;
    }
    for (int i = -1; i < reps; i++) {
        int64_t t0 = rep_start(comm, root, rank, i, lead_us, idle_us);
        if (op == 0)
            MPI_Bcast(sb.p, (int)m, MPI_BYTE, root, comm);
        else if (op == 3) {
            if (rank == root)
                MPI_Send(sb.p, (int)m, MPI_BYTE, peer, TAG_DATA, comm);
            else if (rank == peer)
                MPI_Recv(sb.p, (int)m, MPI_BYTE, root, TAG_DATA, comm, MPI_STATUS_IGNORE);
        } else if (op == 4) {
            if (rank == root)
                for (int k = 1; k < size; k++) MPI_Send(sb.p, (int)m, MPI_BYTE, (root + k) % size, TAG_DATA, comm);
            else
                MPI_Recv(sb.p, (int)m, MPI_BYTE, root, TAG_DATA, comm, MPI_STATUS_IGNORE);
        } else if (op == 1)
            MPI_Scatter(sb.p, (int)m, MPI_BYTE, rb.p, (int)m, MPI_BYTE, root, comm);
        else
            MPI_Gather(sb.p, (int)m, MPI_BYTE, rb.p, (int)m, MPI_BYTE, root, comm);
        int64_t t1 = now_ns();
        if (i >= 0) {
            out_start[i] = ns_to_us(t0);
            out_finish[i] = ns_to_us(t1);
        }
    }
    if (((op == 0 || op == 4) && rank != root) || (op == 3 && rank == peer)) rc = hk_verify(sb.p, m, root);
    if (op == 1) rc = hk_verify(rb.p, m, rank);
    if (op == 2 && rank == root)
        for (int r = 0; r < size && rc == HK_OK; r++) rc = hk_verify(rb.p + (size_t)r * (size_t)m, m, r);
    buf_free(&sb);
    buf_free(&rb);
    return agree(comm, rc);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_flows: concurrent flows to or from one rank, timed with a COMMON START on the shared clock (a NIC's         */
/* capacity: all of a host's flows share it).                                                                 */
/*                                                                                                            */
/* sizes[r] = bytes between root and rank r (0: rank r takes part in the start only; sizes[root] is ignored).   */
/* dir 0 = fan-out: the root posts MPI_Isend of sizes[r] bytes to every rank r with sizes[r] > 0, in rank order */
/* starting at root + 1, then MPI_Waitall; each such rank MPI_Recvs its message. dir 1 = fan-in: the root posts */
/* MPI_Irecv from every such rank, then MPI_Waitall; each of them MPI_Sends its sizes[r] bytes to the root.     */
/* All flows are in the network at once (nothing waits for another message), so a host's NIC carries them      */
/* together. late_us > 0: the LAST flow in that order (rank root - 1, or the last with sizes > 0) starts late_us */
/* after the others (the root progresses the others meanwhile, MPI_Testall), so that it meets them running.     */
/*  Per repetition as hk_coll: sleep idle_us (the buckets refill), MPI_Barrier, the root broadcasts    */
/* start = now + lead_us, every rank spins until it, runs its part, reads the clock.                           */
/*   out_start[i], out_finish[i]: this rank's spin end and finish (µs, absolute CLOCK_MONOTONIC). A receiver's  */
/*   finish is when its message had fully arrived.                                                            */
/* One untimed repetition first. Every received message is checked (bytes and count).                         */
int hk_flows(int comm_f, int dir, int root, const long *sizes, double late_us, int reps, double lead_us,
             double idle_us, double *out_start, double *out_finish) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)comm_f);
    int rank, size, rc = HK_OK;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (root < 0 || root >= size || reps < 1 || lead_us < 0.0 || (dir != 0 && dir != 1)) return agree(comm, HK_EARGS);
    for (int r = 0; r < size; r++)
        if (sizes[r] < 0 || sizes[r] > INT_MAX) return agree(comm, HK_EARGS);
    hk_buf *bufs = calloc((size_t)size, sizeof(hk_buf));
    MPI_Request *reqs = calloc((size_t)size, sizeof(MPI_Request));
    MPI_Status *sts = calloc((size_t)size, sizeof(MPI_Status));
    if (!bufs || !reqs || !sts) rc = HK_EALLOC;
    /* root: one buffer per peer (a send buffer seeded with the peer's rank, or a receive buffer); peer: its own */
    for (int r = 0; r < size && rc == HK_OK; r++) {
        if (r == root || sizes[r] == 0 || (rank != root && rank != r)) continue;
        int sends = (dir == 0) == (rank == root);
        rc = sends ? buf_alloc(&bufs[r], (size_t)sizes[r], 1) : rbuf_alloc(&bufs[r], (size_t)sizes[r], 1);
        if (rc == HK_OK) {
            if (sends) fill_pattern(bufs[r].p, sizes[r], r);
            else memset(bufs[r].p, 0, (size_t)sizes[r]);
        }
    }
    rc = agree(comm, rc);
    int ready = rc == HK_OK; /* a failed count check below is remembered in rc; the repetitions go on */
    for (int i = -1; i < reps && ready; i++) {
        int64_t t0 = rep_start(comm, root, rank, i, lead_us, idle_us);
        int last = -1;
        for (int k = 1; k < size; k++)
            if (sizes[(root + k) % size] > 0) last = (root + k) % size;
        if (rank == root) {
            int n = 0;
            for (int k = 1; k < size; k++) {
                int r = (root + k) % size;
                if (sizes[r] == 0) continue;
                if (r == last && late_us > 0.0) { /* progress the flows already posted until the late start */
                    int64_t at = t0 + (int64_t)(late_us * 1e3);
                    int flag;
                    while (now_ns() < at) MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
                }
                if (dir == 0)
                    MPI_Isend(bufs[r].p, (int)sizes[r], MPI_BYTE, r, TAG_DATA, comm, &reqs[n++]);
                else
                    MPI_Irecv(bufs[r].p, (int)sizes[r], MPI_BYTE, r, TAG_DATA, comm, &reqs[n++]);
            }
            MPI_Waitall(n, reqs, sts);
            if (dir == 1)
                for (int j = 0; j < n; j++)
                    if (check_count(&sts[j], sizes[sts[j].MPI_SOURCE]) != HK_OK) rc = HK_EPAYLOAD;
        } else if (sizes[rank] > 0) {
            if (dir == 0) {
                MPI_Recv(bufs[rank].p, (int)sizes[rank], MPI_BYTE, root, TAG_DATA, comm, &sts[0]);
                if (check_count(&sts[0], sizes[rank]) != HK_OK) rc = HK_EPAYLOAD;
            } else {
                if (rank == last && late_us > 0.0) spin_until(t0 + (int64_t)(late_us * 1e3));
                MPI_Send(bufs[rank].p, (int)sizes[rank], MPI_BYTE, root, TAG_DATA, comm);
            }
        }
        int64_t t1 = now_ns();
        if (i >= 0) {
            out_start[i] = ns_to_us(t0);
            out_finish[i] = ns_to_us(t1);
        }
    }
    if (rc == HK_OK) {
        if (dir == 0 && rank != root && sizes[rank] > 0) rc = hk_verify(bufs[rank].p, sizes[rank], rank);
        if (dir == 1 && rank == root)
            for (int r = 0; r < size && rc == HK_OK; r++)
                if (r != root && sizes[r] > 0) rc = hk_verify(bufs[r].p, sizes[r], r);
    }
    if (bufs)
        for (int r = 0; r < size; r++) buf_free(&bufs[r]);
    free(bufs);
    free(reqs);
    free(sts);
    return agree(comm, rc);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_flowlist: an explicit list of concurrent flows, flow f = bytes[f] from rank src[f] to rank dst[f], all with */
/* ONE common start (several senders on one host fill its NIC together: each (src, dst) pair is a connection of  */
/* its own, and a NIC shares its bytes per connection).                                                        */
/*   Per repetition as hk_flows: sleep idle_us, MPI_Barrier, rank 0 broadcasts start = now + lead_us, every rank  */
/* spins until it, then posts MPI_Irecv for every flow it receives, then MPI_Isend for every flow it sends, both  */
/* in list order (a flow later in the list is posted later by its sender), and MPI_Waitall.                    */
/*   out_start[i], out_finish[i]: this rank's spin end and the end of its last own flow (µs, absolute            */
/* CLOCK_MONOTONIC); a rank that only receives finishes when its messages had fully arrived; a rank in no flow   */
/* takes part in the start only.                                                                              */
/*   Refused (HK_EARGS, on every rank): nflows < 1, a rank out of range, src == dst, bytes < 0 or > INT_MAX,     */
/* reps < 1, lead_us < 0. Flow f's bytes are seeded with f; every received message is checked (bytes, count).   */
/* One untimed repetition first.                                                                              */
int hk_flowlist(int comm_f, int nflows, const int *src, const int *dst, const long *bytes, int reps, double lead_us,
                double idle_us, double *out_start, double *out_finish) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)comm_f);
    int rank, size, rc = HK_OK;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (nflows < 1 || reps < 1 || lead_us < 0.0) return agree(comm, HK_EARGS);
    for (int f = 0; f < nflows; f++)
        if (src[f] < 0 || src[f] >= size || dst[f] < 0 || dst[f] >= size || src[f] == dst[f] || bytes[f] < 0 ||
            bytes[f] > INT_MAX)
            return agree(comm, HK_EARGS);
    hk_buf *bufs = calloc((size_t)nflows, sizeof(hk_buf));
    MPI_Request *reqs = calloc((size_t)nflows, sizeof(MPI_Request));
    MPI_Status *sts = calloc((size_t)nflows, sizeof(MPI_Status));
    int *mine = calloc((size_t)nflows, sizeof(int)); /* this rank's flows: receives first, then sends */
    if (!bufs || !reqs || !sts || !mine) rc = HK_EALLOC;
    int n = 0, nrecv = 0;
    for (int pass = 0; pass < 2 && rc == HK_OK; pass++)
        for (int f = 0; f < nflows && rc == HK_OK; f++) {
            if ((pass == 0 ? dst[f] : src[f]) != rank) continue;
            mine[n++] = f;
            if (pass == 0) {
                nrecv++;
                rc = rbuf_alloc(&bufs[f], (size_t)bytes[f], 1);
                if (rc == HK_OK) memset(bufs[f].p, 0, (size_t)(bytes[f] ? bytes[f] : 1));
            } else {
                rc = buf_alloc(&bufs[f], (size_t)bytes[f], 1);
                if (rc == HK_OK) fill_pattern(bufs[f].p, bytes[f], f);
            }
        }
    rc = agree(comm, rc);
    int ready = rc == HK_OK; /* a failed count check below is remembered in rc; the repetitions go on */
    for (int i = -1; i < reps && ready; i++) {
        int64_t t0 = rep_start(comm, 0, rank, i, lead_us, idle_us);
        for (int j = 0; j < n; j++) {
            int f = mine[j];
            if (j < nrecv)
                MPI_Irecv(bufs[f].p, (int)bytes[f], MPI_BYTE, src[f], TAG_DATA, comm, &reqs[j]);
            else
                MPI_Isend(bufs[f].p, (int)bytes[f], MPI_BYTE, dst[f], TAG_DATA, comm, &reqs[j]);
        }
        MPI_Waitall(n, reqs, sts);
        int64_t t1 = now_ns();
        for (int j = 0; j < nrecv; j++)
            if (check_count(&sts[j], bytes[mine[j]]) != HK_OK) rc = HK_EPAYLOAD;
        if (i >= 0) {
            out_start[i] = ns_to_us(t0);
            out_finish[i] = ns_to_us(t1);
        }
    }
    for (int j = 0; j < nrecv && rc == HK_OK && ready; j++) rc = hk_verify(bufs[mine[j]].p, bytes[mine[j]], mine[j]);
    if (bufs)
        for (int f = 0; f < nflows; f++) buf_free(&bufs[f]);
    free(bufs);
    free(reqs);
    free(sts);
    free(mine);
    return agree(comm, rc);
}

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_copy: a local memory copy of m bytes between two separate buffers (the root's own block in MPICH's       */
/* binomial scatter and gather). Not collective: any rank may call it. out[i] = one memcpy (µs), one untimed   */
/* copy first. Successive repetitions walk a ring of `ring` bytes (at least 2 blocks; allocated and filled once  */
/* per process and reused), so each copy is as cold as it is inside a collective whose working set is `ring`    */
/* bytes: the caller passes (ranks + 1) * m for a root that holds every rank's block plus its own receive        */
/* buffer. The copied bytes are checked against their source.                                                  */
static unsigned char *ring_src = NULL, *ring_dst = NULL;
static size_t ring_len = 0;

static int ring_reserve(size_t need) {
    if (need <= ring_len) return HK_OK;
    free(ring_src);
    free(ring_dst);
    ring_src = ring_dst = NULL;
    ring_len = 0;
    void *a = NULL, *b = NULL;
    if (posix_memalign(&a, HK_PAGE, need) != 0) return HK_EALLOC;
    if (posix_memalign(&b, HK_PAGE, need) != 0) {
        free(a);
        return HK_EALLOC;
    }
    ring_src = a;
    ring_dst = b;
    ring_len = need;
    fill_pattern(ring_src, (long)need, 3);
    memset(ring_dst, 0, need);
    return HK_OK;
}

int hk_copy(long m, long ring, int reps, int aligned, double *out) {
    if (m < 0 || ring < 0 || reps < 1) return HK_EARGS;
    size_t stride = (size_t)(m > 0 ? m : 1);
    stride = aligned ? (stride + HK_PAGE - 1) / HK_PAGE * HK_PAGE : stride + 16;
    size_t slots = (size_t)ring / stride;
    if (slots < 2) slots = 2;
    if (ring_reserve(slots * stride + stride) != HK_OK) return HK_EALLOC;
    size_t k = 0, off = aligned ? 0 : 16;
    for (int i = -1; i < reps; i++, k = (k + 1) % slots) {
        unsigned char *d = ring_dst + k * stride + off, *s = ring_src + k * stride + off;
        int64_t t0 = now_ns();
        memcpy(d, s, (size_t)m);
        int64_t t1 = now_ns();
        if (i >= 0) out[i] = ns_to_us(t1 - t0);
        if (m > 0 && memcmp(d, s, (size_t)m) != 0) return HK_EPAYLOAD;
    }
    return HK_OK;
}

/* hk_cpu: the processor's speed, for telling hosts apart by CPU. out[i] = µs per memcpy of m bytes between two */
/* page-aligned buffers of m bytes (small enough to stay in the core's caches, so the copy times the core and  */
/* not memory, whose speed differs from process to process on a virtual machine), over `copies` copies back to */
/* back: tens of ms, many scheduler ticks and CFS periods, so a CPU quota slows it evenly (a single copy of a   */
/* few ms often runs unthrottled: the quota is enforced at the tick). One untimed run of 16 copies first. The   */
/* copied bytes are checked against their source.                                                              */
int hk_cpu(long m, long copies, int reps, double *out) {
    if (m < 1 || copies < 1 || reps < 1) return HK_EARGS;
    hk_buf src = {0}, dst = {0};
    int rc = buf_alloc(&src, (size_t)m, 1);
    if (rc == HK_OK) rc = buf_alloc(&dst, (size_t)m, 1);
    if (rc == HK_OK) {
        fill_pattern(src.p, m, 5);
        memset(dst.p, 0, (size_t)m);
        for (int i = -1; i < reps; i++) {
            long n = i < 0 ? 16 : copies;
            int64_t t0 = now_ns();
            for (long c = 0; c < n; c++) {
                memcpy(dst.p, src.p, (size_t)m);
                __asm__ volatile("" ::: "memory"); /* every copy is done: none is merged away */
            }
            int64_t t1 = now_ns();
            if (i >= 0) out[i] = ns_to_us(t1 - t0) / (double)copies;
        }
        rc = memcmp(dst.p, src.p, (size_t)m) == 0 ? HK_OK : HK_EPAYLOAD;
    }
    buf_free(&src);
    buf_free(&dst);
    return rc;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_reduce: what combining two buffers costs this rank, the compute part of a reduction (gamma).            */
/*                                                                                                            */
/* MPI_Reduce_local(in, inout, m / sizeof(type), type, op) on two separate page-aligned buffers of m bytes,   */
/* `calls` calls back to back per repetition: out[i] = µs per call. One untimed repetition first. The buffers */
/* are reused from call to call, as a reduction's accumulator and incoming block are: they stay in the caches */
/* while 2m bytes fit, and stream from memory beyond (the in-cache and out-of-cache regimes of the fit). Not  */
/* collective: any rank may call it (the calibration runs one rank at a time while the others sleep).         */
/* op: 0 MPI_SUM, 1 MPI_MAX, 2 MPI_MIN, 3 MPI_PROD; dtype: 0 MPI_DOUBLE, 1 MPI_FLOAT, 2 MPI_INT, 3 MPI_LONG;  */
/* m must be a multiple of the type's size. in holds ones, inout zeros: after N calls every element of inout  */
/* is N (sum), 1 (max), 0 (min, prod), small whole numbers every type holds exactly, which is checked.        */
static double reduce_elem(const void *p, int dtype, long j) {
    switch (dtype) {
        case 0: return ((const double *)p)[j];
        case 1: return (double)((const float *)p)[j];
        case 2: return (double)((const int *)p)[j];
        default: return (double)((const long *)p)[j];
    }
}

static void reduce_fill(void *p, int dtype, long n, int v) {
    for (long j = 0; j < n; j++) {
        switch (dtype) {
            case 0: ((double *)p)[j] = v; break;
            case 1: ((float *)p)[j] = (float)v; break;
            case 2: ((int *)p)[j] = v; break;
            default: ((long *)p)[j] = v; break;
        }
    }
}

int hk_reduce(long m, int op, int dtype, long calls, int reps, double *out) {
    static const size_t width[] = {sizeof(double), sizeof(float), sizeof(int), sizeof(long)};
    if (op < 0 || op > 3) return HK_EOP;
    if (dtype < 0 || dtype > 3 || m < 1 || calls < 1 || reps < 1 || m % (long)width[dtype] != 0) return HK_EARGS;
    if (m / (long)width[dtype] > INT_MAX) return HK_EARGS;
    MPI_Op ops[] = {MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD};
    MPI_Datatype types[] = {MPI_DOUBLE, MPI_FLOAT, MPI_INT, MPI_LONG};
    int count = (int)(m / (long)width[dtype]);
    hk_buf in = {0}, io = {0};
    int rc = buf_alloc(&in, (size_t)m, 1);
    if (rc == HK_OK) rc = buf_alloc(&io, (size_t)m, 1);
    if (rc == HK_OK) {
        reduce_fill(in.p, dtype, count, 1);
        reduce_fill(io.p, dtype, count, 0);
        long done = 0;
        for (int i = -1; i < reps; i++) {
            int64_t t0 = now_ns();
            for (long c = 0; c < calls; c++) MPI_Reduce_local(in.p, io.p, count, types[dtype], ops[op]);
            int64_t t1 = now_ns();
            done += calls;
            if (i >= 0) out[i] = ns_to_us(t1 - t0) / (double)calls;
        }
        double want = op == 0 ? (double)done : op == 1 ? 1.0 : 0.0;
        for (long j = 0; j < count && rc == HK_OK; j++)
            if (reduce_elem(io.p, dtype, j) != want) rc = HK_EPAYLOAD;
    }
    buf_free(&in);
    buf_free(&io);
    return rc;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* hk_late: does a send of m bytes wait for the receive to be posted (rendezvous) or not (eager)?             */
/*                                                                                                            */
/* Per repetition: b sends a 0-byte "go" to a, then spins delay_us before posting its receive; a receives the  */
/* go and at once sends m bytes, timing MPI_Send alone. out[i] = that send's duration at a (µs): about S for an */
/* eager send, at least delay_us minus a 0-byte latency for a rendezvous send. out is written on rank a only.   */
int hk_late(int comm_f, int a, int b, long m, int reps, double delay_us, int aligned, double *out) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)comm_f);
    int rank, rc = HK_OK;
    MPI_Comm_rank(comm, &rank);
    if (!pair_args_ok(comm, a, b, m, reps) || delay_us < 0) return agree(comm, HK_EARGS);
    hk_buf buf = {0};
    if (rank == a || rank == b) {
        rc = rank == a ? buf_alloc(&buf, (size_t)m, aligned) : rbuf_alloc(&buf, (size_t)m, aligned);
        if (rc == HK_OK) {
            if (rank == a) fill_pattern(buf.p, m, a);
            else memset(buf.p, 0, (size_t)(m ? m : 1));
        }
    }
    rc = agree(comm, rc);
    if (rc != HK_OK) {
        buf_free(&buf);
        return rc;
    }
    char go = 0;
    MPI_Status st;
    for (int i = -1; i < reps; i++) {
        if (rank == a) {
            MPI_Recv(&go, 0, MPI_BYTE, b, TAG_SYNC, comm, MPI_STATUS_IGNORE);
            int64_t t0 = now_ns();
            MPI_Send(buf.p, (int)m, MPI_BYTE, b, TAG_DATA, comm);
            int64_t t1 = now_ns();
            if (i >= 0) out[i] = ns_to_us(t1 - t0);
            MPI_Recv(&go, 0, MPI_BYTE, b, TAG_ACK, comm, MPI_STATUS_IGNORE);
        } else if (rank == b) {
            MPI_Send(&go, 0, MPI_BYTE, a, TAG_SYNC, comm);
            spin_us(delay_us);
            MPI_Recv(buf.p, (int)m, MPI_BYTE, a, TAG_DATA, comm, &st);
            MPI_Send(&go, 0, MPI_BYTE, a, TAG_ACK, comm);
        }
    }
    if (rank == b) {
        rc = check_count(&st, m);
        if (rc == HK_OK) rc = hk_verify(buf.p, m, a);
    }
    buf_free(&buf);
    return agree(comm, rc);
}
