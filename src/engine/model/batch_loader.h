// Assembles minibatches on the host from bound datasets (inputs and targets), including sparse
// input denoising. Pure host work with no shared mutable state, so the trainer can assemble the
// next batch on another thread while the current one trains.
#pragma once

#include <cstdint>
#include <vector>

#include "data/batch.h"
#include "model/binding.h"

namespace nn {

struct HostBatch {
  uint32_t rows = 0;
  // One slot per input, then per output binding (BoundData order).
  std::vector<SparseBatch> sparse;
  std::vector<std::vector<float>> dense;
  std::vector<std::vector<float>> weights;  // dense targets' example weights (may be empty)
};

// Appends the rows of `more` (assembled from the same bindings) to `into`: a streamed batch whose
// rows come from two windows.
void append_rows(HostBatch& into, const HostBatch& more);

// Rows [first, first + count) of a batch (model parallelism: every rank assembles the whole
// global minibatch and takes its rows of it for the data-parallel layers).
HostBatch slice_rows(const HostBatch& whole, uint32_t first, uint32_t count);

struct DenoiseSetting {
  float p = 0.0f;            // drop probability for stored entries (0 = off)
  uint32_t layer_index = 0;  // part of the random stream
};

class BatchLoader {
 public:
  // `denoise` has one entry per input binding.
  BatchLoader(const BoundData& data, std::vector<DenoiseSetting> denoise, uint64_t seed);

  // Gathers examples ids[0..count). `step` selects the denoising masks; `training` enables them.
  // Masks depend on the example ids and the step only (not on the batch's composition); `keys`
  // (default: `ids`) are the ids the masks are drawn for: a streamed window holds examples
  // under local ids and passes their ids in the file, so its masks are the in-memory ones.
  void assemble(const uint32_t* ids, uint32_t count, uint64_t step, bool training, HostBatch& out,
                const uint32_t* keys = nullptr) const;
  const BoundData& data() const { return data_; }
  const std::vector<DenoiseSetting>& denoise_settings() const { return denoise_; }
  uint64_t seed() const { return seed_; }

 private:
  void denoise(SparseBatch& b, const uint32_t* ids, const DenoiseSetting& d, uint64_t step) const;
  BoundData data_;
  std::vector<DenoiseSetting> denoise_;
  uint64_t seed_;
};

}  // namespace nn
