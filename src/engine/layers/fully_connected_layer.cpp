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
    case WeightInit::Uniform:
      uniform(-s, s);
      break;
    case WeightInit::UnitBall:
      uniform(0, s);
      break;
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
  const std::string what =
      "network file weight '" + wa.input_layer + "' -> '" + wa.output_layer + "'";
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

uint32_t FullyConnectedLayer::pre_units() const {
  return maxout() ? units() * static_cast<uint32_t>(spec_.maxout_k) : units();
}

void FullyConnectedLayer::build(Backend& backend) {
  backend_ = &backend;
  if (maxout() && spec_.maxout_k < 1)
    throw ConfigError("layer '" + name() + "': Activation MaxOut needs Maxout.k >= 1, not " +
                      std::to_string(spec_.maxout_k));
  for (Layer* src : sources_) connect(backend, src);
  if (spec_.batch_normalization) bn_ = std::make_unique<BatchNorm>(backend, name(), pre_units());
}

void FullyConnectedLayer::initialize(Rng& rng) {
  for (auto& c : connections_) {
    // Shared matrices are initialised by their owner; only the bias is this connection's.
    if (!c->shared)
      c->weights.value.upload(initial_weights(spec_, c->source->units(), pre_units(), rng));
    c->bias.value.upload(std::vector<float>(pre_units(), spec_.bias_init));
  }
  if (bn_) bn_->initialize();
}

void FullyConnectedLayer::save(NetworkFile& file) const {
  for (const auto& c : connections_) {
    if (!c->shared) {
      file.weights.push_back(save_connection(c->source->name(), name(), pre_units(),
                                             c->source->units(), spec_.weight_norm, c->weights,
                                             c->bias));
      continue;
    }
    // A shared weight stores its bias only; the matrix belongs to the source weight.
    WeightArrays wa;
    wa.input_layer = c->source->name();
    wa.output_layer = name();
    wa.width = pre_units();
    wa.height = c->source->units();
    wa.norm = spec_.weight_norm;
    wa.shared = true;
    wa.transposed = c->transposed;
    wa.source_input_layer = c->shared_input;
    wa.source_output_layer = c->shared_output;
    wa.locked = c->bias.locked;
    wa.bias = c->bias.value.to_host();
    for (const auto& st : c->bias.state) wa.bias_state.push_back(st.to_host());
    file.weights.push_back(std::move(wa));
  }
  if (bn_) file.layers.push_back(bn_->save());
}

void FullyConnectedLayer::load(const NetworkFile& file, size_t& cursor) {
  for (auto& c : connections_) {
    if (cursor >= file.weights.size())
      throw DataError("network file has " + std::to_string(file.weights.size()) +
                      " weights; layer '" + name() + "' needs more");
    const WeightArrays& wa = file.weights[cursor++];
    if (c->shared) {
      load_shared(wa, *c);
      continue;
    }
    if (wa.shared)
      throw DataError("network file weight '" + wa.input_layer + "' -> '" + wa.output_layer +
                      "': stored as shared with '" + wa.source_input_layer + "' -> '" +
                      wa.source_output_layer + "', but layer '" + name() +
                      "' has no SharedWeights entry for it");
    load_connection(*backend_, wa, c->source->name(), name(), c->weights, c->bias);
  }
  if (!bn_) return;
  for (const LayerArrays& a : file.layers) {
    if (a.layer != name()) continue;
    bn_->load(a);
    return;
  }
  // DSSTNE initialises batch normalisation when a file has no arrays for it.
  bn_->initialize();
}

