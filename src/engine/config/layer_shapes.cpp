// The shape rules of Convolutional and Pooling layers (see layer_shapes.h).
#include "config/layer_shapes.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace nn {

uint32_t conv_output_extent(uint32_t in, uint32_t kernel, uint32_t stride) {
  if (in <= kernel) return 1;
  if (stride <= 1) return in;
  return (in - kernel) / stride + 1;
}

uint32_t spatial_axes(const LayerSpec& layer) {
  return uint32_t(std::clamp(layer.kernel_dimensions, 1, 3));
}

uint32_t trailing_channels(const LayerSpec& layer, uint32_t from) {
  uint32_t c = 1;
  for (uint32_t d = from; d < 4; ++d) c *= layer.n[d];
  return c;
}

MaxoutShape maxout_shape(const LayerSpec& source, int k) {
  MaxoutShape s;
  const int last = std::clamp(source.dimensions, 1, 4) - 1;
  s.in_channels = source.n[last];
  for (int d = 0; d < 4; ++d)
    if (d != last) s.plane *= source.n[d];
  s.k = uint32_t(std::max(k, 1));
  return s;
}

std::array<uint32_t, 3> kernel_padding(const NetworkSpec& spec, const LayerSpec& layer) {
  std::array<uint32_t, 3> padding{{0, 0, 0}};
  if (layer.type == LayerType::FullyConnected || layer.type == LayerType::Variational)
    return padding;
  if (layer.type == LayerType::Pooling && layer.pooling == PoolingFunction::DotProduct)
    return padding;
  const int dims = std::clamp(layer.kernel_dimensions, 0, 3);
  // DSSTNE visits every source and only overwrites a value when a rule applies, so with sources of
  // different sizes the last matching source wins; all sources normally have the same size.
  for (const std::string& source_name : layer.sources) {
    const LayerSpec* source = spec.find_layer(source_name);
    if (!source) continue;
    for (int d = 0; d < dims; ++d) {
      const uint32_t in = source->n[d], kernel = layer.kernel[d];
      if (in < kernel)
        padding[d] = (kernel - in + 1) / 2;
      else if (layer.kernel_stride[d] == 1)
        padding[d] = kernel / 2;
    }
  }
  return padding;
}

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
  return f == PoolingFunction::Max || f == PoolingFunction::Average || f == PoolingFunction::LRN ||
         f == PoolingFunction::Maxout || f == PoolingFunction::DotProduct ||
         f == PoolingFunction::Cosine;
}

bool is_pooling(const LayerSpec& l, PoolingFunction f) {
  return l.type == LayerType::Pooling && l.pooling == f;
}

struct Derived {
  Size n{{1, 1, 1, 1}};
  int dims = 1;
};

// The size `layer` gets from `source` (conv_channels: a convolution's output channels).
Derived from_source(const LayerSpec& layer, const LayerSpec& source, uint32_t conv_channels) {
  Derived r;
  if (is_pooling(layer, PoolingFunction::LRN) || is_pooling(layer, PoolingFunction::Maxout)) {
    r.n = source.n;
    r.dims = source.dimensions;
    // Maxout divides the channels (the last dimension; divisibility checked by the caller).
    if (layer.pooling == PoolingFunction::Maxout)
      r.n[std::clamp(r.dims, 1, 4) - 1] = maxout_shape(source, layer.maxout_k).out_channels();
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

// DotProduct / Cosine: one score per source after the first, against source 0; the sources
// must have the same number of units.
void derive_similarity(NetworkSpec& spec, LayerSpec& l, const std::map<std::string, size_t>& index,
                       const std::string& at) {
  const std::string fn = to_string(l.pooling);
  if (l.sources.size() < 2)
    throw ConfigError(at + ": a " + fn + " pooling layer needs at least 2 sources, got " +
                      std::to_string(l.sources.size()));
  const LayerSpec* first = nullptr;
  for (const auto& name : l.sources) {
    auto it = index.find(name);
    if (it == index.end()) continue;  // Network reports unknown sources
    const LayerSpec& src = spec.layers[it->second];
    if (src.n_auto) return;  // Network reports the unresolved size
    if (first && src.units() != first->units())
      throw ConfigError(at + ": its sources differ in size: '" + first->name + "' has " +
                        std::to_string(first->units()) + " units, '" + name + "' has " +
                        std::to_string(src.units()) + "; " + fn +
                        " pooling compares sources of equal size");
    if (!first) first = &src;
  }
  const uint32_t scores = uint32_t(l.sources.size() - 1);
  if (l.kind == LayerKind::Hidden) {
    l.n = {scores, 1, 1, 1};
    l.dimensions = 1;
  } else if (l.units() != scores) {
    throw ConfigError(at + ": N is " + size_text(l.n, l.dimensions) + ", but " + fn +
                      " pooling over " + std::to_string(l.sources.size()) + " sources gives " +
                      std::to_string(scores) + " scores (one per source after the first)");
  }
}

void derive(NetworkSpec& spec, LayerSpec& l, const std::map<std::string, size_t>& index) {
  const std::string at = where(spec, l);
  if (l.type == LayerType::Pooling && !is_supported_pooling(l.pooling))
    throw ConfigError(at + ": Pooling Function " + to_string(l.pooling) +
                      " is not supported; supported: Max, Average, LRN, Maxout, DotProduct, "
                      "Cosine");
  if (is_pooling(l, PoolingFunction::DotProduct) || is_pooling(l, PoolingFunction::Cosine))
    return derive_similarity(spec, l, index, at);
  if (is_pooling(l, PoolingFunction::Maxout) && l.maxout_k < 1)
    throw ConfigError(at + ": Maxout pooling needs Maxout.k >= 1, not " +
                      std::to_string(l.maxout_k));
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
    if (is_pooling(l, PoolingFunction::Maxout)) {
      const MaxoutShape m = maxout_shape(src, l.maxout_k);
      if (m.in_channels % m.k != 0)
        throw ConfigError(at + ": Maxout pooling with Maxout.k = " + std::to_string(m.k) +
                          " needs a channel count divisible by " + std::to_string(m.k) +
                          ", but source '" + name + "' has " + std::to_string(m.in_channels) +
                          " channels (the last dimension of its size " +
                          size_text(src.n, src.dimensions) + ")");
    }
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
    // Fully connected and Variational layers keep the N they are given.
    if (l.kind != LayerKind::Input && l.type != LayerType::FullyConnected &&
        l.type != LayerType::Variational) {
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
