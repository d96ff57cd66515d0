// Derived sizes of Convolutional and Pooling layers (see layer_dimensions.h).
#include "model/layer_dimensions.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "layers/conv_geometry.h"

namespace nn {
namespace {

using Size = std::array<uint32_t, 4>;

std::string where(const NetworkSpec& spec, const LayerSpec& l) {
  return (spec.source.empty() ? std::string("network") : spec.source) + ": layer '" + l.name + "'";
}

std::string size_text(const Size& n, int dims) {
  std::string s;
  for (int d = 0; d < std::clamp(dims, 1, 4); ++d) s += (d ? "x" : "") + std::to_string(n[d]);
  return s;
}

bool is_supported_pooling(PoolingFunction f) {
  return f == PoolingFunction::Max || f == PoolingFunction::Average || f == PoolingFunction::LRN;
}

struct Derived {
  Size n{{1, 1, 1, 1}};
  int dims = 1;
};

// The size `layer` gets from `source` (conv_channels: a convolution's output channels).
Derived from_source(const LayerSpec& layer, const LayerSpec& source, uint32_t conv_channels) {
  Derived r;
  if (layer.type == LayerType::Pooling && layer.pooling == PoolingFunction::LRN) {
    r.n = source.n;
    r.dims = source.dimensions;
    return r;
  }
  const uint32_t axes = spatial_axes(layer);
  for (uint32_t d = 0; d < axes; ++d)
    r.n[d] = conv_output_extent(source.n[d], layer.kernel[d], layer.kernel_stride[d]);
  if (layer.type == LayerType::Convolutional) {
    r.n[axes] = conv_channels;
    r.dims = int(axes) + 1;
  } else {
    for (uint32_t d = axes; d < 4; ++d) r.n[d] = source.n[d];
    r.dims = std::max(source.dimensions, int(axes));
  }
  return r;
}

void derive(NetworkSpec& spec, LayerSpec& l, const std::map<std::string, size_t>& index) {
  const std::string at = where(spec, l);
  if (l.type == LayerType::Pooling && !is_supported_pooling(l.pooling))
    throw ConfigError(at + ": Pooling Function " + to_string(l.pooling) +
                      " is not supported; supported: Max, Average, LRN");
  const uint32_t axes = spatial_axes(l);
  // A hidden convolution's N is its channel count, or its full size (written back by us).
  bool full_size = false;
  uint32_t channels = trailing_channels(l, axes);
  if (l.kind == LayerKind::Hidden && l.type == LayerType::Convolutional) {
    full_size = l.dimensions == int(axes) + 1;
    if (!full_size && l.dimensions != 1)
      throw ConfigError(at + ": N is " + size_text(l.n, l.dimensions) + "; a Convolutional " +
                        "layer with a " + std::to_string(axes) + "-D Kernel takes its number " +
                        "of output channels (an integer) or its full size (" +
                        std::to_string(axes + 1) + " values)");
    channels = full_size ? l.n[axes] : l.n[0];
  }

  bool sized = false;
  Derived derived;
  std::string first_source;
  for (const auto& name : l.sources) {
    auto it = index.find(name);
    if (it == index.end()) continue;  // Network reports unknown sources
    const LayerSpec& src = spec.layers[it->second];
    if (src.n_auto) return;  // Network reports the unresolved size
    const Derived d = from_source(l, src, channels);
    if (sized && (d.n != derived.n || d.dims != derived.dims))
      throw ConfigError(at + ": its sources give different sizes: '" + first_source + "' gives " +
                        size_text(derived.n, derived.dims) + ", '" + name + "' gives " +
                        size_text(d.n, d.dims) + "; all sources must match");
    if (!sized) first_source = name;
    sized = true;
    derived = d;
  }
  if (!sized) return;

  if (l.kind == LayerKind::Hidden && !full_size) {
    l.n = derived.n;
    l.dimensions = derived.dims;
    return;
  }
  // Given sizes (Output layers, and hidden convolutions written in full) must agree.
  bool same = true;
  const uint32_t compared = l.type == LayerType::Convolutional ? axes : 4;
  for (uint32_t d = 0; d < compared; ++d) same &= l.n[d] == derived.n[d];
  if (!same) {
    const bool output = l.kind == LayerKind::Output;
    throw ConfigError(
        at + ": N is " + size_text(l.n, l.dimensions) + ", but its source '" + first_source +
        "' gives " + size_text(derived.n, derived.dims) +
        (l.type == LayerType::Convolutional ? " (the spatial extents must match)" : "") +
        (output ? "; Output layers keep the N they are given" : ""));
  }
  if (l.kind == LayerKind::Hidden) l.dimensions = derived.dims;
}

}  // namespace

void derive_layer_dimensions(NetworkSpec& spec) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < spec.layers.size(); ++i) index.emplace(spec.layers[i].name, i);
  std::vector<int> state(spec.layers.size(), 0);  // 0 new, 1 visiting, 2 done
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i] == 2) return;
    LayerSpec& l = spec.layers[i];
    if (state[i] == 1) throw ConfigError(where(spec, l) + ": the layer graph has a cycle");
    state[i] = 1;
    if (l.kind != LayerKind::Input && l.type != LayerType::FullyConnected) {
      for (const auto& s : l.sources) {
        auto it = index.find(s);
        if (it != index.end()) visit(it->second);
      }
      derive(spec, l, index);
    }
    state[i] = 2;
  };
  for (size_t i = 0; i < spec.layers.size(); ++i) visit(i);
}

}  // namespace nn
