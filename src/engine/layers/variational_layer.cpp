// Variational layer: the fully connected products of its base (compute_z, propagate) around the
// sample and its backward pass on the Backend (see variational_layer.h).
#include "layers/variational_layer.h"

#include <algorithm>

#include "core/error.h"
#include "core/random.h"

namespace nn {

VariationalLayer::VariationalLayer(const LayerSpec& spec, uint32_t index)
    : FullyConnectedLayer(spec, index) {}

void VariationalLayer::build(Backend& backend) {
  // The JSON parser refuses these keys on a Variational layer; a network file is checked here.
  const std::string at = "layer '" + name() + "': a Variational layer ";
  if (kind() != LayerKind::Hidden)
    throw ConfigError(at + "must be a Hidden layer, not " + std::string(to_string(kind())));
  if (spec_.activation != Activation::Linear)
    throw ConfigError(at + "outputs its sample as it is (Linear), not " +
                      std::string(to_string(spec_.activation)));
  if (spec_.batch_normalization || !spec_.skips.empty() || spec_.p_dropout > 0.0f ||
      spec_.delta_norm > 0.0f || spec_.sparse || !spec_.shared_weights.empty())
    throw ConfigError(at +
                      "takes no BatchNormalization, Skip, pDropout, DeltaNorm, Sparse or "
                      "SharedWeights (its output is the sampled code)");
  if (!(spec_.kl_beta >= 0.0f))
    throw ConfigError(at + "needs KL.Beta >= 0, not " + std::to_string(spec_.kl_beta));
  FullyConnectedLayer::build(backend);
}

bool VariationalLayer::can_shard(std::string* why_not) const {
  if (why_not) *why_not = "Variational layers are not split";
  return false;
}

void VariationalLayer::allocate(Backend& backend, uint32_t max_rows) {
  FullyConnectedLayer::allocate(backend, max_rows);
  q_.resize(backend, size_t(max_rows) * pre_units());
  dq_.resize(backend, size_t(max_rows) * pre_units());
}

float VariationalLayer::beta(uint64_t step) const {
  if (spec_.kl_anneal_steps == 0) return spec_.kl_beta;
  const double done = double(step > 0 ? step - 1 : 0);
  return static_cast<float>(double(spec_.kl_beta) *
                            std::min(1.0, done / double(spec_.kl_anneal_steps)));
}

uint64_t VariationalLayer::noise_stream(const LayerContext& ctx) const {
  // Each unit draws two uniforms (math::gaussian_at), so a rank's rows start 2 x offset x N
  // counters into the stream; the tag keeps it apart from the dropout streams.
  return shift_stream(mix64(0x56a7000000000000ull + ctx.step * 4096 + index()),
                      2 * ctx.row_offset * uint64_t(units()));
}

void VariationalLayer::forward(const LayerContext& ctx) {
  compute_z(ctx, q_.data());
  ctx.backend.variational_forward(q_.data(), ctx.rows, units(), ctx.training, ctx.seed,
                                  noise_stream(ctx), a_.data());
}

void VariationalLayer::backward(const LayerContext& ctx) {
  // delta_ holds dE/da, summed by the layers that read the sample.
  ctx.backend.variational_backward(q_.data(), delta_.data(), ctx.rows, units(), ctx.training,
                                   beta(ctx.step), ctx.seed, noise_stream(ctx), dq_.data());
  propagate(ctx, dq_.data());
}

void VariationalLayer::accumulate_own_loss(const LayerContext& ctx, double* sum) {
  const float b = beta(ctx.step);
  if (b == 0.0f || ctx.rows == 0) return;
  ctx.backend.variational_kl_accumulate(q_.data(), ctx.rows, units(), b, sum);
}

}  // namespace nn
