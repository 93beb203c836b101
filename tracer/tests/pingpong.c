/* Overhead benchmark: ITERS 8-byte ping-pongs between ranks 0 and 1 (other ranks idle).
 * Prints the mean time per MPI call; run with and without LD_PRELOAD of the tracer. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, iters = argc > 1 ? atoi(argv[1]) : 200000;
    char buf[8] = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < iters && rank < 2; i++) {
        if (rank == 0) {
            MPI_Send(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    t = MPI_Wtime() - t;
    if (rank == 0) printf("%.1f ns per call (%d calls)\n", t / (2.0 * iters) * 1e9, 2 * iters);
    MPI_Finalize();
    return 0;
}
