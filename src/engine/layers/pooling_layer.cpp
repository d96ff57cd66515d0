// Pooling layer: shapes from layers/conv_geometry.h, arithmetic in the Backend.
#include "layers/pooling_layer.h"

#include <string>

#include "core/error.h"
#include "layers/conv_geometry.h"

namespace nn {

PoolingLayer::PoolingLayer(const LayerSpec& spec, uint32_t index) : Layer(spec, index) {}

void PoolingLayer::build(Backend&) {
  const std::string at = "layer '" + name() + "'";
  const PoolingFunction f = spec_.pooling;
  if (f != PoolingFunction::Max && f != PoolingFunction::Average && f != PoolingFunction::LRN)
    throw ConfigError(at + ": Pooling Function " + to_string(f) +
                      " is not supported; supported: Max, Average, LRN");
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
    if (src->has_sparse_output())
      throw ConfigError(at + ": source '" + src->name() +
                        "' is a sparse input; Pooling layers need dense sources");
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
                        " units (sizes not derived? see model/layer_dimensions.h)");
  }
}

void PoolingLayer::forward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  float* y = a_.data();
  for (size_t i = 0; i < sources_.size(); ++i) {
    const float* x = sources_[i]->activations();
    if (is_lrn())
      be.lrn_forward(lrn_, rows, x, /*accumulate=*/i > 0, y);
    else
      be.pool_forward(pools_[i], rows, x, /*accumulate=*/i > 0, y);
  }
  if (sources_.empty()) be.fill(y, n, 0.0f);
  for (Layer* skip : skips_) be.axpy(n, 1.0f, skip->activations(), y);
  if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden)
    be.dropout(y, n, spec_.p_dropout, ctx.seed, ctx.step * 4096 + index());
}

void PoolingLayer::backward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows;
  const size_t n = size_t(rows) * units();
  float* d = delta_.data();
  if (ctx.training && spec_.p_dropout > 0.0f && kind() == LayerKind::Hidden)
    be.dropout_backward(d, n, spec_.p_dropout, ctx.seed, ctx.step * 4096 + index());
  for (size_t i = 0; i < sources_.size(); ++i) {
    Layer* src = sources_[i];
    if (!src->needs_delta()) continue;
    if (is_lrn())
      be.lrn_backward(lrn_, rows, src->activations(), d, src->delta());
    else
      be.pool_backward(pools_[i], rows, src->activations(), d, src->delta());
  }
  for (Layer* skip : skips_)
    if (skip->needs_delta()) be.axpy(n, 1.0f, d, skip->delta());
}

}  // namespace nn