void FullyConnectedLayer::load_shared(const WeightArrays& wa, Connection& c) {
  const std::string what =
      "network file weight '" + wa.input_layer + "' -> '" + wa.output_layer + "'";
  if (wa.input_layer != c.source->name() || wa.output_layer != name())
    throw DataError(what + ": expected '" + c.source->name() + "' -> '" + name() +
                    "' at this position");
  const std::string expected = "'" + c.shared_input + "' -> '" + c.shared_output + "'" +
                               (c.transposed ? " (transposed)" : "");
  if (!wa.shared)
    throw DataError(what + ": stored with its own matrix, but layer '" + name() + "' shares " +
                    expected);
  if (wa.source_input_layer != c.shared_input || wa.source_output_layer != c.shared_output ||
      wa.transposed != c.transposed)
    throw DataError(what + ": shares '" + wa.source_input_layer + "' -> '" +
                    wa.source_output_layer + "'" + (wa.transposed ? " (transposed)" : "") +
                    ", but layer '" + name() + "' shares " + expected);
  if (wa.bias.size() != c.bias.size())
    throw DataError(what + ": " + std::to_string(wa.bias.size()) + " biases, expected " +
                    std::to_string(c.bias.size()));
  c.bias.value.upload(wa.bias);
  c.bias.locked = wa.locked;
  c.bias.state.clear();
  for (const auto& v : wa.bias_state) {
    if (v.size() != c.bias.size())
      throw DataError(what + ": optimizer state of '" + c.bias.name + "' has " +
                      std::to_string(v.size()) + " values, expected " +
                      std::to_string(c.bias.size()));
    c.bias.state.emplace_back(*backend_, v.size());
    c.bias.state.back().upload(v);
  }
}

Connection& FullyConnectedLayer::connect(Backend& backend, Layer* source) {
  auto c = std::make_unique<Connection>();
  c->source = source;
  const size_t n_in = source->units(), n_out = pre_units();
  bool shared = false;
  for (const auto& s : spec_.shared_weights) shared |= s.input_layer == source->name();
  c->weights.name = name() + "<-" + source->name() + ":weights";
  if (!shared) {  // a shared connection gets its matrix in resolve_shared_weights()
    c->weights.value.resize(backend, n_in * n_out);
    c->weights.grad.resize(backend, n_in * n_out);
    c->weights.max_column_norm = spec_.weight_norm;
    c->weights.norm_rows = static_cast<uint32_t>(n_in);
  }
  c->bias.name = name() + "<-" + source->name() + ":bias";
  c->bias.value.resize(backend, n_out);
  c->bias.grad.resize(backend, n_out);
  c->bias.regularize = false;
  connections_.push_back(std::move(c));
  return *connections_.back();
}

Connection* FullyConnectedLayer::connection_from(const std::string& source) {
  for (auto& c : connections_)
    if (c->source->name() == source) return c.get();
  return nullptr;
}

