// Times the collectives the training step uses between the ranks of a job, for the scaling cost
// model (`mpirun -np N nn-train --measure-link FILE`, docs/scaling.md "Measuring the link").
// Every rank calls it (it is a sequence of collectives); the figures are the same on every rank.
#pragma once

#include <cstddef>
#include <vector>

#include "config/link_file.h"
#include "distributed/communicator.h"

namespace nn {

struct LinkTiming {
  // Message sizes in bytes (the whole vector, or the whole gathered result).
  std::vector<double> sizes = {64.0, 4096.0, 262144.0, 4194304.0, 33554432.0};
  // Timed repetitions of each collective and size (after one untimed warm-up); the median is
  // kept. Sizes of 4 MB and more repeat `large_repeats` times.
  int repeats = 15;
  int large_repeats = 5;
};

// all_reduce, all_gather and reduce_scatter of each size on float arrays (sizes rounded down to
// a multiple of 4 bytes times the ranks), each repetition between barriers and timed as the
// slowest rank's. Host memory only (an MPI communicator); ArgumentError for one rank.
std::vector<LinkSample> time_collectives(Communicator& comm, const LinkTiming& timing = {});

}  // namespace nn
