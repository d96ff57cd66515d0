// Fully connected layer: forward and backward through the Backend.
#include "layers/fully_connected_layer.h"

#include "core/error.h"

namespace nn {

FullyConnectedLayer::FullyConnectedLayer(const LayerSpec& spec, uint32_t index)
    : Layer(spec, index) {}

Connection& FullyConnectedLayer::connect(Backend& backend, Layer* source) {
  auto c = std::make_unique<Connection>();
  c->source = source;
  const size_t n_in = source->units(), n_out = units();
  c->weights.name = name() + "<-" + source->name() + ":weights";
  c->weights.value.resize(backend, n_in * n_out);
  c->weights.grad.resize(backend, n_in * n_out);
  c->bias.name = name() + "<-" + source->name() + ":bias";
  c->bias.value.resize(backend, n_out);
  c->bias.grad.resize(backend, n_out);
  c->bias.regularize = false;
  connections_.push_back(std::move(c));
  return *connections_.back();
}

std::vector<Parameter*> FullyConnectedLayer::parameters() {
  std::vector<Parameter*> out;
  for (auto& c : connections_) {
    out.push_back(&c->weights);
    out.push_back(&c->bias);
  }
  return out;
}

void FullyConnectedLayer::forward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows, n_out = units();
  float* z = a_.data();
  bool first = true;
  for (auto& c : connections_) {
    be.broadcast_bias(z, c->bias.value.data(), rows, n_out, /*accumulate=*/!first);
    first = false;
    Layer* src = c->source;
    if (src->has_sparse_output()) {
      be.sparse_matmul(src->sparse_output(), c->weights.value.data(), n_out, z);
    } else {
      const int n_in = static_cast<int>(src->units());
      be.gemm(false, false, rows, n_out, n_in, 1.0f, src->activations(), n_in,
              c->weights.value.data(), n_out, 1.0f, z, n_out);
    }
  }
  if (first) be.fill(z, size_t(rows) * n_out, 0.0f);
  for (Layer* skip : skips_) be.axpy(size_t(rows) * n_out, 1.0f, skip->activations(), z);
  be.activate(activation_params(spec_), z, rows, n_out);
  if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden) {
    const size_t n = size_t(rows) * n_out;
    be.copy(pre_dropout_.data(), z, n * sizeof(float));
    be.dropout(z, n, spec_.p_dropout, ctx.seed, ctx.step * 4096 + index());
  }
}

void FullyConnectedLayer::backward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows, n_out = units();
  const size_t n = size_t(rows) * n_out;
  float* d = delta_.data();
  // Output layers already hold dE/dz (from the loss); hidden layers hold dE/da.
  if (kind() != LayerKind::Output) {
    const float* a = a_.data();
    if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden) {
      be.dropout_backward(d, n, spec_.p_dropout, ctx.seed, ctx.step * 4096 + index());
      a = pre_dropout_.data();
    }
    be.activation_backward(activation_params(spec_), a, d, rows, n_out);
  }
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (auto& c : connections_) {
    Layer* src = c->source;
    float* gw = c->weights.grad.data();
    if (src->has_sparse_output()) {
      be.fill(gw, c->weights.grad.size(), 0.0f);
      be.sparse_weight_gradient(src->sparse_output(), d, n_out, inv_rows, gw);
    } else {
      const int n_in = static_cast<int>(src->units());
      be.gemm(true, false, n_in, n_out, rows, inv_rows, src->activations(), n_in, d, n_out, 0.0f,
              gw, n_out);
    }
    be.column_sums(d, rows, n_out, inv_rows, 0.0f, c->bias.grad.data());
    if (src->needs_delta()) {
      const int n_in = static_cast<int>(src->units());
      be.gemm(false, true, rows, n_in, n_out, 1.0f, d, n_out, c->weights.value.data(), n_out,
              1.0f, src->delta(), n_in);
    }
  }
  for (Layer* skip : skips_)
    if (skip->needs_delta()) be.axpy(n, 1.0f, d, skip->delta());
}

}  // namespace nn
