// Which rows of a global minibatch each rank takes.
#include "distributed/row_split.h"

#include "core/error.h"

namespace nn {

RowSlice rank_rows(uint32_t rows, int rank, int ranks) {
  NN_CHECK(ranks > 0 && rank >= 0 && rank < ranks, "rank out of range");
  const uint64_t lo = uint64_t(rows) * uint64_t(rank) / uint64_t(ranks);
  const uint64_t hi = uint64_t(rows) * uint64_t(rank + 1) / uint64_t(ranks);
  return {uint32_t(lo), uint32_t(hi - lo)};
}

uint32_t max_rank_rows(uint32_t rows, int ranks) {
  return uint32_t((uint64_t(rows) + uint64_t(ranks) - 1) / uint64_t(ranks));
}

}  // namespace nn