void FullyConnectedLayer::resolve_shared_weights(
    const std::function<Layer*(const std::string&)>& find, const std::string& where) {
  for (size_t k = 0; k < spec_.shared_weights.size(); ++k) {
    const SharedWeightSpec& s = spec_.shared_weights[k];
    const std::string entry = where + ": SharedWeights[" + std::to_string(k) + "]: ";
    const std::string source_weight =
        "'" + s.source_input_layer + "' -> '" + s.source_output_layer + "'";
    Connection* c = connection_from(s.input_layer);
    if (!c)
      throw ConfigError(entry + "InputLayer '" + s.input_layer + "' is not a source of layer '" +
                        name() + "'");
    if (c->shared)
      throw ConfigError(entry + "the weight from '" + s.input_layer +
                        "' is already shared by an earlier entry");
    auto* owner = dynamic_cast<FullyConnectedLayer*>(find(s.source_output_layer));
    if (!owner)
      throw ConfigError(entry + "SourceOutputLayer '" + s.source_output_layer +
                        "' is not a fully connected Hidden or Output layer; only fully "
                        "connected weights can be shared");
    Connection* oc = owner->connection_from(s.source_input_layer);
    if (!oc) throw ConfigError(entry + "there is no weight " + source_weight + " to share");
    if (oc == c) throw ConfigError(entry + "the weight " + source_weight + " cannot share itself");
    bool oc_shared = oc->shared != nullptr;
    for (const auto& os : owner->spec().shared_weights)
      oc_shared |= os.input_layer == s.source_input_layer;
    if (oc_shared)
      throw ConfigError(entry + "the weight " + source_weight +
                        " is itself shared; name the weight that owns the matrix");
    // The source matrix is [a][b] = [source input units][source output units].
    const uint64_t a = oc->source->units(), b = owner->pre_units();
    const uint64_t n_in = c->source->units(), n_out = pre_units();
    const bool fits = s.transposed ? (n_in == b && n_out == a) : (n_in == a && n_out == b);
    if (!fits)
      throw ConfigError(
          entry + "the weight " + source_weight + " is " + std::to_string(a) + " x " +
          std::to_string(b) + " (inputs x outputs)" + (s.transposed ? ", transposed " : ", ") +
          std::to_string(s.transposed ? b : a) + " x " + std::to_string(s.transposed ? a : b) +
          ", but '" + s.input_layer + "' -> '" + name() + "' needs " + std::to_string(n_in) +
          " x " + std::to_string(n_out));
    c->shared = oc;
    c->transposed = s.transposed;
    c->shared_input = s.source_input_layer;
    c->shared_output = s.source_output_layer;
    ++oc->users;
  }
}

void FullyConnectedLayer::zero_shared_gradients(Backend& backend) {
  for (auto& c : connections_)
    if (!c->shared && c->users > 1) backend.fill(c->weights.grad.data(), c->weights.size(), 0.0f);
}

std::vector<Parameter*> FullyConnectedLayer::parameters() {
  std::vector<Parameter*> out;
  for (auto& c : connections_) {
    if (!c->shared) out.push_back(&c->weights);  // a shared matrix is its owner's parameter
    out.push_back(&c->bias);
  }
  if (bn_)
    for (Parameter* p : bn_->parameters()) out.push_back(p);
  return out;
}

void FullyConnectedLayer::allocate(Backend& backend, uint32_t max_rows) {
  Layer::allocate(backend, max_rows);
  const size_t n_z = size_t(max_rows) * pre_units();
  if (bn_ || maxout()) z_.resize(backend, n_z);
  if (maxout()) {
    if (bn_) z_norm_.resize(backend, n_z);
    z_delta_.resize(backend, n_z);
    winner_.resize(backend, size_t(max_rows) * units());
  }
}

void FullyConnectedLayer::forward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows, n_out = pre_units();
  // With batch normalisation z is kept (backward needs it) and normalised into a_ (or, for
  // MaxOut, into z_norm_, whose groups are then reduced into a_).
  float* z = (bn_ || maxout()) ? z_.data() : a_.data();
  bool first = true;
  for (auto& c : connections_) {
    be.broadcast_bias(z, c->bias.value.data(), rows, n_out, /*accumulate=*/!first);
    first = false;
    Layer* src = c->source;
    const float* w = c->matrix().value.data();
    if (src->has_sparse_output()) {
      if (c->transposed)
        be.sparse_matmul_transposed(src->sparse_output(), w, n_out, z);
      else
        be.sparse_matmul(src->sparse_output(), w, n_out, z);
    } else {
      // W is [n_in][n_out], or [n_out][n_in] used transposed.
      const int n_in = static_cast<int>(src->units());
      be.gemm(false, c->transposed, rows, n_out, n_in, 1.0f, src->activations(), n_in, w,
              c->transposed ? n_in : int(n_out), 1.0f, z, n_out);
    }
  }
  if (first) be.fill(z, size_t(rows) * n_out, 0.0f);
  const size_t n = size_t(rows) * units();
  if (maxout()) {
    const float* pieces = z;
    if (bn_) {
      bn_->forward(rows, ctx.training, z, z_norm_.data());
      pieces = z_norm_.data();
    }
    be.maxout_forward(pieces, n, uint32_t(spec_.maxout_k), 1, a_.data(), winner_.data());
    for (Layer* skip : skips_) be.axpy(n, 1.0f, skip->activations(), a_.data());
  } else {
    for (Layer* skip : skips_) be.axpy(n, 1.0f, skip->activations(), z);
    if (bn_) bn_->forward(rows, ctx.training, z, a_.data());
    be.activate(activation_params(spec_), a_.data(), rows, n_out);
  }
  if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden) {
    be.copy(pre_dropout_.data(), a_.data(), n * sizeof(float));
    be.dropout(a_.data(), n, spec_.p_dropout, ctx.seed, ctx.step * 4096 + index());
  }
}

