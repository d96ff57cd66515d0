// Pooling layer: shapes from config/layer_shapes.h (Max, Average, LRN, Maxout) mapped onto kernel
// parameters by layers/conv_geometry.h; arithmetic in the Backend.
#include "layers/pooling_layer.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "layers/conv_geometry.h"

namespace nn {

PoolingLayer::PoolingLayer(const LayerSpec& spec, uint32_t index) : Layer(spec, index) {}

void PoolingLayer::build(Backend&) {
  const std::string at = "layer '" + name() + "'";
  const PoolingFunction f = spec_.pooling;
  if (f != PoolingFunction::Max && f != PoolingFunction::Average && f != PoolingFunction::LRN &&
      !is_maxout() && !is_similarity())
    throw ConfigError(at + ": Pooling Function " + to_string(f) +
                      " is not supported; supported: Max, Average, LRN, Maxout, DotProduct, "
                      "Cosine");
  for (Layer* src : sources_)
    if (src->has_sparse_output())
      throw ConfigError(at + ": source '" + src->name() +
                        "' is a sparse input; Pooling layers need dense sources");
  if (is_maxout()) return build_maxout(at);
  if (is_similarity()) return build_similarity(at);
  if (is_lrn()) {
    if (lrn_settings_.n < 1)
      throw ConfigError(at + ": LRN n is " + std::to_string(lrn_settings_.n) + ", expected >= 1");
    lrn_ = lrn_shape(spec_);
    lrn_.n = uint32_t(lrn_settings_.n);
    lrn_.k = lrn_settings_.k;
    lrn_.alpha = lrn_settings_.alpha;
    lrn_.beta = lrn_settings_.beta;
  }
  for (Layer* src : sources_) {
    uint64_t in_size = src->units(), out_size = src->units();
    if (!is_lrn()) {
      pools_.push_back({layer_geometry(spec_, src->spec()), f});
      in_size = pools_.back().geometry.in_size();
      out_size = pools_.back().geometry.out_size();
    }
    if (in_size != src->units() || out_size != units())
      throw ConfigError(at + ": pooling '" + src->name() + "' (" + std::to_string(src->units()) +
                        " units) gives " + std::to_string(out_size) + " outputs, but the layer " +
                        "has " + std::to_string(units()) +
                        " units (sizes not derived? see config/layer_shapes.h)");
  }
}

void PoolingLayer::build_maxout(const std::string& at) {
  if (spec_.maxout_k < 1)
    throw ConfigError(at + ": Maxout pooling needs Maxout.k >= 1, not " +
                      std::to_string(spec_.maxout_k));
  for (Layer* src : sources_) {
    const MaxoutShape s = maxout_shape(src->spec(), spec_.maxout_k);
    if (s.in_channels % s.k != 0)
      throw ConfigError(at + ": Maxout pooling with Maxout.k = " + std::to_string(s.k) +
                        " needs a channel count divisible by " + std::to_string(s.k) +
                        ", but source '" + src->name() + "' has " + std::to_string(s.in_channels) +
                        " channels");
    const uint64_t out_size = uint64_t(s.out_channels()) * s.plane;
    if (out_size != units())
      throw ConfigError(at + ": Maxout pooling of '" + src->name() + "' (" +
                        std::to_string(src->units()) + " units) gives " + std::to_string(out_size) +
                        " outputs, but the layer has " + std::to_string(units()) +
                        " units (sizes not derived? see config/layer_shapes.h)");
    maxouts_.push_back(s);
  }
}

void PoolingLayer::build_similarity(const std::string& at) {
  const std::string fn = to_string(spec_.pooling);
  if (sources_.size() < 2)
    throw ConfigError(at + ": " + fn + " pooling needs at least 2 sources, got " +
                      std::to_string(sources_.size()));
  for (Layer* src : sources_)
    if (src->units() != sources_[0]->units())
      throw ConfigError(at + ": " + fn + " pooling needs sources of equal size, but '" +
                        sources_[0]->name() + "' has " + std::to_string(sources_[0]->units()) +
                        " units and '" + src->name() + "' has " + std::to_string(src->units()));
  if (units() != sources_.size() - 1)
    throw ConfigError(at + ": " + fn + " pooling over " + std::to_string(sources_.size()) +
                      " sources gives " + std::to_string(sources_.size() - 1) +
                      " outputs, but the layer has " + std::to_string(units()) + " units");
}

void PoolingLayer::allocate(Backend& backend, uint32_t max_rows) {
  Layer::allocate(backend, max_rows);
  if (!is_maxout()) return;
  size_t scratch = size_t(max_rows) * units();
  winners_.resize(sources_.size());
  for (size_t i = 0; i < sources_.size(); ++i) {
    winners_[i].resize(backend, size_t(max_rows) * units());
    scratch = std::max(scratch, size_t(max_rows) * sources_[i]->units());
  }
  scratch_.resize(backend, scratch);
}

void PoolingLayer::forward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  float* y = a_.data();
  if (is_similarity()) {
    const uint32_t cols = sources_[0]->units(), stride = units();
    for (size_t i = 1; i < sources_.size(); ++i)
      be.similarity_forward(spec_.pooling, rows, cols, sources_[0]->activations(),
                            sources_[i]->activations(), y + (i - 1), stride);
  } else {
    for (size_t i = 0; i < sources_.size(); ++i) {
      const float* x = sources_[i]->activations();
      if (is_maxout()) {
        const MaxoutShape& s = maxouts_[i];
        float* out = i == 0 ? y : scratch_.data();
        be.maxout_forward(x, size_t(rows) * s.out_channels(), s.k, uint32_t(s.plane), out,
                          winners_[i].data());
        if (i > 0) be.axpy(n, 1.0f, out, y);
      } else if (is_lrn()) {
        be.lrn_forward(lrn_, rows, x, /*accumulate=*/i > 0, y);
      } else {
        be.pool_forward(pools_[i], rows, x, /*accumulate=*/i > 0, y);
      }
    }
    if (sources_.empty()) be.fill(y, n, 0.0f);
  }
  for (Layer* skip : skips_) be.axpy(n, 1.0f, skip->activations(), y);
  if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden)
    be.dropout(y, n, spec_.p_dropout, ctx.seed, dropout_stream(ctx, index(), units()));
}

