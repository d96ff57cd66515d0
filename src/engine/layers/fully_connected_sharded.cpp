// Model parallelism for fully connected layers (see fully_connected_layer.h): which layers may be
// split, their buffers, forward and backward over the global minibatch for this rank's units,
// the exchanges with the ranks' row layout, SoftMax over the whole layer, and the file form
// (slices gathered to rank 0 on save, a rank's columns taken from a whole file on load).
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/allocation_context.h"
#include "core/error.h"
#include "layers/fully_connected_layer.h"
#include "layers/input_layer.h"

namespace nn {
namespace {

// Communication can use backend memory as it is when the backend's memory is the host's.
bool host_memory(Backend& be, const Communicator& comm) {
  return comm.memory_space() == MemorySpace::Host && be.name() == "cpu";
}

}  // namespace

bool FullyConnectedLayer::can_shard(std::string* why_not) const {
  auto no = [&](const char* reason) {
    if (why_not) *why_not = reason;
    return false;
  };
  if (kind() != LayerKind::Hidden && kind() != LayerKind::Output)
    return no("only Hidden and Output layers are split");
  if (maxout()) return no("MaxOut layers are not split");
  if (spec_.batch_normalization) return no("batch-normalised layers are not split");
  if (!skips_.empty()) return no("layers with Skip sources are not split");
  if (!spec_.shared_weights.empty()) return no("layers with SharedWeights are not split");
  if (spec_.delta_norm > 0.0f) return no("DeltaNorm needs whole rows; the layer is not split");
  if (kind() == LayerKind::Hidden && spec_.sparse)
    return no("a sparseness penalty layer is not split");
  if (kind() == LayerKind::Hidden && spec_.activation == Activation::SoftMax)
    return no("SoftMax Hidden layers are not split");
  return true;
}

void FullyConnectedLayer::allocate(Backend& backend, uint32_t max_rows) {
  if (!sharded()) return WeightedLayer::allocate(backend, max_rows);
  const uint32_t g = std::max(max_global_rows_, max_rows);
  const size_t local = size_t(g) * shard_.count;
  const AllocationContext context("layer '" + name() + "' slice (" + std::to_string(g) +
                                  " rows x " + std::to_string(shard_.count) + " of " +
                                  std::to_string(units()) + " units)");
  if (kind() == LayerKind::Output) {
    // The loss and prediction read this rank's columns of every row; nothing else.
    a_.resize(backend, local);
    delta_.resize(backend, local);
  } else {
    Layer::allocate(backend, max_rows);  // the consumers' layout: this rank's rows
    a_local_.resize(backend, local);
    d_local_.resize(backend, local);
  }
  x_full_.resize(connections_.size());
  size_t max_in = 0;
  for (size_t k = 0; k < connections_.size(); ++k) {
    Layer* src = connections_[k]->source;
    if (!src->has_sparse_output() && !dynamic_cast<InputLayer*>(src))
      x_full_[k].resize(backend, size_t(g) * src->units());
    if (src->needs_delta()) max_in = std::max<size_t>(max_in, src->units());
  }
  if (max_in) {
    dx_full_.resize(backend, size_t(g) * max_in);
    dx_rows_.resize(backend, size_t(max_rows) * max_in);
  }
}

std::vector<size_t> FullyConnectedLayer::row_counts(const LayerContext& ctx, size_t width) const {
  std::vector<size_t> counts(size_t(shard_.ranks));
  for (int q = 0; q < shard_.ranks; ++q)
    counts[size_t(q)] = size_t(unit_range(ctx.all_rows(), q, shard_.ranks).second) * width;
  return counts;
}

const float* FullyConnectedLayer::gathered_input(size_t k, const LayerContext& ctx) {
  Layer* src = connections_[k]->source;
  if (auto* in = dynamic_cast<InputLayer*>(src)) return in->full_activations();
  Backend& be = ctx.backend;
  Communicator& comm = *shard_.comm;
  const size_t width = src->units();
  const std::vector<size_t> counts = row_counts(ctx, width);
  // Sized by allocate(); a layer that allocate() skipped (a sampled output) sizes it here.
  if (x_full_.size() < connections_.size()) x_full_.resize(connections_.size());
  x_full_[k].resize(be, size_t(ctx.all_rows()) * width);
  float* out = x_full_[k].data();
  NN_CHECK(counts[size_t(shard_.rank)] == size_t(ctx.rows) * width,
           "layer '" + name() + "': this rank's rows differ from the row split");
  if (host_memory(be, comm)) {
    comm.all_gather_v(src->activations(), out, counts);
    return out;
  }
  host_a_.resize(size_t(ctx.rows) * width);
  host_b_.resize(size_t(ctx.all_rows()) * width);
  be.download(host_a_.data(), src->activations(), host_a_.size() * sizeof(float));
  comm.all_gather_v(host_a_.data(), host_b_.data(), counts);
  be.upload(out, host_b_.data(), host_b_.size() * sizeof(float));
  return out;
}

void FullyConnectedLayer::sharded_softmax(Backend& be, float* x, uint32_t rows, uint32_t cols) {
  Communicator& comm = *shard_.comm;
  const uint32_t n = cols;
  host_a_.resize(size_t(rows) * n);
  be.download(host_a_.data(), x, host_a_.size() * sizeof(float));
  std::vector<float> row_max(rows, -std::numeric_limits<float>::infinity());
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < n; ++j) row_max[r] = std::max(row_max[r], host_a_[size_t(r) * n + j]);
  comm.all_reduce_max(row_max.data(), rows);
  std::vector<double> row_sum(rows, 0.0);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < n; ++j) {
      float& v = host_a_[size_t(r) * n + j];
      v = std::exp(v - row_max[r]);
      row_sum[r] += v;
    }
  comm.all_reduce_sum(row_sum.data(), rows);
  for (uint32_t r = 0; r < rows; ++r) {
    const float inv = static_cast<float>(1.0 / row_sum[r]);
    for (uint32_t j = 0; j < n; ++j) host_a_[size_t(r) * n + j] *= inv;
  }
  be.upload(x, host_a_.data(), host_a_.size() * sizeof(float));
}

