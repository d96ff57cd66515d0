// Prediction under mpirun without split layers: the ranks score contiguous ranges of the
// examples, and rank 0 merges what they produced (their lines in example order, their ranking
// metrics summed), so the output equals a single process's.
#pragma once

#include <cstdint>
#include <string>

#include "distributed/communicator.h"
#include "predict/predictor.h"

namespace nn {

struct ExampleRange {
  uint64_t begin = 0, end = 0;
};

// Rank `rank`'s share of `examples` examples among `ranks` ranks: [n*r/p, n*(r+1)/p).
ExampleRange rank_share(uint64_t examples, int rank, int ranks);

// Every rank's `mine` concatenated in rank order, on rank 0 ("" on the others). Collective.
std::string gather_to_rank0(Communicator& comm, const std::string& mine);

// The metrics of every rank's examples, summed (on every rank). Collective.
void sum_over_ranks(Communicator& comm, RankingMetrics& metrics);

}  // namespace nn
