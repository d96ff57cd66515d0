// Negative sampling for sampled outputs: the alias table and each minibatch's column set.
#include "train/negative_sampler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/random.h"

namespace nn {

NegativeSampler::NegativeSampler(uint32_t units) : units_(units), uniform_(true) {
  if (units == 0) throw ConfigError("Sampling: the output layer has no units");
}

NegativeSampler::NegativeSampler(const std::vector<uint64_t>& counts)
    : units_(static_cast<uint32_t>(counts.size())), uniform_(false) {
  double total = 0.0;
  for (uint64_t c : counts) total += double(c);
  if (!(total > 0.0))
    throw ConfigError(
        "Sampling: Distribution \"Popularity\" needs item counts, but the training targets "
        "hold no item");
  q_.resize(units_);
  for (uint32_t j = 0; j < units_; ++j) q_[j] = double(counts[j]) / total;
  // Vose's alias method: every column holds probability 1/units, made of its own item's share
  // and, for the rest, one other item.
  keep_.assign(units_, 1.0f);
  alias_.resize(units_);
  std::vector<double> scaled(units_);
  std::vector<uint32_t> small, large;
  for (uint32_t j = 0; j < units_; ++j) {
    scaled[j] = q_[j] * double(units_);
    alias_[j] = j;
    (scaled[j] < 1.0 ? small : large).push_back(j);
  }
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back(), l = large.back();
    small.pop_back();
    keep_[s] = static_cast<float>(scaled[s]);
    alias_[s] = l;
    scaled[l] -= 1.0 - scaled[s];
    if (scaled[l] < 1.0) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What is left holds (up to rounding) exactly 1: kept whole.
  for (uint32_t j : small) keep_[j] = 1.0f;
  for (uint32_t j : large) keep_[j] = 1.0f;
}

NegativeSampler NegativeSampler::for_spec(const SamplingSpec& spec, const ExampleSet& targets,
                                          uint32_t units) {
  if (spec.distribution == SamplingDistribution::Uniform) return NegativeSampler(units);
  // Streamed training data (docs/large-datasets.md) bind only the files' headers: the counts
  // would need a pass over the file first, which is not implemented.
  if (targets.is_sparse() && targets.sparse_start.size() < targets.unique_examples)
    throw ConfigError(
        "Sampling: Distribution \"Popularity\" counts the items of the training targets, which "
        "are streamed here (not held in memory); use \"Uniform\", or train in memory "
        "(--no-stream, with a larger --memory-limit)");
  std::vector<uint64_t> counts(units, 0);
  for (uint64_t e = 0; e < targets.examples; ++e) {
    const uint64_t u = targets.row(e);
    for (uint64_t i = targets.sparse_start[u]; i < targets.sparse_end[u]; ++i)
      if (targets.sparse_index[i] < units) ++counts[targets.sparse_index[i]];
  }
  return NegativeSampler(counts);
}

double NegativeSampler::probability(uint32_t j) const {
  return uniform_ ? 1.0 / double(units_) : q_[j];
}

uint32_t NegativeSampler::draw(double u1, double u2) const {
  const auto j = std::min<uint32_t>(units_ - 1, static_cast<uint32_t>(u1 * double(units_)));
  if (uniform_) return j;
  return u2 < double(keep_[j]) ? j : alias_[j];
}

SampledColumns sample_columns(const SparseBatch& targets, const NegativeSampler& sampler,
                              uint32_t negatives, uint64_t seed, uint64_t step, uint32_t layer) {
  return sample_columns(targets.index, sampler, negatives, seed, step, layer);
}

SampledColumns sample_columns(std::vector<uint32_t> positives, const NegativeSampler& sampler,
                              uint32_t negatives, uint64_t seed, uint64_t step, uint32_t layer) {
  SampledColumns s;
  s.columns = std::move(positives);
  std::sort(s.columns.begin(), s.columns.end());
  s.columns.erase(std::unique(s.columns.begin(), s.columns.end()), s.columns.end());
  if (!s.columns.empty() && s.columns.back() >= sampler.units())
    throw DataError("Sampling: a target index " + std::to_string(s.columns.back()) +
                    " is outside the output layer of " + std::to_string(sampler.units()) +
                    " units");
  s.positives = static_cast<uint32_t>(s.columns.size());
  Rng rng(mix64(mix64(seed ^ 0x53414D504C45ull) ^ (step * 4096 + layer)));
  std::vector<uint32_t> drawn(negatives);
  for (uint32_t& d : drawn) {
    const double u1 = rng.uniform();
    d = sampler.draw(u1, rng.uniform());
  }
  std::sort(drawn.begin(), drawn.end());
  drawn.erase(std::unique(drawn.begin(), drawn.end()), drawn.end());
  s.inclusion.assign(s.positives, 1.0);
  for (uint32_t d : drawn) {
    if (std::binary_search(s.columns.begin(), s.columns.begin() + s.positives, d)) continue;
    s.columns.push_back(d);
    // pi = 1 - (1 - q)^n, computed without cancellation for small q.
    const double q = sampler.probability(d);
    s.inclusion.push_back(-std::expm1(double(negatives) * std::log1p(-std::min(q, 1.0 - 1e-16))));
  }
  return s;
}

}  // namespace nn