// An all-to-all as a reduce-scatter: every rank contributes a whole buffer in which only its
// own values are non-zero, so each sum is one value plus zeros (exact).
void FullyConnectedLayer::local_to_rows(Backend& be, const LayerContext& ctx, const float* local,
                                        float* out) {
  Communicator& comm = *shard_.comm;
  const size_t g = ctx.all_rows(), u = units(), n = shard_.count, f = shard_.first;
  host_b_.resize(g * n);
  be.download(host_b_.data(), local, host_b_.size() * sizeof(float));
  host_a_.assign(g * u, 0.0f);
  for (size_t r = 0; r < g; ++r) std::copy_n(host_b_.data() + r * n, n, host_a_.data() + r * u + f);
  const std::vector<size_t> counts = row_counts(ctx, u);
  if (host_memory(be, comm)) {
    comm.reduce_scatter_sum_v(host_a_.data(), out, counts);
    return;
  }
  host_b_.resize(size_t(ctx.rows) * u);
  comm.reduce_scatter_sum_v(host_a_.data(), host_b_.data(), counts);
  be.upload(out, host_b_.data(), host_b_.size() * sizeof(float));
}

void FullyConnectedLayer::rows_to_local(Backend& be, const LayerContext& ctx, const float* in,
                                        float* local) {
  Communicator& comm = *shard_.comm;
  const size_t g = ctx.all_rows(), u = units(), rows = ctx.rows;
  const size_t offset = unit_range(ctx.all_rows(), shard_.rank, shard_.ranks).first;
  host_b_.resize(rows * u);
  be.download(host_b_.data(), in, host_b_.size() * sizeof(float));
  // Block q of the send buffer is rank q's [global rows][its units]; this rank fills its rows.
  host_a_.assign(g * u, 0.0f);
  std::vector<size_t> counts(size_t(shard_.ranks));
  for (int q = 0; q < shard_.ranks; ++q) {
    const auto [fq, nq] = unit_range(uint32_t(u), q, shard_.ranks);
    float* block = host_a_.data() + g * fq;
    for (size_t r = 0; r < rows; ++r)
      std::copy_n(host_b_.data() + r * u + fq, nq, block + (offset + r) * nq);
    counts[size_t(q)] = g * nq;
  }
  if (host_memory(be, comm)) {
    comm.reduce_scatter_sum_v(host_a_.data(), local, counts);
    return;
  }
  host_b_.resize(g * shard_.count);
  comm.reduce_scatter_sum_v(host_a_.data(), host_b_.data(), counts);
  be.upload(local, host_b_.data(), host_b_.size() * sizeof(float));
}

