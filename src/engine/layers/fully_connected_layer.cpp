// Fully connected layer: its connections, the SharedWeights shape rule, and the products of
// forward and backward through the Backend (the rest is layers/weighted_layer.cpp).
#include "layers/fully_connected_layer.h"

#include <algorithm>

#include "core/allocation_context.h"
#include "core/error.h"

namespace nn {

FullyConnectedLayer::FullyConnectedLayer(const LayerSpec& spec, uint32_t index)
    : WeightedLayer(spec, index) {}

void FullyConnectedLayer::build(Backend& backend) {
  start_build(backend);
  for (Layer* src : sources_) {
    auto c = std::make_unique<Connection>();
    c->source = src;
    // A sharded layer holds its columns of the matrix (and their biases) only; a padded one
    // holds stride() columns, the last ones zero.
    const size_t n_in = src->units(), n_out = sharded() ? shard_.count : z_width();
    const AllocationContext context("layer '" + name() + "' weights from '" + src->name() + "' (" +
                                    std::to_string(n_in) + " x " + std::to_string(pre_units()) +
                                    (padded() ? ", rows padded to " + std::to_string(n_out) : "") +
                                    ")");
    Connection& added =
        add_connection(std::move(c), n_in * n_out, n_out, static_cast<uint32_t>(n_in), false);
    added.weights.sharded = added.bias.sharded = sharded();
    if (padded()) added.weights.padding = added.bias.padding = {units(), stride()};
  }
  if (spec_.batch_normalization) bn_ = std::make_unique<BatchNorm>(backend, name(), pre_units());
}

bool FullyConnectedLayer::can_pad_rows(std::string* why_not) const {
  std::string why;
  if (kind() != LayerKind::Output)
    why = "only Output layers pad their rows";
  else if (sharded())
    why = "it is split over processes";
  else if (maxout())
    why = "its activation is MaxOut";
  else if (spec_.batch_normalization)
    why = "it has batch normalisation";
  else if (!spec_.skips.empty())
    why = "it has skip connections";
  else if (!spec_.shared_weights.empty())
    why = "it uses another layer's weights (SharedWeights)";
  else if (spec_.sampling.enabled())
    why = "it is a sampled output (Sampling)";
  if (why_not) *why_not = why;
  return why.empty();
}

std::pair<size_t, size_t> FullyConnectedLayer::weight_fans(const Connection& c) const {
  return {c.source->units(), pre_units()};
}

std::array<uint64_t, 5> FullyConnectedLayer::file_shape(const Connection& c) const {
  return {{pre_units(), c.source->units(), 1, 1, 1}};
}

std::string FullyConnectedLayer::foreign_owner(const Layer*, const SharedWeightSpec& s) const {
  return "SourceOutputLayer '" + s.source_output_layer +
         "' is not a fully connected Hidden or Output layer; only fully connected weights can be "
         "shared";
}

void FullyConnectedLayer::check_shared_shape(const std::string& entry, const SharedWeightSpec& s,
                                             const Connection& c, const Connection& oc,
                                             const WeightedLayer& owner) const {
  // The source matrix is [a][b] = [source input units][source output units].
  const uint64_t a = oc.source->units(), b = owner.pre_units();
  const uint64_t n_in = c.source->units(), n_out = pre_units();
  const bool fits = s.transposed ? (n_in == b && n_out == a) : (n_in == a && n_out == b);
  if (!fits)
    throw ConfigError(
        entry + "the weight '" + s.source_input_layer + "' -> '" + s.source_output_layer + "' is " +
        std::to_string(a) + " x " + std::to_string(b) + " (inputs x outputs)" +
        (s.transposed ? ", transposed " : ", ") + std::to_string(s.transposed ? b : a) + " x " +
        std::to_string(s.transposed ? a : b) + ", but '" + s.input_layer + "' -> '" + name() +
        "' needs " + std::to_string(n_in) + " x " + std::to_string(n_out));
}

void FullyConnectedLayer::forward(const LayerContext& ctx) {
  if (sharded()) return forward_sharded(ctx);
  float* z = z_buffer();
  compute_z(ctx, z);
  finish_forward(ctx, z);
}

void FullyConnectedLayer::compute_z(const LayerContext& ctx, float* z) {
  Backend& be = ctx.backend;
  // Padded rows: the products run over the whole stride (aligned rows); the padding's weights
  // and biases are 0, so z is 0 there.
  const uint32_t rows = ctx.rows, n_out = z_width();
  bool first = true;
  for (auto& c : connections_) {
    Layer* src = c->source;
    const float* bias = c->bias.value.data();
    const float* w = c->matrix().value.data();
    if (src->has_sparse_output()) {
      be.broadcast_bias(z, bias, rows, n_out, /*accumulate=*/!first);
      if (c->transposed)
        be.sparse_matmul_transposed(src->sparse_output(), w, n_out, z);
      else
        be.sparse_matmul(src->sparse_output(), w, n_out, z);
      first = false;
      continue;
    }
    // W is [n_in][n_out], or [n_out][n_in] used transposed.
    const int n_in = static_cast<int>(src->units());
    const int ldw = c->transposed ? n_in : int(n_out);
    const uint16_t *x16 = nullptr, *w16 = nullptr;
    if (be.precision() == Precision::BF16) {
      // The matrix's copy as the optimizer wrote it with its last update, else converted now;
      // the input converted once, for this product and the weight gradient.
      Parameter& m = c->matrix();
      if (!m.bf16_written || m.value_bf16.size() != m.size()) {
        m.value_bf16.resize(be, m.size());
        be.convert_to_bf16(w, m.value_bf16.data(), m.size());
      }
      const size_t x_size = size_t(rows) * uint32_t(n_in);
      c->inputs_bf16.resize(be, x_size);
      be.convert_to_bf16(src->activations(), c->inputs_bf16.data(), x_size);
      c->bf16_current = true;
      x16 = c->inputs_bf16.data();
      w16 = m.value_bf16.data();
    }
    if (first) {  // z = x W + b in one call (a bias epilogue on a GPU)
      be.gemm_bias(false, c->transposed, rows, n_out, n_in, src->activations(), x16, n_in, w, w16,
                   ldw, bias, z);
    } else {
      be.broadcast_bias(z, bias, rows, n_out, /*accumulate=*/true);
      if (x16)
        be.gemm_bf16_ab(false, c->transposed, rows, n_out, n_in, 1.0f, x16, n_in, w16, ldw, 1.0f, z,
                        n_out);
      else
        be.gemm(false, c->transposed, rows, n_out, n_in, 1.0f, src->activations(), n_in, w, ldw,
                1.0f, z, n_out);
    }
    first = false;
  }
  if (first) be.fill(z, size_t(rows) * n_out, 0.0f);
}

std::string FullyConnectedLayer::column_forward_obstacle() const {
  if (sharded()) return "it is split over processes";
  if (maxout()) return "its activation is MaxOut";
  if (spec_.activation == Activation::SoftMax)
    return "its activation is SoftMax (each score needs the whole row)";
  if (bn_) return "it has batch normalisation";
  if (!skips_.empty()) return "it has skip connections";
  for (const auto& c : connections_)
    if (c->source->has_sparse_output()) return "a source is a sparse input";
  return "";
}

void FullyConnectedLayer::forward_columns(const LayerContext& ctx, uint32_t first, uint32_t count,
                                          float* out) {
  const std::string obstacle = column_forward_obstacle();
  NN_CHECK(obstacle.empty(), "forward_columns on a layer that needs the whole row");
  NN_CHECK(uint64_t(first) + count <= z_width(), "columns past the layer");  // padding: zeros
  Backend& be = ctx.backend;
  const uint32_t rows = ctx.rows, n_out = z_width();  // the matrix's row length
  // compute_z's steps in its order, restricted to the columns: bias, then the product (added).
  bool first_connection = true;
  for (auto& c : connections_) {
    be.broadcast_bias(out, c->bias.value.data() + first, rows, count, !first_connection);
    first_connection = false;
    const int n_in = static_cast<int>(c->source->units());
    const float* w = c->matrix().value.data();
    // W is [n_in][n_out] (columns first.. at offset first), or [n_out][n_in] used transposed
    // (rows first..).
    const float* b = c->transposed ? w + size_t(first) * n_in : w + first;
    be.gemm(false, c->transposed, rows, count, n_in, 1.0f, c->source->activations(), n_in, b,
            c->transposed ? n_in : int(n_out), 1.0f, out, count);
  }
  if (first_connection) be.fill(out, size_t(rows) * count, 0.0f);
  be.activate(activation_params(spec_), out, rows, count);
}

void FullyConnectedLayer::backward(const LayerContext& ctx) {
  if (sharded()) return backward_sharded(ctx);
  const float* d = start_backward(ctx);
  propagate(ctx, d);
  finish_backward(ctx, d);
}

void FullyConnectedLayer::propagate(const LayerContext& ctx, const float* d) {
  Backend& be = ctx.backend;
  // Padded rows: over the whole stride, like compute_z; d is 0 in the padding, so the padded
  // weights and biases get no gradient.
  const uint32_t rows = ctx.rows, n_out = z_width();
  const float inv_rows = 1.0f / static_cast<float>(rows);
  // BF16 products (the forward pass made the copies: Connection::bf16_current): the delta is
  // rounded once, for every connection's weight gradient and dE/dx.
  const bool bf16 = be.precision() == Precision::BF16;
  const uint16_t* d16 = nullptr;
  if (bf16 && std::any_of(connections_.begin(), connections_.end(),
                          [](const auto& c) { return c->bf16_current; })) {
    delta_bf16_.resize(be, size_t(rows) * n_out);
    be.convert_to_bf16(d, delta_bf16_.data(), delta_bf16_.size());
    d16 = delta_bf16_.data();
  }
  for (auto& c : connections_) {
    Layer* src = c->source;
    Parameter& m = c->matrix();
    float* gw = m.grad.data();
    const bool from_bf16 = bf16 && c->bf16_current;
    // A matrix used by several connections sums their gradients (zeroed by the Network first).
    const bool accumulate = c->matrix_users() > 1;
    if (src->has_sparse_output() && m.row_grad.enabled) {
      // Row-sparse (train/row_sparse.h): the gradient of the rows the batch touched only, the
      // same sums as below with each index replaced by its row's position among them.
      const SparseView& x = src->sparse_output();
      NN_CHECK(x.slot != nullptr && !accumulate && !c->transposed,
               "row-sparse gradient of " + m.name + " without an indexed batch");
      SparseView compact = x;
      compact.index = x.slot;
      compact.cols = x.touched_count;
      RowGradient& rg = m.row_grad;
      rg.values.resize(be, size_t(x.touched_count) * n_out);
      be.fill(rg.values.data(), rg.values.size(), 0.0f);
      be.sparse_weight_gradient(compact, d, n_out, inv_rows, rg.values.data());
      rg.width = n_out;
      rg.rows = x.touched;
      rg.count = x.touched_count;
    } else if (src->has_sparse_output()) {
      if (!accumulate) be.fill(gw, m.grad.size(), 0.0f);
      if (c->transposed)
        be.sparse_weight_gradient_transposed(src->sparse_output(), d, n_out, inv_rows, gw);
      else
        be.sparse_weight_gradient(src->sparse_output(), d, n_out, inv_rows, gw);
    } else {
      const int n_in = static_cast<int>(src->units());
      const float beta = accumulate ? 1.0f : 0.0f;
      // G[n_out][n_in] = delta^T x (transposed), else G[n_in][n_out] = x^T delta. In BF16, from
      // the forward pass's input copy and the delta's: the arithmetic gemm in BF16 mode does.
      if (from_bf16 && c->transposed)
        be.gemm_bf16_ab(true, false, n_out, n_in, rows, inv_rows, d16, n_out, c->inputs_bf16.data(),
                        n_in, beta, gw, n_in);
      else if (from_bf16)
        be.gemm_bf16_ab(true, false, n_in, n_out, rows, inv_rows, c->inputs_bf16.data(), n_in, d16,
                        n_out, beta, gw, n_out);
      else if (c->transposed)
        be.gemm(true, false, n_out, n_in, rows, inv_rows, d, n_out, src->activations(), n_in, beta,
                gw, n_in);
      else
        be.gemm(true, false, n_in, n_out, rows, inv_rows, src->activations(), n_in, d, n_out, beta,
                gw, n_out);
    }
    be.column_sums(d, rows, n_out, inv_rows, 0.0f, c->bias.grad.data());
    if (src->needs_delta()) {
      const int n_in = static_cast<int>(src->units());
      const float* w = m.value.data();
      const int ldw = c->transposed ? n_in : int(n_out);
      if (from_bf16)
        be.gemm_bf16_ab(false, !c->transposed, rows, n_in, n_out, 1.0f, d16, n_out,
                        m.value_bf16.data(), ldw, 1.0f, src->delta(), n_in);
      else
        be.gemm(false, !c->transposed, rows, n_in, n_out, 1.0f, d, n_out, w, ldw, 1.0f,
                src->delta(), n_in);
    }
    c->bf16_current = false;  // one backward pass per forward pass
  }
}

}  // namespace nn
