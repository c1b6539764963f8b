// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
// The Open MPI job of the `stacks` VM group: two ranks bounce a message a few times, so the
// transport (pml ucx over the test bed's soft-RoCE devices) carries traffic both ways.
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "needs exactly 2 ranks, got %d\n", size);
    MPI_Finalize();
    return 2;
  }
  // Big enough to leave the eager inline path, small enough to stay quick under emulation.
  static char buf[8192];
  const int rounds = 5;
  for (int i = 0; i < rounds; ++i) {
    if (rank == 0) {
      memset(buf, i + 1, sizeof buf);
      MPI_Send(buf, sizeof buf, MPI_CHAR, 1, i, MPI_COMM_WORLD);
      MPI_Recv(buf, sizeof buf, MPI_CHAR, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (buf[0] != (char)(i + 2)) {
        fprintf(stderr, "round %d: wrong reply %d\n", i, buf[0]);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    } else {
      MPI_Recv(buf, sizeof buf, MPI_CHAR, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      memset(buf, buf[0] + 1, sizeof buf);
      MPI_Send(buf, sizeof buf, MPI_CHAR, 0, i, MPI_COMM_WORLD);
    }
  }
  printf("rank %d: %d round trips done\n", rank, rounds);
  MPI_Finalize();
  return 0;
}
