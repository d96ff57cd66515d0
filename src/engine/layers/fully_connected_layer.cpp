// Fully connected layer: forward and backward through the Backend.
#include "layers/fully_connected_layer.h"

#include <cmath>

#include "core/error.h"

namespace nn {

std::vector<float> initial_weights(const LayerSpec& l, size_t n_in, size_t n_out, Rng& rng) {
  std::vector<float> w(n_in * n_out);
  const double s = l.weight_init_scale;
  auto uniform = [&](double lo, double hi) {
    for (auto& v : w) v = static_cast<float>(lo + (hi - lo) * rng.uniform());
  };
  switch (l.weight_init) {
    case WeightInit::Xavier: {
      const double a = s * std::sqrt(6.0 / double(n_in + n_out));
      uniform(-a / 2, a / 2);
      break;
    }
    case WeightInit::CaffeXavier: {
      const double a = s * std::sqrt(3.0 / double(n_out));
      uniform(-a, a);
      break;
    }
    case WeightInit::Uniform: uniform(-s, s); break;
    case WeightInit::UnitBall: uniform(0, s); break;
    case WeightInit::Gaussian:
      for (auto& v : w) v = static_cast<float>(s * rng.normal());
      break;
    case WeightInit::SELU:
      for (auto& v : w) v = static_cast<float>(rng.normal() / std::sqrt(double(n_in)));
      break;
    case WeightInit::Constant:
      for (auto& v : w) v = static_cast<float>(s);
      break;
  }
  return w;
}

void load_connection(Backend& backend, const WeightArrays& wa, const std::string& input,
                     const std::string& output, Parameter& weights, Parameter& bias) {
  const std::string what = "network file weight '" + wa.input_layer + "' -> '" + wa.output_layer + "'";
  if (wa.input_layer != input || wa.output_layer != output)
    throw DataError(what + ": expected '" + input + "' -> '" + output + "' at this position");
  if (wa.weights.size() != weights.size() || wa.bias.size() != bias.size())
    throw DataError(what + ": " + std::to_string(wa.weights.size()) + " weights and " +
                    std::to_string(wa.bias.size()) + " biases, expected " +
                    std::to_string(weights.size()) + " and " + std::to_string(bias.size()));
  weights.value.upload(wa.weights);
  bias.value.upload(wa.bias);
  weights.locked = bias.locked = wa.locked;
  auto load_state = [&](Parameter& p, const std::vector<std::vector<float>>& st) {
    p.state.clear();
    for (const auto& v : st) {
      if (v.size() != p.size())
        throw DataError(what + ": optimizer state of '" + p.name + "' has " +
                        std::to_string(v.size()) + " values, expected " + std::to_string(p.size()));
      p.state.emplace_back(backend, v.size());
      p.state.back().upload(v);
    }
  };
  load_state(weights, wa.weight_state);
  load_state(bias, wa.bias_state);
}

WeightArrays save_connection(const std::string& input, const std::string& output, uint64_t n_out,
                             uint64_t n_in, float norm, const Parameter& weights,
                             const Parameter& bias) {
  WeightArrays wa;
  wa.input_layer = input;
  wa.output_layer = output;
  wa.width = n_out;
  wa.height = n_in;
  wa.norm = norm;
  wa.locked = weights.locked;
  wa.weights = weights.value.to_host();
  wa.bias = bias.value.to_host();
  for (const auto& s : weights.state) wa.weight_state.push_back(s.to_host());
  for (const auto& s : bias.state) wa.bias_state.push_back(s.to_host());
  return wa;
}

FullyConnectedLayer::FullyConnectedLayer(const LayerSpec& spec, uint32_t index)
    : Layer(spec, index) {}

void FullyConnectedLayer::build(Backend& backend) {
  backend_ = &backend;
  for (Layer* src : sources_) connect(backend, src);
}

void FullyConnectedLayer::initialize(Rng& rng) {
  for (auto& c : connections_) {
    c->weights.value.upload(initial_weights(spec_, c->source->units(), units(), rng));
    c->bias.value.upload(std::vector<float>(units(), spec_.bias_init));
  }
}

void FullyConnectedLayer::save(NetworkFile& file) const {
  for (const auto& c : connections_)
    file.weights.push_back(save_connection(c->source->name(), name(), units(), c->source->units(),
                                           spec_.weight_norm, c->weights, c->bias));
}

void FullyConnectedLayer::load(const NetworkFile& file, size_t& cursor) {
  for (auto& c : connections_) {
    if (cursor >= file.weights.size())
      throw DataError("network file has " + std::to_string(file.weights.size()) +
                      " weights; layer '" + name() + "' needs more");
    load_connection(*backend_, file.weights[cursor++], c->source->name(), name(), c->weights,
                    c->bias);
  }
}

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
