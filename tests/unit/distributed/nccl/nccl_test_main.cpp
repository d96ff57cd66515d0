// main() of the NCCL tests: starts MPI when run under mpirun (as the tools do), so the same
// binary checks NCCL with one rank alone and with N ranks under `mpirun -np N` (one GPU each).
#include <gtest/gtest.h>

#include "distributed/process.h"

int main(int argc, char** argv) {
  nn::ProcessSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
