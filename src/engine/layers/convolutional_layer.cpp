// Convolutional layer: parameters, file form, forward and backward through the Backend.
#include "layers/convolutional_layer.h"

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
  if (spec_.weight_norm > 0.0f)
    throw ConfigError(at + ": WeightNorm is not supported on Convolutional layers");
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
    c->weights.value.resize(backend, g.weight_size());
    c->weights.grad.resize(backend, g.weight_size());
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
    c->weights.value.upload(
        initial_weights(spec_, g.in_channels * g.kernel_volume(), g.out_channels, rng));
    c->bias.value.upload(std::vector<float>(g.out_channels, spec_.bias_init));
  }
  if (bn_) bn_->initialize();
}

void ConvolutionalLayer::save(NetworkFile& file) const {
  for (const auto& c : connections_) {
    const ConvGeometry& g = c->geometry;
    WeightArrays wa = save_connection(c->source->name(), name(), g.out_channels, g.in_channels,
                                      spec_.weight_norm, c->weights, c->bias);
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
    if (wa.shared)
      throw DataError("network file weight '" + wa.input_layer + "' -> '" + wa.output_layer +
                      "': stored as shared, but Convolutional layers do not share weights");
    const auto want = conv_weight_dims(c->geometry);
    const std::array<uint64_t, 5> got{{wa.width, wa.height, wa.length, wa.depth, wa.breadth}};
    if (got != want && wa.input_layer == c->source->name() && wa.output_layer == name()) {
      auto text = [](const std::array<uint64_t, 5>& v) {
        std::string s;
        for (size_t i = 0; i < v.size(); ++i) s += (i ? "x" : "") + std::to_string(v[i]);
        return s;
      };
      throw DataError("network file weight '" + wa.input_layer + "' -> '" + wa.output_layer +
                      "': width x height x length x depth x breadth is " + text(got) +
                      ", expected " + text(want) +
                      " (out channels x in channels x kernel extents, outermost axis first)");
    }
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

std::vector<Parameter*> ConvolutionalLayer::parameters() {
  std::vector<Parameter*> out;
  for (auto& c : connections_) {
    out.push_back(&c->weights);
    out.push_back(&c->bias);
  }
  if (bn_)
    for (Parameter* p : bn_->parameters()) out.push_back(p);
  return out;
}

void ConvolutionalLayer::allocate(Backend& backend, uint32_t max_rows) {
  Layer::allocate(backend, max_rows);
  if (bn_) z_.resize(backend, size_t(max_rows) * units());
}

void ConvolutionalLayer::forward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  float* z = bn_ ? z_.data() : a_.data();
  bool first = true;
  for (auto& c : connections_) {
    be.conv_forward(c->geometry, rows, c->source->activations(), c->weights.value.data(),
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
    be.conv_backward_filter(c->geometry, rows, src->activations(), d, inv_rows,
                            c->weights.grad.data(), c->bias.grad.data());
    if (src->needs_delta())
      be.conv_backward_data(c->geometry, rows, d, c->weights.value.data(), src->delta());
  }
  for (Layer* skip : skips_)
    if (skip->needs_delta()) be.axpy(n, 1.0f, d, skip->delta());
}

}  // namespace nn