void PoolingLayer::backward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  float* d = delta_.data();
  if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden)
    be.dropout_backward(d, n, spec_.p_dropout, ctx.seed, dropout_stream(ctx, index(), units()));
  if (is_similarity()) {
    Layer* first = sources_[0];
    float* d_first = first->needs_delta() ? first->delta() : nullptr;
    const uint32_t cols = first->units(), stride = units();
    for (size_t i = 1; i < sources_.size(); ++i) {
      Layer* src = sources_[i];
      be.similarity_backward(spec_.pooling, rows, cols, first->activations(), src->activations(),
                             d + (i - 1), stride, d_first,
                             src->needs_delta() ? src->delta() : nullptr);
    }
  } else {
    for (size_t i = 0; i < sources_.size(); ++i) {
      Layer* src = sources_[i];
      if (!src->needs_delta()) continue;
      if (is_maxout()) {
        const MaxoutShape& s = maxouts_[i];
        be.maxout_backward(d, winners_[i].data(), size_t(rows) * s.out_channels(), s.k,
                           uint32_t(s.plane), scratch_.data());
        be.axpy(size_t(rows) * src->units(), 1.0f, scratch_.data(), src->delta());
      } else if (is_lrn()) {
        be.lrn_backward(lrn_, rows, src->activations(), d, src->delta());
      } else {
        be.pool_backward(pools_[i], rows, src->activations(), d, src->delta());
      }
    }
  }
  for (Layer* skip : skips_)
    if (skip->needs_delta()) be.axpy(n, 1.0f, d, skip->delta());
}

}  // namespace nn
