/*
 * pingpong_ref.c — a plain, standalone MPI ping-pong (OSU style): the outside reference the calibration is
 * checked against.
 *
 * It deliberately shares NO code with hnow_kernels.c: the loop below is a copy written out again on purpose, so
 * a mistake in the calibration's kernels cannot also hide here. Independence is the point; keep it that way.
 *
 *   mpicc -O2 -o pingpong_ref pingpong_ref.c
 *   mpiexec -n 2 ./pingpong_ref [-n BATCHES] [-i ITERS] SIZE_BYTES...
 *
 * Ranks 0 and 1 ping-pong; any further ranks wait in the final barrier. For each size: separate page-aligned
 * send and receive buffers (posix_memalign 4096, touched before timing); rank 0 sends SIZE bytes, rank 1 receives
 * them and sends SIZE bytes back from its own send buffer; a batch is ITERS round trips timed together on
 * CLOCK_MONOTONIC; the sample is half the mean round trip of the batch. Two untimed warm-up batches, then
 * BATCHES timed ones. ITERS defaults to min(100, max(1, 4 MiB / SIZE)); BATCHES to 31.
 * Rank 0 prints one line per size:
 *   size_bytes median_half_rtt_us min_us max_us batches
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median_sorted(const double *v, int n) {
    return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int batches = 31, iters_opt = 0, first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "-n") == 0 && first + 1 < argc) {
            batches = atoi(argv[first + 1]);
            first += 2;
        } else if (strcmp(argv[first], "-i") == 0 && first + 1 < argc) {
            iters_opt = atoi(argv[first + 1]);
            first += 2;
        } else {
            break;
        }
    }
    if (size < 2 || batches < 1 || iters_opt < 0 || first >= argc) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n 2 pingpong_ref [-n BATCHES] [-i ITERS] SIZE_BYTES...\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm pair; /* ranks 0 and 1; MPI_COMM_NULL on the others */
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    double *samples = malloc(sizeof(double) * (size_t)batches);
    int status = 0;
    for (int s = first; s < argc && pair != MPI_COMM_NULL; s++) {
        long m = atol(argv[s]);
        if (m < 0) m = 0;
        int iters = iters_opt > 0 ? iters_opt : (m > 0 ? (int)(4194304L / m) : 100);
        if (iters > 100) iters = 100;
        if (iters < 1) iters = 1;
        void *sbuf = NULL, *rbuf = NULL;
        size_t n = m > 0 ? (size_t)m : 1;
        if (posix_memalign(&sbuf, 4096, n) != 0 || posix_memalign(&rbuf, 4096, n) != 0) {
            fprintf(stderr, "pingpong_ref: cannot allocate %ld bytes\n", m);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        memset(sbuf, 'a' + rank, n);
        memset(rbuf, 0, n);
        int peer = 1 - rank;
        MPI_Barrier(pair);
        for (int b = -2; b < batches; b++) {
            double t0 = clock_us();
            for (int k = 0; k < iters; k++) {
                if (rank == 0) {
                    MPI_Send(sbuf, (int)m, MPI_BYTE, peer, 1, pair);
                    MPI_Recv(rbuf, (int)m, MPI_BYTE, peer, 1, pair, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rbuf, (int)m, MPI_BYTE, peer, 1, pair, MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, (int)m, MPI_BYTE, peer, 1, pair);
                }
            }
            double t1 = clock_us();
            if (b >= 0) samples[b] = (t1 - t0) / (2.0 * iters);
        }
        if (m > 0 && ((unsigned char *)rbuf)[m - 1] != (unsigned char)('a' + peer)) status = 4;
        if (rank == 0) {
            qsort(samples, (size_t)batches, sizeof(double), cmp_double);
            printf("%ld %.4f %.4f %.4f %d\n", m, median_sorted(samples, batches), samples[0], samples[batches - 1],
                   batches);
            fflush(stdout);
        }
        free(sbuf);
        free(rbuf);
    }
    free(samples);
    if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return status;
}
