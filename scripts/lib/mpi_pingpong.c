/* Times the path between MPI ranks 0 and 1 (scripts/check_scaling_netns.sh): half the median
 * round trip of an 8-byte message (the one-way latency a ring collective pays per hop), the rate
 * of one-way 8 MiB transfers, and the median time of an MPI_Allreduce of 4 KiB and of 8 MiB
 * floats over every rank. Prints one line on rank 0:
 *   latency_us <us> bandwidth_MBps <MB/s> allreduce_4KiB_us <us> allreduce_8MiB_ms <ms> bulk_bytes
 * <n> (bulk_bytes: what rank 0 sent to rank 1 in the bandwidth test, a floor for the bytes that
 * must have crossed the link between them) Usage: mpirun -np 2 mpi_pingpong [REPEATS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, n, sizeof *v, cmp);
  return v[n / 2];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int repeats = argc > 1 ? atoi(argv[1]) : 200;
  if (size < 2 || repeats < 1) {
    if (rank == 0) fprintf(stderr, "mpi_pingpong: needs 2 ranks or more and REPEATS >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int big = 8 << 20;
  char* buffer = calloc(big, 1);
  float* in = calloc(big / 4, sizeof(float));
  float* out = calloc(big / 4, sizeof(float));
  double* t = calloc(repeats, sizeof(double));
  const int big_repeats = repeats / 20 > 3 ? repeats / 20 : 3;
  double latency = 0, bandwidth = 0;
  if (rank < 2) {
    const int peer = 1 - rank;
    for (int i = -10; i < repeats; ++i) { /* 10 warm-up round trips */
      const double start = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buffer, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(buffer, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buffer, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer, 8, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
      }
      if (i >= 0) t[i] = MPI_Wtime() - start;
    }
    latency = median(t, repeats) / 2;
    /* Bandwidth: rank 0 sends big_repeats messages of 8 MiB, rank 1 answers with 1 byte. */
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < big_repeats; ++i) {
      if (rank == 0)
        MPI_Send(buffer, big, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
      else
        MPI_Recv(buffer, big, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 0)
      MPI_Recv(buffer, 1, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
      MPI_Send(buffer, 1, MPI_CHAR, peer, 2, MPI_COMM_WORLD);
    bandwidth = (double)big * big_repeats / (MPI_Wtime() - start);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const int counts[2] = {1024, big / 4};
  double reduce[2];
  for (int c = 0; c < 2; ++c) {
    const int n = c == 0 ? repeats : big_repeats;
    for (int i = -2; i < n; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      MPI_Allreduce(in, out, counts[c], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (i >= 0) t[i] = MPI_Wtime() - start;
    }
    reduce[c] = median(t, n);
  }
  if (rank == 0)
    printf(
        "latency_us %.1f bandwidth_MBps %.0f allreduce_4KiB_us %.1f allreduce_8MiB_ms %.2f "
        "bulk_bytes %lld\n",
        latency * 1e6, bandwidth / 1e6, reduce[0] * 1e6, reduce[1] * 1e3,
        (long long)big * big_repeats);
  free(buffer);
  free(in);
  free(out);
  free(t);
  MPI_Finalize();
  return 0;
}
