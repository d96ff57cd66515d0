// Merging the ranks' prediction results (see rank_merge.h).
#include "predict/rank_merge.h"

#include <vector>

namespace nn {

ExampleRange rank_share(uint64_t examples, int rank, int ranks) {
  const uint64_t r = uint64_t(rank), p = uint64_t(ranks);
  return {examples * r / p, examples * (r + 1) / p};
}

std::string gather_to_rank0(Communicator& comm, const std::string& mine) {
  const bool root = comm.rank() == 0;
  std::vector<uint64_t> sizes(size_t(comm.size()));
  const uint64_t size = mine.size();
  comm.all_gather(&size, 1, sizes.data());
  std::string all;
  if (root) {
    uint64_t total = 0;
    for (uint64_t z : sizes) total += z;
    all.resize(total);
  }
  std::vector<size_t> counts(sizes.begin(), sizes.end());
  comm.gather_v(mine.data(), root ? &all[0] : nullptr, counts, 0);
  return all;
}

void sum_over_ranks(Communicator& comm, RankingMetrics& metrics) {
  std::vector<double> sums = metrics.sums();
  comm.all_reduce_sum(sums.data(), sums.size());
  metrics = RankingMetrics(metrics.k());
  metrics.add_sums(sums);
}

}  // namespace nn
