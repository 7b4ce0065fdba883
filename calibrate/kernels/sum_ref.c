/*
 * sum_ref.c — the outside reference for the reduction cost gamma: a plain C loop, no MPI, that adds one array of
 * doubles into another (a[j] += b[j]), what MPI_Reduce_local with MPI_SUM on MPI_DOUBLE does. It shares no code
 * with hnow_kernels.c: its own buffers, clock reads and loop.
 *
 * Build: cc -O2 -o sum_ref sum_ref.c (calibrate/ckernels.py builds it with the MPI installation's mpicc, which
 * compiles plain C too; any cc does).
 * Usage: sum_ref [-n BATCHES] SIZE_BYTES...   (each size a multiple of 8 bytes, at least 8)
 * Prints one line per size: "SIZE MEDIAN_US MIN_US MAX_US BATCHES", µs per pass over the arrays (one a[j] += b[j]
 * per element), each batch timing enough passes back to back to last about 100 µs; one untimed batch first. The
 * arrays stay the same from pass to pass (as a reduction's accumulator and incoming block do), page-aligned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Not inlined: one call per pass, as MPI_Reduce_local makes one call per reduction. */
__attribute__((noinline)) static void add_into(double *restrict a, const double *restrict b, long n) {
    for (long j = 0; j < n; j++) a[j] += b[j];
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    int batches = 31, first = 1;
    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        batches = atoi(argv[2]);
        first = 3;
    }
    if (batches < 1 || first >= argc) {
        fprintf(stderr, "usage: sum_ref [-n BATCHES] SIZE_BYTES...\n");
        return 2;
    }
    double *t = malloc(sizeof(double) * (size_t)batches);
    if (!t) return 1;
    for (int s = first; s < argc; s++) {
        long m = atol(argv[s]);
        if (m < 8 || m % 8 != 0) {
            fprintf(stderr, "sum_ref: size %s is not a positive multiple of 8 bytes\n", argv[s]);
            return 2;
        }
        long n = m / 8;
        void *pa = NULL, *pb = NULL;
        if (posix_memalign(&pa, 4096, (size_t)m) != 0 || posix_memalign(&pb, 4096, (size_t)m) != 0) return 1;
        double *a = pa, *b = pb;
        for (long j = 0; j < n; j++) {
            a[j] = 0.0;
            b[j] = 1.0;
        }
        long passes = 1;
        for (;;) { /* enough passes per batch for ~100 µs, so that the clock's own cost does not count */
            double t0 = now_us();
            for (long p = 0; p < passes; p++) {
                add_into(a, b, n);
                __asm__ volatile("" ::: "memory");
            }
            if (now_us() - t0 >= 100.0 || passes >= (1L << 20)) break;
            passes *= 2;
        }
        for (int i = 0; i < batches; i++) {
            double t0 = now_us();
            for (long p = 0; p < passes; p++) {
                add_into(a, b, n);
                __asm__ volatile("" ::: "memory");
            }
            t[i] = (now_us() - t0) / (double)passes;
        }
        double check = a[0] + a[n - 1]; /* every element is the number of passes made: the loop really ran */
        qsort(t, (size_t)batches, sizeof(double), by_value);
        double median = batches % 2 ? t[batches / 2] : 0.5 * (t[batches / 2 - 1] + t[batches / 2]);
        printf("%ld %.6f %.6f %.6f %d\n", m, median, t[0], t[batches - 1], batches);
        if (check <= 0.0 || a[0] != a[n - 1]) {
            fprintf(stderr, "sum_ref: wrong sums at %ld bytes\n", m);
            return 1;
        }
        free(pa);
        free(pb);
    }
    free(t);
    return 0;
}