void FullyConnectedLayer::backward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  float* d = delta_.data();
  // Output layers already hold dE/dz (from the loss; dE/da for MaxOut); hidden layers dE/da.
  if (kind() != LayerKind::Output) {
    // (The sparseness penalty's derivative is already in d: Network::backward adds it.)
    const float* a = a_.data();
    if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden) {
      be.dropout_backward(d, n, spec_.p_dropout, ctx.seed, ctx.step * 4096 + index());
      a = pre_dropout_.data();
    }
    if (!maxout()) be.activation_backward(activation_params(spec_), a, d, rows, units());
  }
  if (maxout()) {
    // Skips were added after the max, so they receive dE/da; the pieces get it at the winners.
    for (Layer* skip : skips_)
      if (skip->needs_delta()) be.axpy(n, 1.0f, d, skip->delta());
    be.maxout_backward(d, winner_.data(), n, uint32_t(spec_.maxout_k), 1, z_delta_.data());
    d = z_delta_.data();
  }
  const uint32_t n_out = pre_units();
  // DeltaNorm caps each example's delta before it reaches the weights (DSSTNE's order: after
  // the activation derivative, before batch normalisation's backward).
  if (spec_.delta_norm > 0.0f) be.clip_row_norms(d, rows, n_out, spec_.delta_norm);
  if (bn_) bn_->backward(rows, z_.data(), d, d);  // in the mode of the forward
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (auto& c : connections_) {
    Layer* src = c->source;
    Parameter& m = c->matrix();
    float* gw = m.grad.data();
    // A matrix used by several connections sums their gradients (zeroed by the Network first).
    const bool accumulate = c->matrix_users() > 1;
    if (src->has_sparse_output()) {
      if (!accumulate) be.fill(gw, m.grad.size(), 0.0f);
      if (c->transposed)
        be.sparse_weight_gradient_transposed(src->sparse_output(), d, n_out, inv_rows, gw);
      else
        be.sparse_weight_gradient(src->sparse_output(), d, n_out, inv_rows, gw);
    } else {
      const int n_in = static_cast<int>(src->units());
      const float beta = accumulate ? 1.0f : 0.0f;
      if (c->transposed)  // G[n_out][n_in] = delta^T x
        be.gemm(true, false, n_out, n_in, rows, inv_rows, d, n_out, src->activations(), n_in, beta,
                gw, n_in);
      else  // G[n_in][n_out] = x^T delta
        be.gemm(true, false, n_in, n_out, rows, inv_rows, src->activations(), n_in, d, n_out, beta,
                gw, n_out);
    }
    be.column_sums(d, rows, n_out, inv_rows, 0.0f, c->bias.grad.data());
    if (src->needs_delta()) {
      const int n_in = static_cast<int>(src->units());
      const float* w = m.value.data();
      be.gemm(false, !c->transposed, rows, n_in, n_out, 1.0f, d, n_out, w,
              c->transposed ? n_in : int(n_out), 1.0f, src->delta(), n_in);
    }
  }
  if (!maxout())
    for (Layer* skip : skips_)
      if (skip->needs_delta()) be.axpy(n, 1.0f, d, skip->delta());
}

}  // namespace nn