void FullyConnectedLayer::forward_sharded(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t g = ctx.all_rows(), n = shard_.count;
  float* z = kind() == LayerKind::Output ? a_.data() : a_local_.data();
  bool first = true;
  for (size_t k = 0; k < connections_.size(); ++k) {
    Connection& c = *connections_[k];
    be.broadcast_bias(z, c.bias.value.data(), g, n, /*accumulate=*/!first);
    first = false;
    Layer* src = c.source;
    const float* w = c.weights.value.data();
    if (src->has_sparse_output()) {
      auto* in = dynamic_cast<InputLayer*>(src);
      NN_CHECK(in != nullptr, "sparse source is not an input layer");
      be.sparse_matmul(in->full_sparse_output(), w, n, z);
    } else {
      const float* x = gathered_input(k, ctx);
      const int n_in = static_cast<int>(src->units());
      if (g > 0 && n > 0)
        be.gemm(false, false, int(g), int(n), n_in, 1.0f, x, n_in, w, int(n), 1.0f, z, int(n));
    }
  }
  if (first) be.fill(z, size_t(g) * n, 0.0f);
  if (spec_.activation == Activation::SoftMax)
    sharded_softmax(be, z, g, n);
  else
    be.activate(activation_params(spec_), z, g, n);
  if (kind() == LayerKind::Output) return;
  local_to_rows(be, ctx, a_local_.data(), a_.data());
  const size_t rows_n = size_t(ctx.rows) * units();
  if (ctx.training && spec_.p_dropout > 0.0f) {
    be.copy(pre_dropout_.data(), a_.data(), rows_n * sizeof(float));
    be.dropout(a_.data(), rows_n, spec_.p_dropout, ctx.seed, dropout_stream(ctx, index(), units()));
  }
}

void FullyConnectedLayer::backward_sharded(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const uint32_t g = ctx.all_rows(), n = shard_.count;
  float* d = delta_.data();  // Output: dE/dz of this rank's columns, from the loss
  if (kind() != LayerKind::Output) {
    // dE/da arrives in the consumers' layout; dropout's backward runs there, as it ran there.
    if (ctx.training && spec_.p_dropout > 0.0f)
      be.dropout_backward(d, size_t(ctx.rows) * units(), spec_.p_dropout, ctx.seed,
                          dropout_stream(ctx, index(), units()));
    rows_to_local(be, ctx, d, d_local_.data());
    d = d_local_.data();
    be.activation_backward(activation_params(spec_), a_local_.data(), d, g, n);
  }
  const float inv_rows = 1.0f / static_cast<float>(std::max<uint32_t>(g, 1));
  for (size_t k = 0; k < connections_.size(); ++k) {
    Connection& c = *connections_[k];
    Layer* src = c.source;
    float* gw = c.weights.grad.data();
    const int n_in = static_cast<int>(src->units());
    const SparseView* whole_x =
        src->has_sparse_output() ? &dynamic_cast<InputLayer*>(src)->full_sparse_output() : nullptr;
    if (whole_x && c.weights.row_grad.enabled) {
      // Row-sparse (train/row_sparse.h): the rows the whole minibatch touched, in this rank's
      // slice of the units; the same sums as below with each index replaced by its row's slot.
      NN_CHECK(whole_x->slot != nullptr,
               "row-sparse gradient of " + c.weights.name + " without an indexed minibatch");
      SparseView compact = *whole_x;
      compact.index = whole_x->slot;
      compact.cols = whole_x->touched_count;
      RowGradient& rg = c.weights.row_grad;
      rg.values.resize(be, size_t(whole_x->touched_count) * n);
      be.fill(rg.values.data(), rg.values.size(), 0.0f);
      be.sparse_weight_gradient(compact, d, n, inv_rows, rg.values.data());
      rg.width = n;
      rg.rows = whole_x->touched;
      rg.count = whole_x->touched_count;
    } else if (whole_x) {
      be.fill(gw, c.weights.grad.size(), 0.0f);
      be.sparse_weight_gradient(dynamic_cast<InputLayer*>(src)->full_sparse_output(), d, n,
                                inv_rows, gw);
    } else if (n > 0 && g > 0) {
      const float* x = dynamic_cast<InputLayer*>(src)
                           ? dynamic_cast<InputLayer*>(src)->full_activations()
                           : x_full_[k].data();
      be.gemm(true, false, n_in, int(n), int(g), inv_rows, x, n_in, d, int(n), 0.0f, gw, int(n));
    } else {
      be.fill(gw, c.weights.grad.size(), 0.0f);
    }
    be.column_sums(d, g, n, inv_rows, 0.0f, c.bias.grad.data());
    if (!src->needs_delta()) continue;
    // This rank's part of dE/dx for every row; the ranks' parts are summed onto their rows.
    float* dx = dx_full_.data();
    if (n > 0 && g > 0)
      be.gemm(false, true, int(g), n_in, int(n), 1.0f, d, int(n), c.weights.value.data(), int(n),
              0.0f, dx, n_in);
    else
      be.fill(dx, size_t(g) * n_in, 0.0f);
    add_source_delta(ctx, k, dx);
  }
}

