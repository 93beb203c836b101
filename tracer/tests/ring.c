/* Test program for the tracer: blocking and non-blocking point-to-point, collectives and a
 * communicator split. The Rust test (crates/tracewatt-trace/tests/tracer.rs) checks the trace
 * against the counts and sizes below; keep them in sync. */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#define N 1000   /* doubles per ring message */
#define ITERS 5

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *a = calloc(N * size, sizeof(double)), *b = calloc(N * size, sizeof(double));
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Pcontrol(1); /* the timed region's start, for [jobs.trace.window] */
    for (int it = 0; it < ITERS; it++) {
        /* blocking ring: even ranks send first */
        if (rank % 2 == 0) {
            MPI_Send(a, N, MPI_DOUBLE, next, it, MPI_COMM_WORLD);
            MPI_Recv(b, N, MPI_DOUBLE, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b, N, MPI_DOUBLE, prev, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(a, N, MPI_DOUBLE, next, it, MPI_COMM_WORLD);
        }
        /* non-blocking exchange with both neighbours */
        MPI_Request r[4];
        MPI_Irecv(b, 100, MPI_INT, prev, 100 + it, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(b + 100, 100, MPI_INT, next, 200 + it, MPI_COMM_WORLD, &r[1]);
        MPI_Isend(a, 100, MPI_INT, next, 100 + it, MPI_COMM_WORLD, &r[2]);
        MPI_Isend(a + 100, 100, MPI_INT, prev, 200 + it, MPI_COMM_WORLD, &r[3]);
        MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        MPI_Request q;
        MPI_Isend(a, 8, MPI_CHAR, next, 300, MPI_COMM_WORLD, &q);
        MPI_Recv(b, 8, MPI_CHAR, prev, 300, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        /* collectives */
        MPI_Allreduce(a, b, 10, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Bcast(a, 64, MPI_BYTE, 0, MPI_COMM_WORLD);
        MPI_Alltoall(a, 16, MPI_INT, b, 16, MPI_INT, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Pcontrol(0);
    MPI_Reduce(a, b, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allgather(a, 2, MPI_DOUBLE, b, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Gather(a, 3, MPI_INT, b, 3, MPI_INT, 1, MPI_COMM_WORLD);
    int counts[64], displs[64];
    /* rank r sends r + j + 1 doubles to rank j (symmetric, so receive counts match) */
    for (int j = 0; j < size && j < 64; j++) { counts[j] = rank + j + 1; displs[j] = j * 2 * size; }
    MPI_Alltoallv(a, counts, displs, MPI_DOUBLE, b, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    /* split into even/odd halves and reduce within each */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    /* Between two calls: 200 ms asleep (wall clock only), then 50 ms of CPU time spinning. */
    struct timespec nap = {0, 200000000};
    nanosleep(&nap, NULL);
    volatile double x = 0;
    for (double t = thread_cpu_s(); thread_cpu_s() - t < 0.05;) x += 1;
    MPI_Allreduce(a, b, 5, MPI_DOUBLE, MPI_SUM, half);
    MPI_Comm_free(&half);
    /* A wildcard receive no rank sends to, cancelled, completed in one waitall with a ring
     * message (the tracer reads the cancel's outcome from statuses of its own), and an exscan. */
    MPI_Request c[2];
    MPI_Irecv(b, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 400, MPI_COMM_WORLD, &c[0]);
    MPI_Cancel(&c[0]);
    MPI_Isend(a, 1, MPI_DOUBLE, next, 401, MPI_COMM_WORLD, &c[1]);
    MPI_Recv(b + 1, 1, MPI_DOUBLE, prev, 401, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Waitall(2, c, MPI_STATUSES_IGNORE);
    MPI_Exscan(a, b, 6, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
