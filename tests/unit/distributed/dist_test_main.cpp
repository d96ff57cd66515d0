// main() of the communicator tests: starts MPI when run under mpirun (as the tools do), so the
// same binary tests LocalCommunicator alone and MpiCommunicator under `mpirun -np N`.
#include <gtest/gtest.h>

#include "distributed/process.h"

int main(int argc, char** argv) {
  nn::ProcessSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
