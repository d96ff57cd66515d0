// The logic fully connected and convolutional layers share (see weighted_layer.h): initial
// weights, the file form of connections (shared or not), SharedWeights resolution, and the
// activation path between z and a in both directions.
#include "layers/weighted_layer.h"

#include <cmath>

#include "core/error.h"
#include "layers/convolutional_layer.h"
#include "layers/fully_connected_layer.h"

namespace nn {
namespace {

std::string weight_what(const WeightArrays& wa) {
  return "network file weight '" + wa.input_layer + "' -> '" + wa.output_layer + "'";
}

// Replaces p's optimizer state by `states`, each of p's size in files (DataError prefixed with
// `what`); held padded where p is.
void load_state(Backend& backend, const std::string& what, Parameter& p,
                const std::vector<std::vector<float>>& states) {
  p.state.clear();
  for (const auto& v : states) {
    if (v.size() != p.logical_size())
      throw DataError(what + ": optimizer state of '" + p.name + "' has " +
                      std::to_string(v.size()) + " values, expected " +
                      std::to_string(p.logical_size()));
    p.state.emplace_back(backend, p.size());
    p.upload_logical(p.state.back(), v.data(), v.size());
  }
}

}  // namespace

std::vector<float> initial_weights(const LayerSpec& l, size_t n_in, size_t n_out, uint64_t seed,
                                   uint64_t stream, size_t col_first, size_t col_count) {
  if (col_count == SIZE_MAX) col_count = n_out - col_first;
  std::vector<float> w(n_in * col_count);
  const double s = l.weight_init_scale;
  // Weight (i, j) of the whole [n_in][n_out] matrix draws from counter i * n_out + j alone.
  auto each = [&](auto&& value_at) {
    for (size_t i = 0; i < n_in; ++i)
      for (size_t j = 0; j < col_count; ++j)
        w[i * col_count + j] = static_cast<float>(value_at(uint64_t(i) * n_out + col_first + j));
  };
  auto uniform = [&](double lo, double hi) {
    each([&](uint64_t k) { return lo + (hi - lo) * uniform53_at(seed, stream, k); });
  };
  // Box-Muller from two counters of the position (2k and 2k + 1).
  auto normal = [&](uint64_t k) {
    double u1 = uniform53_at(seed, stream, 2 * k), u2 = uniform53_at(seed, stream, 2 * k + 1);
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
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
      each([&](uint64_t k) { return s * normal(k); });
      break;
    case WeightInit::SELU:
      each([&](uint64_t k) { return normal(k) / std::sqrt(double(n_in)); });
      break;
    case WeightInit::Constant:
      each([&](uint64_t) { return s; });
      break;
  }
  return w;
}

void load_connection(Backend& backend, const WeightArrays& wa, const std::string& input,
                     const std::string& output, Parameter& weights, Parameter& bias) {
  const std::string what = weight_what(wa);
  if (wa.input_layer != input || wa.output_layer != output)
    throw DataError(what + ": expected '" + input + "' -> '" + output + "' at this position");
  if (wa.weights.size() != weights.logical_size() || wa.bias.size() != bias.logical_size())
    throw DataError(what + ": " + std::to_string(wa.weights.size()) + " weights and " +
                    std::to_string(wa.bias.size()) + " biases, expected " +
                    std::to_string(weights.logical_size()) + " and " +
                    std::to_string(bias.logical_size()));
  weights.upload_logical(weights.value, wa.weights.data(), wa.weights.size());
  bias.upload_logical(bias.value, wa.bias.data(), wa.bias.size());
  weights.locked = bias.locked = wa.locked;
  load_state(backend, what, weights, wa.weight_state);
  load_state(backend, what, bias, wa.bias_state);
}

WeightArrays save_connection(const std::string& input, const std::string& output, uint64_t n_out,
                             uint64_t n_in, float norm, const Parameter& weights,
                             const Parameter& bias, bool borrow) {
  WeightArrays wa;
  wa.input_layer = input;
  wa.output_layer = output;
  wa.width = n_out;
  wa.height = n_in;
  wa.norm = norm;
  wa.locked = weights.locked;
  // Padded rows are copied without their padding; only unpadded arrays can be pointed at.
  bool in_place =
      borrow && weights.value.host_readable() && !weights.value.empty() && !weights.padding.on();
  for (const auto& s : weights.state) in_place = in_place && s.host_readable();
  if (in_place) {
    wa.weights_run = {weights.value.data(), weights.value.size()};
    for (const auto& s : weights.state) wa.weight_state_runs.push_back({s.data(), s.size()});
  } else {
    wa.weights = weights.logical_values(weights.value);
    for (const auto& s : weights.state) wa.weight_state.push_back(weights.logical_values(s));
  }
  wa.bias = bias.logical_values(bias.value);
  for (const auto& s : bias.state) wa.bias_state.push_back(bias.logical_values(s));
  return wa;
}

// ---- parameters ------------------------------------------------------------------------------

template <class C>
uint32_t WeightedLayer<C>::pieces_per_unit() const {
  return maxout() ? static_cast<uint32_t>(spec_.maxout_k) : 1;
}

template <class C>
uint32_t WeightedLayer<C>::pre_units() const {
  return units() * pieces_per_unit();
}

template <class C>
void WeightedLayer<C>::start_build(Backend& backend) {
  backend_ = &backend;
  if (maxout() && spec_.maxout_k < 1)
    throw ConfigError("layer '" + name() + "': Activation MaxOut needs Maxout.k >= 1, not " +
                      std::to_string(spec_.maxout_k));
}

template <class C>
C& WeightedLayer<C>::add_connection(std::unique_ptr<C> c, size_t weight_size, size_t bias_size,
                                    uint32_t norm_rows, bool norm_over_rows) {
  Backend& backend = *backend_;
  const std::string& source = c->source->name();
  bool shared = false;
  for (const auto& s : spec_.shared_weights) shared |= s.input_layer == source;
  c->weights.name = name() + "<-" + source + ":weights";
  if (!shared) {  // a shared connection gets its weights in resolve_shared_weights()
    c->weights.value.resize(backend, weight_size);
    c->weights.grad.resize(backend, weight_size);
    c->weights.max_column_norm = spec_.weight_norm;
    c->weights.norm_rows = norm_rows;
    c->weights.norm_over_rows = norm_over_rows;
  }
  c->bias.name = name() + "<-" + source + ":bias";
  c->bias.value.resize(backend, bias_size);
  c->bias.grad.resize(backend, bias_size);
  c->bias.regularize = false;
  connections_.push_back(std::move(c));
  return *connections_.back();
}

template <class C>
void WeightedLayer<C>::initialize(uint64_t seed) {
  for (size_t k = 0; k < connections_.size(); ++k) {
    auto& c = connections_[k];
    // Shared weights are initialised by their owner; only the bias is this connection's.
    if (!c->shared) {
      const auto [fan_in, fan_out] = weight_fans(*c);
      const std::vector<float> w =
          initial_weights(spec_, fan_in, fan_out, seed, weight_stream(index(), uint32_t(k)),
                          shard_.first, c->weights.logical_size() / fan_in);
      c->weights.upload_logical(c->weights.value, w.data(), w.size());
    }
    const std::vector<float> b(c->bias.logical_size(), spec_.bias_init);
    c->bias.upload_logical(c->bias.value, b.data(), b.size());
  }
  if (bn_) bn_->initialize();
}

template <class C>
std::vector<Parameter*> WeightedLayer<C>::parameters() {
  std::vector<Parameter*> out;
  for (auto& c : connections_) {
    if (!c->shared) out.push_back(&c->weights);  // shared weights are their owner's parameter
    out.push_back(&c->bias);
  }
  if (bn_)
    for (Parameter* p : bn_->parameters()) out.push_back(p);
  return out;
}

template <class C>
std::vector<DeviceArray<float>*> WeightedLayer<C>::inference_arrays() {
  std::vector<DeviceArray<float>*> out = Layer::inference_arrays();
  if (bn_)
    for (DeviceArray<float>* a : bn_->statistics()) out.push_back(a);
  return out;
}

template <class C>
C* WeightedLayer<C>::connection_from(const std::string& source) {
  for (auto& c : connections_)
    if (c->source->name() == source) return c.get();
  return nullptr;
}

// ---- file form -------------------------------------------------------------------------------

template <class C>
void WeightedLayer<C>::save(NetworkFile& file) const {
  for (const auto& c : connections_) {
    const auto shape = file_shape(*c);
    WeightArrays wa;
    if (c->shared) {
      // A shared weight stores its bias only; the weights belong to the source weight.
      wa.input_layer = c->source->name();
      wa.output_layer = name();
      wa.norm = spec_.weight_norm;
      wa.shared = true;
      wa.transposed = c->transposed;
      wa.source_input_layer = c->shared_input;
      wa.source_output_layer = c->shared_output;
      wa.locked = c->bias.locked;
      wa.bias = c->bias.logical_values(c->bias.value);
      for (const auto& st : c->bias.state) wa.bias_state.push_back(c->bias.logical_values(st));
    } else {
      wa = save_connection(c->source->name(), name(), shape[0], shape[1], spec_.weight_norm,
                           c->weights, c->bias, file.borrow_host_arrays);
    }
    wa.width = shape[0];
    wa.height = shape[1];
    wa.length = shape[2];
    wa.depth = shape[3];
    wa.breadth = shape[4];
    file.weights.push_back(std::move(wa));
  }
  if (bn_) file.layers.push_back(bn_->save());
}

template <class C>
void WeightedLayer<C>::load(const NetworkFile& file, size_t& cursor) {
  for (auto& c : connections_) {
    if (cursor >= file.weights.size())
      throw DataError("network file has " + std::to_string(file.weights.size()) +
                      " weights; layer '" + name() + "' needs more");
    const WeightArrays& wa = file.weights[cursor++];
    check_file_shape(*c, wa);
    if (c->shared) {
      load_shared(wa, *c);
      continue;
    }
    if (wa.shared)
      throw DataError(weight_what(wa) + ": stored as shared with '" + wa.source_input_layer +
                      "' -> '" + wa.source_output_layer + "', but layer '" + name() +
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

template <class C>
void WeightedLayer<C>::load_shared(const WeightArrays& wa, C& c) {
  const std::string what = weight_what(wa);
  if (wa.input_layer != c.source->name() || wa.output_layer != name())
    throw DataError(what + ": expected '" + c.source->name() + "' -> '" + name() +
                    "' at this position");
  const std::string expected = "'" + c.shared_input + "' -> '" + c.shared_output + "'" +
                               (c.transposed ? " (transposed)" : "");
  if (!wa.shared)
    throw DataError(what + ": stored with its own " + weights_noun() + ", but layer '" + name() +
                    "' shares " + expected);
  if (wa.source_input_layer != c.shared_input || wa.source_output_layer != c.shared_output ||
      wa.transposed != c.transposed)
    throw DataError(what + ": shares '" + wa.source_input_layer + "' -> '" +
                    wa.source_output_layer + "'" + (wa.transposed ? " (transposed)" : "") +
                    ", but layer '" + name() + "' shares " + expected);
  if (wa.bias.size() != c.bias.logical_size())
    throw DataError(what + ": " + std::to_string(wa.bias.size()) + " biases, expected " +
                    std::to_string(c.bias.logical_size()));
  c.bias.upload_logical(c.bias.value, wa.bias.data(), wa.bias.size());
  c.bias.locked = wa.locked;
  load_state(*backend_, what, c.bias, wa.bias_state);
}

// ---- SharedWeights -----------------------------------------------------------------------------

template <class C>
void WeightedLayer<C>::resolve_shared_weights(const std::function<Layer*(const std::string&)>& find,
                                              const std::string& where) {
  for (size_t k = 0; k < spec_.shared_weights.size(); ++k) {
    const SharedWeightSpec& s = spec_.shared_weights[k];
    const std::string entry = where + ": SharedWeights[" + std::to_string(k) + "]: ";
    const std::string source_weight =
        "'" + s.source_input_layer + "' -> '" + s.source_output_layer + "'";
    C* c = connection_from(s.input_layer);
    if (!c)
      throw ConfigError(entry + "InputLayer '" + s.input_layer + "' is not a source of layer '" +
                        name() + "'");
    if (c->shared)
      throw ConfigError(entry + "the weight from '" + s.input_layer +
                        "' is already shared by an earlier entry");
    check_shared_entry(entry, s);
    Layer* owner_layer = find(s.source_output_layer);
    auto* owner = dynamic_cast<WeightedLayer<C>*>(owner_layer);
    if (!owner) throw ConfigError(entry + foreign_owner(owner_layer, s));
    C* oc = owner->connection_from(s.source_input_layer);
    if (!oc) throw ConfigError(entry + "there is no weight " + source_weight + " to share");
    if (oc == c) throw ConfigError(entry + "the weight " + source_weight + " cannot share itself");
    bool oc_shared = oc->shared != nullptr;
    for (const auto& os : owner->spec().shared_weights)
      oc_shared |= os.input_layer == s.source_input_layer;
    if (oc_shared)
      throw ConfigError(entry + "the weight " + source_weight +
                        " is itself shared; name the weight that owns the " + weights_noun());
    check_shared_shape(entry, s, *c, *oc, *owner);
    c->shared = oc;
    c->transposed = s.transposed;
    c->shared_input = s.source_input_layer;
    c->shared_output = s.source_output_layer;
    ++oc->users;
  }
}

template <class C>
void WeightedLayer<C>::zero_shared_gradients(Backend& backend) {
  for (auto& c : connections_)
    if (!c->shared && c->users > 1) backend.fill(c->weights.grad.data(), c->weights.size(), 0.0f);
}

// ---- z <-> a ---------------------------------------------------------------------------------

template <class C>
void WeightedLayer<C>::allocate(Backend& backend, uint32_t max_rows) {
  Layer::allocate(backend, max_rows);
  const size_t n_z = size_t(max_rows) * pre_units();
  if (bn_ || maxout()) z_.resize(backend, n_z);
  if (maxout()) {
    if (bn_) z_norm_.resize(backend, n_z);
    z_delta_.resize(backend, n_z);
    winner_.resize(backend, size_t(max_rows) * units());
  }
}

template <class C>
void WeightedLayer<C>::finish_forward(const LayerContext& ctx, float* z) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  // With batch normalisation z is kept (backward needs it) and normalised into a_ (or, for
  // MaxOut, into z_norm_, whose groups are then reduced into a_).
  if (maxout()) {
    const float* pieces = z;
    if (bn_) {
      bn_->forward(rows, ctx.training, z, z_norm_.data(), ctx.comm);
      pieces = z_norm_.data();
    }
    const uint32_t inner = maxout_inner();
    be.maxout_forward(pieces, n / inner, uint32_t(spec_.maxout_k), inner, a_.data(),
                      winner_.data());
    for (Layer* skip : skips_) be.axpy(n, 1.0f, skip->activations(), a_.data());
  } else {
    for (Layer* skip : skips_) be.axpy(n, 1.0f, skip->activations(), z);
    if (bn_) bn_->forward(rows, ctx.training, z, a_.data(), ctx.comm);
    // Deferred: the loss applies the activation (OutputLosses::accumulate, fused).
    if (!(ctx.defer_output_activation && activation_deferrable())) {
      be.activate(kernel_activation(), a_.data(), rows, units());
    }
  }
  if (bn_) bn_trained_ = ctx.training;
  if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden) {
    be.copy(pre_dropout_.data(), a_.data(), n * sizeof(float));
    be.dropout(a_.data(), n, spec_.p_dropout, ctx.seed, dropout_stream(ctx, index(), units()));
  }
}

template <class C>
float* WeightedLayer<C>::start_backward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  float* d = delta_.data();
  // Output layers already hold dE/dz (from the loss; dE/da for MaxOut); hidden layers dE/da.
  if (kind() != LayerKind::Output) {
    // (The sparseness penalty's derivative is already in d: Network::backward adds it.)
    const float* a = a_.data();
    if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden) {
      be.dropout_backward(d, n, spec_.p_dropout, ctx.seed, dropout_stream(ctx, index(), units()));
      a = pre_dropout_.data();
    }
    if (!maxout()) be.activation_backward(activation_params(spec_), a, d, rows, units());
  }
  if (maxout()) {
    // Skips were added after the max, so they receive dE/da; the pieces get it at the winners.
    for (Layer* skip : skips_)
      if (skip->needs_delta()) be.axpy(n, 1.0f, d, skip->delta());
    const uint32_t inner = maxout_inner();
    be.maxout_backward(d, winner_.data(), n / inner, uint32_t(spec_.maxout_k), inner,
                       z_delta_.data());
    d = z_delta_.data();
  }
  // DeltaNorm caps each example's delta before it reaches the weights (DSSTNE's order: after
  // the activation derivative, before batch normalisation's backward).
  // (Padded rows: the norm over the whole stride, whose padding holds 0.)
  if (spec_.delta_norm > 0.0f) be.clip_row_norms(d, rows, z_width(), spec_.delta_norm);
  if (bn_) bn_->backward(rows, z_.data(), d, d, ctx.comm);  // in the mode of the forward
  return d;
}

template <class C>
void WeightedLayer<C>::finish_backward(const LayerContext& ctx, const float* dz) {
  if (maxout()) return;  // the skips got dE/da in start_backward()
  const size_t n = size_t(ctx.rows) * units();
  for (Layer* skip : skips_)
    if (skip->needs_delta()) ctx.backend.axpy(n, 1.0f, dz, skip->delta());
}

template class WeightedLayer<Connection>;
template class WeightedLayer<ConvConnection>;

}  // namespace nn
