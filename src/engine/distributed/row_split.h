// Which rows of a global minibatch each rank takes under data parallelism (training) or a split
// of the examples (prediction): contiguous ranges whose sizes differ by at most one, so a short
// last batch still gives every rank the same number of steps.
#pragma once

#include <cstdint>

namespace nn {

struct RowSlice {
  uint32_t first = 0;  // position of the rank's first row in the global minibatch
  uint32_t count = 0;  // may be 0 when the batch has fewer rows than there are ranks
};

// Rows [floor(rows * rank / ranks), floor(rows * (rank + 1) / ranks)).
RowSlice rank_rows(uint32_t rows, int rank, int ranks);
// The most rows any rank gets from a batch of `rows` (its buffers are sized for this).
uint32_t max_rank_rows(uint32_t rows, int ranks);

}  // namespace nn
