// Negative items for sampled output training (docs/wide-outputs.md, "Sampled outputs"): the
// distribution q over a layer's units (uniform, or each item's count in the training targets
// over their total), draws from it in O(1) (Walker's alias table), and the column set of one
// minibatch: its rows' targets P, then the distinct drawn items that are not in P.
#pragma once

#include <cstdint>
#include <vector>

#include "config/network_spec.h"
#include "data/batch.h"
#include "data/dataset.h"

namespace nn {

class NegativeSampler {
 public:
  // Uniform over `units` items.
  explicit NegativeSampler(uint32_t units);
  // In proportion to `counts` (one per item; items counted 0 are never drawn). ConfigError when
  // every count is 0.
  explicit NegativeSampler(const std::vector<uint64_t>& counts);
  // The distribution a spec asks for over `targets` (a sparse dataset of `units` columns).
  static NegativeSampler for_spec(const SamplingSpec& spec, const ExampleSet& targets,
                                  uint32_t units);

  uint32_t units() const { return units_; }
  // q(j), the probability of item j in one draw.
  double probability(uint32_t j) const;
  // One draw from uniform numbers u1, u2 in [0, 1).
  uint32_t draw(double u1, double u2) const;

 private:
  uint32_t units_ = 0;
  bool uniform_ = true;
  std::vector<double> q_;
  std::vector<float> keep_;      // alias table: keep column j with this probability...
  std::vector<uint32_t> alias_;  // ...else take alias_[j]
};

// One minibatch's columns: columns[0, positives) are the targets of its rows (sorted, distinct),
// columns[positives, size) the drawn negatives that are no target of any row (sorted, distinct:
// accidental hits removed). inclusion[k] for a negative column is the probability pi that it is
// in the set, 1 - (1 - q)^n over the n draws (for the positives, 1).
struct SampledColumns {
  std::vector<uint32_t> columns;
  uint32_t positives = 0;
  std::vector<double> inclusion;
};

// The columns for the minibatch `targets` of step `step` (1-based update count) of layer
// `layer` with run seed `seed`: `negatives` draws from a generator seeded by (seed, step, layer)
// alone, so the set does not depend on threads or timing.
SampledColumns sample_columns(const SparseBatch& targets, const NegativeSampler& sampler,
                              uint32_t negatives, uint64_t seed, uint64_t step, uint32_t layer);
// The same from the targets' columns (any order, repeats allowed): data-parallel ranks pass the
// union of every rank's target columns, so they all compute the same set.
SampledColumns sample_columns(std::vector<uint32_t> positives, const NegativeSampler& sampler,
                              uint32_t negatives, uint64_t seed, uint64_t step, uint32_t layer);

}  // namespace nn