void FullyConnectedLayer::add_source_delta(const LayerContext& ctx, size_t k, const float* dx) {
  Backend& be = ctx.backend;
  Communicator& comm = *shard_.comm;
  Layer* src = connections_[k]->source;
  const size_t n_in = src->units(), g = ctx.all_rows();
  const std::vector<size_t> counts = row_counts(ctx, n_in);
  const size_t mine = size_t(ctx.rows) * n_in;
  dx_rows_.resize(be, mine);
  if (host_memory(be, comm)) {
    comm.reduce_scatter_sum_v(dx, dx_rows_.data(), counts);
  } else {
    host_a_.resize(g * n_in);
    host_b_.resize(mine);
    be.download(host_a_.data(), dx, host_a_.size() * sizeof(float));
    comm.reduce_scatter_sum_v(host_a_.data(), host_b_.data(), counts);
    be.upload(dx_rows_.data(), host_b_.data(), mine * sizeof(float));
  }
  if (mine) be.axpy(mine, 1.0f, dx_rows_.data(), src->delta());
}

// ---- file form -------------------------------------------------------------------------------

void FullyConnectedLayer::save(NetworkFile& file) const {
  if (!sharded()) return WeightedLayer::save(file);
  Communicator& comm = *shard_.comm;
  const bool root = comm.rank() == 0;
  const size_t u = pre_units();
  const int p = shard_.ranks;
  // [height][count] slices of every rank -> [height][u] on rank 0 (empty elsewhere).
  auto gather = [&](const DeviceArray<float>& local, size_t height) {
    const std::vector<float> mine = local.to_host();
    std::vector<size_t> counts(static_cast<size_t>(p));
    for (int q = 0; q < p; ++q) counts[size_t(q)] = height * unit_range(uint32_t(u), q, p).second;
    std::vector<float> all(root ? height * u : 0), out;
    comm.gather_v(mine.data(), root ? all.data() : nullptr, counts, 0);
    if (!root) return out;
    out.resize(height * u);
    size_t off = 0;
    for (int q = 0; q < p; ++q) {
      const auto [fq, nq] = unit_range(uint32_t(u), q, p);
      for (size_t i = 0; i < height; ++i)
        std::copy_n(all.data() + off + i * nq, nq, out.data() + i * u + fq);
      off += height * nq;
    }
    return out;
  };
  for (const auto& c : connections_) {
    const size_t n_in = c->source->units();
    WeightArrays wa;
    wa.input_layer = c->source->name();
    wa.output_layer = name();
    wa.width = u;
    wa.height = n_in;
    wa.norm = spec_.weight_norm;
    wa.locked = c->weights.locked;
    wa.weights = gather(c->weights.value, n_in);
    wa.bias = gather(c->bias.value, 1);
    for (const auto& s : c->weights.state) wa.weight_state.push_back(gather(s, n_in));
    for (const auto& s : c->bias.state) wa.bias_state.push_back(gather(s, 1));
    file.weights.push_back(std::move(wa));
  }
}

void FullyConnectedLayer::load(const NetworkFile& file, size_t& cursor) {
  if (!sharded()) return WeightedLayer::load(file, cursor);
  const size_t u = pre_units(), first = shard_.first, count = shard_.count;
  for (auto& c : connections_) {
    if (cursor >= file.weights.size())
      throw DataError("network file has " + std::to_string(file.weights.size()) +
                      " weights; layer '" + name() + "' needs more");
    const WeightArrays& wa = file.weights[cursor++];
    const std::string what =
        "network file weight '" + wa.input_layer + "' -> '" + wa.output_layer + "'";
    if (wa.shared)
      throw DataError(what + ": stored as shared, but layer '" + name() + "' has its own matrix");
    const size_t n_in = c->source->units();
    auto slice = [&](const std::vector<float>& whole, size_t height, const char* part) {
      if (whole.size() != height * u)
        throw DataError(what + ": " + part + " has " + std::to_string(whole.size()) +
                        " values, expected " + std::to_string(height * u));
      std::vector<float> out(height * count);
      for (size_t i = 0; i < height; ++i)
        std::copy_n(whole.data() + i * u + first, count, out.data() + i * count);
      return out;
    };
    WeightArrays part;
    part.input_layer = wa.input_layer;
    part.output_layer = wa.output_layer;
    part.locked = wa.locked;
    part.weights = slice(wa.weights, n_in, "the weight matrix");
    part.bias = slice(wa.bias, 1, "the bias");
    for (const auto& s : wa.weight_state)
      part.weight_state.push_back(slice(s, n_in, "optimizer state"));
    for (const auto& s : wa.bias_state) part.bias_state.push_back(slice(s, 1, "optimizer state"));
    load_connection(*backend_, part, c->source->name(), name(), c->weights, c->bias);
  }
}

}  // namespace nn
