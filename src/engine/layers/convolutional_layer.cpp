// Convolutional layer: parameters, shared filter banks, file form, forward and backward through
// the Backend.
#include "layers/convolutional_layer.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "layers/conv_geometry.h"
#include "layers/fully_connected_layer.h"

namespace nn {

std::array<uint64_t, 5> conv_weight_dims(const ConvGeometry& g) {
  std::array<uint64_t, 5> d{{g.out_channels, g.in_channels, 1, 1, 1}};
  // Kernel extents from the outermost axis in (cuDNN's filter order).
  for (uint32_t a = 0; a < g.dims; ++a) d[2 + a] = g.kernel[g.dims - 1 - a];
  return d;
}

ConvolutionalLayer::ConvolutionalLayer(const LayerSpec& spec, uint32_t index)
    : Layer(spec, index) {}

void ConvolutionalLayer::build(Backend& backend) {
  backend_ = &backend;
  const std::string at = "layer '" + name() + "'";
  for (Layer* src : sources_) {
    if (src->has_sparse_output())
      throw ConfigError(at + ": source '" + src->name() +
                        "' is a sparse input; Convolutional layers need dense sources");
    auto c = std::make_unique<ConvConnection>();
    c->source = src;
    c->geometry = layer_geometry(spec_, src->spec());
    const ConvGeometry& g = c->geometry;
    if (g.out_size() != units() || g.in_size() != src->units())
      throw ConfigError(at + ": reading '" + src->name() + "' (" + std::to_string(src->units()) +
                        " units) with its kernel gives " + std::to_string(g.out_size()) +
                        " outputs, but the layer has " + std::to_string(units()) +
                        " units (sizes not derived? see model/layer_dimensions.h)");
    c->weights.name = name() + "<-" + src->name() + ":weights";
    bool shared = false;
    for (const auto& s : spec_.shared_weights) shared |= s.input_layer == src->name();
    if (!shared) {  // a shared connection gets its bank in resolve_shared_weights()
      c->weights.value.resize(backend, g.weight_size());
      c->weights.grad.resize(backend, g.weight_size());
      // WeightNorm: one filter per output channel, i.e. per row of the bank.
      c->weights.max_column_norm = spec_.weight_norm;
      c->weights.norm_rows = g.out_channels;
      c->weights.norm_over_rows = true;
    }
    c->bias.name = name() + "<-" + src->name() + ":bias";
    c->bias.value.resize(backend, g.out_channels);
    c->bias.grad.resize(backend, g.out_channels);
    c->bias.regularize = false;
    connections_.push_back(std::move(c));
  }
  if (spec_.batch_normalization && !connections_.empty()) {
    const ConvGeometry& g = connections_.front()->geometry;
    bn_ = std::make_unique<BatchNorm>(backend, name(), g.out_channels, uint32_t(g.out_plane()));
  }
}

void ConvolutionalLayer::initialize(Rng& rng) {
  for (auto& c : connections_) {
    const ConvGeometry& g = c->geometry;
    // Fan-in = input channels x kernel volume, fan-out = output channels (DSSTNE uses the whole
    // layer sizes, which makes image-sized layers start with near-zero filters).
    // A shared bank is initialised by its owner; only the bias is this connection's.
    if (!c->shared)
      c->weights.value.upload(
          initial_weights(spec_, g.in_channels * g.kernel_volume(), g.out_channels, rng));
    c->bias.value.upload(std::vector<float>(g.out_channels, spec_.bias_init));
  }
  if (bn_) bn_->initialize();
}

void ConvolutionalLayer::save(NetworkFile& file) const {
  for (const auto& c : connections_) {
    const ConvGeometry& g = c->geometry;
    WeightArrays wa;
    if (c->shared) {
      // A shared weight stores its bias only; the bank belongs to the source weight.
      wa.input_layer = c->source->name();
      wa.output_layer = name();
      wa.norm = spec_.weight_norm;
      wa.shared = true;
      wa.source_input_layer = c->shared_input;
      wa.source_output_layer = c->shared_output;
      wa.locked = c->bias.locked;
      wa.bias = c->bias.value.to_host();
      for (const auto& st : c->bias.state) wa.bias_state.push_back(st.to_host());
    } else {
      wa = save_connection(c->source->name(), name(), g.out_channels, g.in_channels,
                           spec_.weight_norm, c->weights, c->bias);
    }
    const auto d = conv_weight_dims(g);
    wa.width = d[0];
    wa.height = d[1];
    wa.length = d[2];
    wa.depth = d[3];
    wa.breadth = d[4];
    file.weights.push_back(std::move(wa));
  }
  if (bn_) file.layers.push_back(bn_->save());
}

void ConvolutionalLayer::load(const NetworkFile& file, size_t& cursor) {
  for (auto& c : connections_) {
    if (cursor >= file.weights.size())
      throw DataError("network file has " + std::to_string(file.weights.size()) +
                      " weights; layer '" + name() + "' needs more");
    const WeightArrays& wa = file.weights[cursor++];
    const std::string what =
        "network file weight '" + wa.input_layer + "' -> '" + wa.output_layer + "'";
    const auto want = conv_weight_dims(c->geometry);
    const std::array<uint64_t, 5> got{{wa.width, wa.height, wa.length, wa.depth, wa.breadth}};
    if (got != want && wa.input_layer == c->source->name() && wa.output_layer == name()) {
      auto text = [](const std::array<uint64_t, 5>& v) {
        std::string s;
        for (size_t i = 0; i < v.size(); ++i) s += (i ? "x" : "") + std::to_string(v[i]);
        return s;
      };
      throw DataError(what + ": width x height x length x depth x breadth is " + text(got) +
                      ", expected " + text(want) +
                      " (out channels x in channels x kernel extents, outermost axis first)");
    }
    if (c->shared) {
      load_shared(wa, *c);
      continue;
    }
    if (wa.shared)
      throw DataError(what + ": stored as shared with '" + wa.source_input_layer + "' -> '" +
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
  bn_->initialize();  // as DSSTNE does when a file has no arrays for it
}

void ConvolutionalLayer::load_shared(const WeightArrays& wa, ConvConnection& c) {
  const std::string what =
      "network file weight '" + wa.input_layer + "' -> '" + wa.output_layer + "'";
  if (wa.input_layer != c.source->name() || wa.output_layer != name())
    throw DataError(what + ": expected '" + c.source->name() + "' -> '" + name() +
                    "' at this position");
  const std::string expected = "'" + c.shared_input + "' -> '" + c.shared_output + "'";
  if (!wa.shared)
    throw DataError(what + ": stored with its own filters, but layer '" + name() + "' shares " +
                    expected);
  if (wa.source_input_layer != c.shared_input || wa.source_output_layer != c.shared_output ||
      wa.transposed)
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

ConvConnection* ConvolutionalLayer::connection_from(const std::string& source) {
  for (auto& c : connections_)
    if (c->source->name() == source) return c.get();
  return nullptr;
}

namespace {

// "2 -> 3 channels, kernel 3x3, stride 1x1" (kernel and stride in Kernel's x, y, z order).
std::string describe_filters(const ConvGeometry& g) {
  auto extents = [&](const std::array<uint32_t, 3>& v) {
    std::string s;
    for (uint32_t a = 0; a < g.dims; ++a) s += (a ? "x" : "") + std::to_string(v[a]);
    return s;
  };
  return std::to_string(g.in_channels) + " -> " + std::to_string(g.out_channels) +
         " channels, kernel " + extents(g.kernel) + ", stride " + extents(g.stride);
}

bool same_filters(const ConvGeometry& a, const ConvGeometry& b) {
  return a.dims == b.dims && a.in_channels == b.in_channels && a.out_channels == b.out_channels &&
         a.kernel == b.kernel && a.stride == b.stride;
}

}  // namespace

void ConvolutionalLayer::resolve_shared_weights(
    const std::function<Layer*(const std::string&)>& find, const std::string& where) {
  for (size_t k = 0; k < spec_.shared_weights.size(); ++k) {
    const SharedWeightSpec& s = spec_.shared_weights[k];
    const std::string entry = where + ": SharedWeights[" + std::to_string(k) + "]: ";
    const std::string source_weight =
        "'" + s.source_input_layer + "' -> '" + s.source_output_layer + "'";
    ConvConnection* c = connection_from(s.input_layer);
    if (!c)
      throw ConfigError(entry + "InputLayer '" + s.input_layer + "' is not a source of layer '" +
                        name() + "'");
    if (c->shared)
      throw ConfigError(entry + "the weight from '" + s.input_layer +
                        "' is already shared by an earlier entry");
    if (s.transposed)
      throw ConfigError(entry +
                        "Transposed is not supported on Convolutional layers: a filter "
                        "bank [out channels][in channels][kernel] has no transpose that is "
                        "one (DSSTNE cannot transpose 3-D weights either)");
    Layer* owner_layer = find(s.source_output_layer);
    auto* owner = dynamic_cast<ConvolutionalLayer*>(owner_layer);
    if (!owner)
      throw ConfigError(entry + "SourceOutputLayer '" + s.source_output_layer + "' is " +
                        (!owner_layer ? std::string("not a layer")
                         : owner_layer->kind() == LayerKind::Input
                             ? std::string("an Input layer")
                             : std::string("a ") + to_string(owner_layer->spec().type) + " layer") +
                        "; a Convolutional layer can only share another Convolutional layer's "
                        "filters");
    ConvConnection* oc = owner->connection_from(s.source_input_layer);
    if (!oc) throw ConfigError(entry + "there is no weight " + source_weight + " to share");
    if (oc == c) throw ConfigError(entry + "the weight " + source_weight + " cannot share itself");
    bool oc_shared = oc->shared != nullptr;
    for (const auto& os : owner->spec().shared_weights)
      oc_shared |= os.input_layer == s.source_input_layer;
    if (oc_shared)
      throw ConfigError(entry + "the weight " + source_weight +
                        " is itself shared; name the weight that owns the filters");
    if (!same_filters(oc->geometry, c->geometry))
      throw ConfigError(entry + "the filters " + source_weight + " are " +
                        describe_filters(oc->geometry) + " (" + std::to_string(oc->geometry.dims) +
                        "-D), but '" + s.input_layer + "' -> '" + name() + "' needs " +
                        describe_filters(c->geometry) + " (" + std::to_string(c->geometry.dims) +
                        "-D); shared filters need the same channels, kernel and stride");
    c->shared = oc;
    c->shared_input = s.source_input_layer;
    c->shared_output = s.source_output_layer;
    ++oc->users;
  }
}

void ConvolutionalLayer::zero_shared_gradients(Backend& backend) {
  for (auto& c : connections_)
    if (!c->shared && c->users > 1) backend.fill(c->weights.grad.data(), c->weights.size(), 0.0f);
}

std::vector<Parameter*> ConvolutionalLayer::parameters() {
  std::vector<Parameter*> out;
  for (auto& c : connections_) {
    if (!c->shared) out.push_back(&c->weights);  // a shared bank is its owner's parameter
    out.push_back(&c->bias);
  }
  if (bn_)
    for (Parameter* p : bn_->parameters()) out.push_back(p);
  return out;
}

void ConvolutionalLayer::allocate(Backend& backend, uint32_t max_rows) {
  Layer::allocate(backend, max_rows);
  if (bn_) z_.resize(backend, size_t(max_rows) * units());
  // Sharing is resolved by now (the Network allocates after construction).
  size_t scratch = 0;
  for (auto& c : connections_)
    if (c->filter_users() > 1) scratch = std::max<size_t>(scratch, c->geometry.weight_size());
  if (scratch > shared_grad_.size()) shared_grad_.resize(backend, scratch);
}

void ConvolutionalLayer::forward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  float* z = bn_ ? z_.data() : a_.data();
  bool first = true;
  for (auto& c : connections_) {
    be.conv_forward(c->geometry, rows, c->source->activations(), c->filters().value.data(),
                    c->bias.value.data(), /*accumulate=*/!first, z);
    first = false;
  }
  if (first) be.fill(z, n, 0.0f);
  for (Layer* skip : skips_) be.axpy(n, 1.0f, skip->activations(), z);
  if (bn_) {
    bn_->forward(rows, ctx.training, z, a_.data());
    bn_trained_ = ctx.training;
  }
  be.activate(activation_params(spec_), a_.data(), rows, units());
  if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden) {
    be.copy(pre_dropout_.data(), a_.data(), n * sizeof(float));
    be.dropout(a_.data(), n, spec_.p_dropout, ctx.seed, ctx.step * 4096 + index());
  }
}

void ConvolutionalLayer::backward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  float* d = delta_.data();
  // Output layers already hold dE/dz (from the loss); hidden layers hold dE/da.
  if (kind() != LayerKind::Output) {
    const float* a = a_.data();
    if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden) {
      be.dropout_backward(d, n, spec_.p_dropout, ctx.seed, ctx.step * 4096 + index());
      a = pre_dropout_.data();
    }
    be.activation_backward(activation_params(spec_), a, d, rows, units());
  }
  if (spec_.delta_norm > 0.0f) be.clip_row_norms(d, rows, units(), spec_.delta_norm);
  if (bn_) {
    NN_CHECK(bn_trained_,
             "layer '" + name() + "': batch normalisation backward needs a training-mode forward");
    bn_->backward(rows, z_.data(), d, d);
  }
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (auto& c : connections_) {
    Layer* src = c->source;
    Parameter& w = c->filters();
    // A bank used by several connections sums their gradients (zeroed by the Network first);
    // the kernel overwrites its output, so each use goes through a scratch array.
    const bool accumulate = c->filter_users() > 1;
    NN_CHECK(!accumulate || shared_grad_.size() >= w.size(),
             "layer '" + name() + "': shared filter gradient buffer not allocated");
    float* gw = accumulate ? shared_grad_.data() : w.grad.data();
    be.conv_backward_filter(c->geometry, rows, src->activations(), d, inv_rows, gw,
                            c->bias.grad.data());
    if (accumulate) be.axpy(w.size(), 1.0f, gw, w.grad.data());
    if (src->needs_delta())
      be.conv_backward_data(c->geometry, rows, d, w.value.data(), src->delta());
  }
  for (Layer* skip : skips_)
    if (skip->needs_delta()) be.axpy(n, 1.0f, d, skip->delta());
}

}  // namespace nn
