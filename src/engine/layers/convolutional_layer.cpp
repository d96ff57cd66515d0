// Convolutional layer: its connections and geometry, the SharedWeights rules for filter banks,
// the file shape, and the convolutions of forward and backward through the Backend (the rest is
// layers/weighted_layer.cpp).
#include "layers/convolutional_layer.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "layers/conv_geometry.h"

namespace nn {

std::array<uint64_t, 5> conv_weight_dims(const ConvGeometry& g) {
  std::array<uint64_t, 5> d{{g.out_channels, g.in_channels, 1, 1, 1}};
  // Kernel extents from the outermost axis in (cuDNN's filter order).
  for (uint32_t a = 0; a < g.dims; ++a) d[2 + a] = g.kernel[g.dims - 1 - a];
  return d;
}

ConvolutionalLayer::ConvolutionalLayer(const LayerSpec& spec, uint32_t index)
    : WeightedLayer(spec, index) {}

void ConvolutionalLayer::build(Backend& backend) {
  start_build(backend);
  const std::string at = "layer '" + name() + "'";
  out_plane_ = 1;
  for (uint32_t d = 0; d < spatial_axes(spec_); ++d) out_plane_ *= spec_.n[d];
  for (Layer* src : sources_) {
    if (src->has_sparse_output())
      throw ConfigError(at + ": source '" + src->name() +
                        "' is a sparse input; Convolutional layers need dense sources");
    auto c = std::make_unique<ConvConnection>();
    c->source = src;
    c->geometry = layer_geometry(spec_, src->spec());
    ConvGeometry& g = c->geometry;
    if (g.out_size() != units() || g.in_size() != src->units())
      throw ConfigError(at + ": reading '" + src->name() + "' (" + std::to_string(src->units()) +
                        " units) with its kernel gives " + std::to_string(g.out_size()) +
                        " outputs, but the layer has " + std::to_string(units()) +
                        " units (sizes not derived? see config/layer_shapes.h)");
    // MaxOut: k filters per output channel, channel c's pieces next to each other.
    g.out_channels = pre_units() / uint32_t(g.out_plane());
    // WeightNorm: one filter per output channel, i.e. per row of the bank.
    add_connection(std::move(c), g.weight_size(), g.out_channels, g.out_channels, true);
  }
  if (spec_.batch_normalization && !connections_.empty()) {
    const ConvGeometry& g = connections_.front()->geometry;
    bn_ = std::make_unique<BatchNorm>(backend, name(), g.out_channels, uint32_t(g.out_plane()));
  }
}

std::pair<size_t, size_t> ConvolutionalLayer::weight_fans(const ConvConnection& c) const {
  // Fan-in = input channels x kernel volume, fan-out = output channels (DSSTNE uses the whole
  // layer sizes, which makes image-sized layers start with near-zero filters).
  const ConvGeometry& g = c.geometry;
  return {g.in_channels * g.kernel_volume(), g.out_channels};
}

std::array<uint64_t, 5> ConvolutionalLayer::file_shape(const ConvConnection& c) const {
  return conv_weight_dims(c.geometry);
}

void ConvolutionalLayer::check_file_shape(const ConvConnection& c, const WeightArrays& wa) const {
  const auto want = conv_weight_dims(c.geometry);
  const std::array<uint64_t, 5> got{{wa.width, wa.height, wa.length, wa.depth, wa.breadth}};
  // (A weight of other layers is reported as misplaced by the common checks.)
  if (got == want || wa.input_layer != c.source->name() || wa.output_layer != name()) return;
  auto text = [](const std::array<uint64_t, 5>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "x" : "") + std::to_string(v[i]);
    return s;
  };
  throw DataError("network file weight '" + wa.input_layer + "' -> '" + wa.output_layer +
                  "': width x height x length x depth x breadth is " + text(got) + ", expected " +
                  text(want) +
                  " (out channels x in channels x kernel extents, outermost axis first)");
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

void ConvolutionalLayer::check_shared_entry(const std::string& entry,
                                            const SharedWeightSpec& s) const {
  if (s.transposed)
    throw ConfigError(entry +
                      "Transposed is not supported on Convolutional layers: a filter "
                      "bank [out channels][in channels][kernel] has no transpose that is "
                      "one (DSSTNE cannot transpose 3-D weights either)");
}

std::string ConvolutionalLayer::foreign_owner(const Layer* owner, const SharedWeightSpec& s) const {
  return "SourceOutputLayer '" + s.source_output_layer + "' is " +
         (!owner ? std::string("not a layer")
          : owner->kind() == LayerKind::Input
              ? std::string("an Input layer")
              : std::string("a ") + to_string(owner->spec().type) + " layer") +
         "; a Convolutional layer can only share another Convolutional layer's filters";
}

void ConvolutionalLayer::check_shared_shape(const std::string& entry, const SharedWeightSpec& s,
                                            const ConvConnection& c, const ConvConnection& oc,
                                            const WeightedLayer&) const {
  if (!same_filters(oc.geometry, c.geometry))
    throw ConfigError(entry + "the filters '" + s.source_input_layer + "' -> '" +
                      s.source_output_layer + "' are " + describe_filters(oc.geometry) + " (" +
                      std::to_string(oc.geometry.dims) + "-D), but '" + s.input_layer + "' -> '" +
                      name() + "' needs " + describe_filters(c.geometry) + " (" +
                      std::to_string(c.geometry.dims) +
                      "-D); shared filters need the same channels, kernel and stride");
}

void ConvolutionalLayer::allocate(Backend& backend, uint32_t max_rows) {
  WeightedLayer::allocate(backend, max_rows);
  // Sharing is resolved by now (the Network allocates after construction).
  size_t scratch = 0;
  for (auto& c : connections_)
    if (c->filter_users() > 1) scratch = std::max<size_t>(scratch, c->geometry.weight_size());
  if (scratch > shared_grad_.size()) shared_grad_.resize(backend, scratch);
}

void ConvolutionalLayer::forward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  float* z = z_buffer();
  bool first = true;
  for (auto& c : connections_) {
    be.conv_forward(c->geometry, rows, c->source->activations(), c->filters().value.data(),
                    c->bias.value.data(), /*accumulate=*/!first, z);
    first = false;
  }
  if (first) be.fill(z, size_t(rows) * pre_units(), 0.0f);
  finish_forward(ctx, z);
}

void ConvolutionalLayer::backward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  NN_CHECK(!bn_ || bn_trained_,
           "layer '" + name() + "': batch normalisation backward needs a training-mode forward");
  const float* d = start_backward(ctx);
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
  finish_backward(ctx, d);
}

}  // namespace nn
