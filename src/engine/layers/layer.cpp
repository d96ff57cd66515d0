// Shared layer plumbing: buffer allocation, activation parameters and the sparseness penalty.
#include "layers/layer.h"

#include <algorithm>
#include <vector>

#include "core/allocation_context.h"
#include "core/error.h"

namespace nn {

ActivationParams activation_params(const LayerSpec& spec) {
  ActivationParams p;
  // Pooling layers apply no activation function whatever Activation says: they are Linear to
  // everything that asks (the loss of a pooling output layer, for one).
  p.kind = spec.type == LayerType::Pooling ? Activation::Linear : spec.activation;
  p.slope = spec.relu_slope;
  p.alpha = spec.elu_alpha;
  p.lambda = spec.selu_lambda;
  p.max_value = spec.activation_max;
  return p;
}

Layer::Layer(const LayerSpec& spec, uint32_t index) : spec_(spec), index_(index) {}

std::pair<uint32_t, uint32_t> unit_range(uint32_t units, int rank, int ranks) {
  const uint64_t lo = uint64_t(units) * uint64_t(rank) / uint64_t(ranks);
  const uint64_t hi = uint64_t(units) * uint64_t(rank + 1) / uint64_t(ranks);
  return {uint32_t(lo), uint32_t(hi - lo)};
}

bool Layer::can_shard(std::string* why_not) const {
  if (why_not) *why_not = "only fully connected Hidden and Output layers are split over processes";
  return false;
}

bool Layer::can_pad_rows(std::string* why_not) const {
  if (why_not) *why_not = "only fully connected Output layers pad their rows";
  return false;
}

void Layer::download_activations(Backend& backend, uint32_t rows, uint32_t width,
                                 float* host) const {
  if (!padded()) return backend.download(host, a_.data(), size_t(rows) * width * sizeof(float));
  std::vector<float> held(size_t(rows) * stride_);
  backend.download(held.data(), a_.data(), held.size() * sizeof(float));
  const std::vector<float> rows_only = RowPadding{width, stride_}.narrow(held);
  std::copy(rows_only.begin(), rows_only.end(), host);
}

void Layer::allocate(Backend& backend, uint32_t max_rows) {
  const size_t n = size_t(max_rows) * stride();
  const AllocationContext context(
      "layer '" + name() + "' activations (" + std::to_string(max_rows) + " rows x " +
      std::to_string(units()) + " units" +
      (padded() ? ", rows padded to " + std::to_string(stride()) : std::string()) + ")");
  a_.resize(backend, n);
  if (needs_delta()) delta_.resize(backend, n);
  if (spec_.p_dropout > 0.0f && spec_.kind == LayerKind::Hidden) pre_dropout_.resize(backend, n);
  // Padded rows: nothing writes the padding of the deltas, which must hold 0 (no gradient may
  // reach the padded weights), nor of the activations (0 there keeps a dump of them tidy).
  if (padded()) {
    backend.fill(a_.data(), n, 0.0f);
    if (needs_delta()) backend.fill(delta_.data(), n, 0.0f);
  }
}

void Layer::set_sparseness_penalty(float p, float beta) {
  penalty_p_ = p;
  penalty_beta_ = beta;
}

double Layer::sparseness_penalty(Backend& backend, uint32_t rows) const {
  if (!has_sparseness_penalty()) return 0.0;
  return backend.sparseness_penalty(a_.data(), rows, units(), penalty_p_, penalty_beta_, nullptr);
}

void Layer::accumulate_sparseness_penalty(Backend& backend, uint32_t rows, double* sum) const {
  if (!has_sparseness_penalty()) return;
  backend.sparseness_penalty_accumulate(a_.data(), rows, units(), penalty_p_, penalty_beta_,
                                        nullptr, sum);
}

void Layer::add_sparseness_penalty_delta(Backend& backend, uint32_t rows) {
  if (!has_sparseness_penalty()) return;
  NN_CHECK(needs_delta(), "layer '" + name() + "' has a sparseness penalty but no delta");
  backend.sparseness_penalty(a_.data(), rows, units(), penalty_p_, penalty_beta_, delta_.data());
}

const SparseView& Layer::sparse_output() const {
  throw InternalError("layer '" + name() + "' has no sparse output");
}

}  // namespace nn
