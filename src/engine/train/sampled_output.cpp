// Sampled output training: the checks, and one step's forward, loss, backward and lazy update on
// the sampled columns (the arithmetic is in the header's comment and docs/wide-outputs.md).
#include "train/sampled_output.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "train/loss_setup.h"
#include "train/step.h"

namespace nn {
namespace {

std::string where(const NetworkSpec& spec, const LayerSpec& l) {
  return (spec.source.empty() ? std::string("network") : spec.source) + ": layer '" + l.name +
         "': Sampling";
}

// Why the output layer `layer` (bound to `targets`) cannot be sampled, or "".
std::string obstacle(Network& net, Layer& layer, const ExampleSet& targets) {
  const LayerSpec& l = layer.spec();
  auto* fc = dynamic_cast<FullyConnectedLayer*>(&layer);
  if (!fc || l.type != LayerType::FullyConnected)
    return "needs a FullyConnected layer, but this one is " + std::string(to_string(l.type));
  if (l.activation != Activation::SoftMax && l.activation != Activation::Sigmoid)
    return "needs Activation SoftMax or Sigmoid, not " + std::string(to_string(l.activation));
  if (net.spec().error_function != ErrorFunction::CrossEntropy)
    return "needs ErrorFunction CrossEntropy, not " +
           std::string(to_string(net.spec().error_function));
  if (l.batch_normalization) return "is not supported with BatchNormalization";
  if (!l.skips.empty()) return "is not supported with Skip";
  if (l.delta_norm > 0.0f) return "is not supported with DeltaNorm";
  if (fc->connections().size() != 1)
    return "needs exactly one Source, not " + std::to_string(fc->connections().size());
  const Connection& c = *fc->connections()[0];
  if (c.shared) return "is not supported with SharedWeights";
  if (c.users > 1) return "is not supported on a layer whose weights other layers share";
  if (c.source->has_sparse_output())
    return "needs a dense source (a Hidden layer), but '" + c.source->name() +
           "' is a sparse input";
  if (!targets.is_sparse())
    return "needs sparse targets, but dataset '" + targets.name + "' is dense";
  return "";
}

// The targets' column numbers replaced by their places among columns[0, positives) (sorted,
// holding every target column), and the batch made as wide as `columns`.
void to_places(SparseBatch& targets, const std::vector<uint32_t>& columns, uint32_t positives) {
  targets.cols = static_cast<uint32_t>(columns.size());
  const auto first = columns.begin(), last = first + positives;
  for (uint32_t& j : targets.index)
    j = static_cast<uint32_t>(std::lower_bound(first, last, j) - first);
}

}  // namespace

std::unique_ptr<SampledOutput> SampledOutput::create(Network& net, const BoundData& data,
                                                     uint64_t seed, Communicator* comm) {
  std::unique_ptr<SampledOutput> out;
  for (size_t o = 0; o < data.outputs.size(); ++o) {
    Layer& l = net.layer(data.outputs[o].layer);
    if (!l.spec().sampling.enabled()) continue;
    if (out)
      throw ConfigError(where(net.spec(), l.spec()) + " is supported on one output layer only; '" +
                        out->layer().name() + "' has it too");
    const std::string why = obstacle(net, l, *data.outputs[o].dataset);
    if (!why.empty()) throw ConfigError(where(net.spec(), l.spec()) + " " + why);
    out.reset(new SampledOutput(net, data, o, seed, comm));
  }
  return out;
}

SampledOutput::SampledOutput(Network& net, const BoundData& data, size_t output, uint64_t seed,
                             Communicator* comm)
    : net_(net),
      layer_(dynamic_cast<FullyConnectedLayer&>(net.layer(data.outputs[output].layer))),
      connection_(*layer_.connections()[0]),
      output_(output),
      slot_(data.inputs.size() + output),
      seed_(seed),
      comm_(comm && comm->size() > 1 ? comm : nullptr),
      loss_(loss_params(net.spec(), layer_.spec(), data.outputs[output].dataset)),
      softmax_(layer_.spec().activation == Activation::SoftMax),
      negatives_(layer_.spec().sampling.negatives),
      sampler_(NegativeSampler::for_spec(layer_.spec().sampling, *data.outputs[output].dataset,
                                         layer_.units())),
      split_(layer_.sharded()) {
  // The full layer's gradient is never formed in training (backward() makes compact ones).
  connection_.weights.grad.reset();
}

SampledOutput::~SampledOutput() {
  // Leave the network as a network without this object expects it. (The training loop restores
  // the layout itself; this covers an object destroyed between a step and that.)
  try {
    restore_weights();
    if (connection_.weights.grad.empty())
      connection_.weights.grad.resize(net_.backend(), connection_.weights.size());
  } catch (...) {
  }
}

void SampledOutput::transpose_in_place(Backend& be, DeviceArray<float>& a, uint32_t rows,
                                       uint32_t cols) {
  if (a.empty()) return;
  NN_CHECK(a.size() == size_t(rows) * cols, "transpose_in_place: size mismatch");
  // Through a copy, not by swapping arrays: other networks (validation's) borrow W's memory.
  scratch_.resize(be, a.size());
  be.transpose(a.data(), rows, cols, scratch_.data());
  be.copy(a.data(), scratch_.data(), a.size() * sizeof(float));
  scratch_.reset();
}

void SampledOutput::transpose_weights(Backend& be) {
  if (transposed_) return;
  const uint32_t n_in = connection_.source->units(), n_out = layer_.local_units();
  Parameter& w = connection_.weights;
  transpose_in_place(be, w.value, n_in, n_out);
  for (DeviceArray<float>& state : w.state) transpose_in_place(be, state, n_in, n_out);
  transposed_ = true;
}

void SampledOutput::restore_weights() {
  if (!transposed_) return;
  Backend& be = net_.backend();
  const uint32_t n_in = connection_.source->units(), n_out = layer_.local_units();
  Parameter& w = connection_.weights;
  transpose_in_place(be, w.value, n_out, n_in);
  for (DeviceArray<float>& state : w.state) transpose_in_place(be, state, n_out, n_in);
  transposed_ = false;
}

std::string SampledOutput::describe() const {
  const SamplingSpec& s = layer_.spec().sampling;
  return "sampled output: layer '" + layer_.name() + "' computes each minibatch's targets and " +
         std::to_string(s.negatives) + " " + to_string(s.distribution) + " negatives of its " +
         std::to_string(layer_.units()) + " units (" +
         (softmax_ ? "log-Q corrected SoftMax" : "weighted Sigmoid negatives") +
         (split_ ? "; split over " + std::to_string(layer_.shard().ranks) + " ranks" : "") +
         "; validation and prediction use the whole layer)";
}

bool SampledOutput::owns(const Parameter* p) const {
  return p == &connection_.weights || p == &connection_.bias;
}

void SampledOutput::forward_loss(const LayerContext& ctx, const HostBatch& batch,
                                 const HostBatch* whole, double* sum) {
  have_gradients_ = false;
  if (split_) {
    NN_CHECK(whole != nullptr, "a split sampled output layer without the whole minibatch");
    return forward_split(ctx, *whole, sum);
  }
  Backend& be = ctx.backend;
  transpose_weights(be);
  const SparseBatch& targets = batch.sparse[slot_];
  cols_ = sample_columns(positives(targets), sampler_, negatives_, seed_, ctx.step, layer_.index());
  rows_ = ctx.rows;
  global_rows_ = ctx.all_rows();
  x_ = connection_.source->activations();
  compact_targets_ = targets;
  to_places(compact_targets_, cols_.columns, cols_.positives);
  const TargetView& tv = targets_.load_sparse(be, compact_targets_, compact_targets_.cols);
  prepare_columns(be, cols_.columns, cols_.inclusion);
  if (!cols_.columns.empty() && rows_ > 0) compute_loss(be, tv, sum);
}

void SampledOutput::forward_split(const LayerContext& ctx, const HostBatch& whole, double* sum) {
  Backend& be = ctx.backend;
  transpose_weights(be);
  const ShardInfo& sh = layer_.shard();
  const SparseBatch& targets = whole.sparse[slot_];
  // The same S on every rank: the whole minibatch's targets and the same draws.
  cols_ = sample_columns(targets, sampler_, negatives_, seed_, ctx.step, layer_.index());
  rows_ = global_rows_ = whole.rows;
  // This rank's columns of S, in S's order (its positives sorted, then its negatives),
  // numbered within the slice.
  std::vector<uint32_t> local;
  std::vector<double> inclusion;
  uint32_t local_positives = 0;
  for (size_t k = 0; k < cols_.columns.size(); ++k) {
    const uint32_t j = cols_.columns[k];
    if (j < sh.first || j - sh.first >= sh.count) continue;
    local.push_back(j - sh.first);
    inclusion.push_back(cols_.inclusion[k]);
    if (k < cols_.positives) ++local_positives;
  }
  // The slice's target entries, numbered within the slice, then moved to their places among
  // this rank's positives; every row's target sum over the whole layer (SoftMax's targets are
  // normalised by it).
  slice_sparse_columns(targets, sh.first, sh.count, compact_targets_, row_sum_);
  to_places(compact_targets_, local, local_positives);
  TargetView tv = targets_.load_sparse(be, compact_targets_, compact_targets_.cols);
  tv.row_sum = targets_.load_row_sum(be, row_sum_);
  prepare_columns(be, local, inclusion);
  x_ = layer_.gathered_input(0, ctx);  // collective
  compute_loss(be, tv, sum);           // collective for SoftMax
}

void SampledOutput::prepare_columns(Backend& be, const std::vector<uint32_t>& columns,
                                    const std::vector<double>& inclusion) {
  const auto m = static_cast<uint32_t>(columns.size());
  const uint32_t n_in = connection_.source->units();
  columns_sum_ += m;
  ++steps_;
  index_.assign(be, columns);
  // W[:, S] (rows of the transposed W: [m][n_in]) and b[S]; for SoftMax the log-Q correction
  // joins the bias of the negatives.
  w_.resize(be, size_t(m) * n_in);
  b_.resize(be, m);
  z_.resize(be, size_t(rows_) * m);
  delta_.resize(be, size_t(rows_) * m);
  if (m == 0) return;
  be.gather_rows(connection_.weights.value.data(), n_in, index_.data(), m, w_.data());
  be.gather_rows(connection_.bias.value.data(), 1, index_.data(), m, b_.data());
  std::vector<float> correction(m, softmax_ ? 0.0f : 1.0f);
  for (uint32_t k = 0; k < m; ++k)
    if (inclusion[k] < 1.0)
      correction[k] = softmax_ ? static_cast<float>(-std::log(inclusion[k]))
                               : static_cast<float>(1.0 / inclusion[k]);
  correction_.assign(be, correction);
  step_weight_host_.assign(m, 1.0f);
  for (uint32_t k = 0; k < m; ++k)
    if (inclusion[k] < 1.0)
      step_weight_host_[k] = static_cast<float>(std::min(1.0 / inclusion[k], kMaxStepWeight));
  if (softmax_) be.axpy(m, 1.0f, correction_.data(), b_.data());
}

void SampledOutput::compute_loss(Backend& be, const TargetView& tv, double* sum) {
  const auto m = static_cast<uint32_t>(index_.size());
  const uint32_t n_in = connection_.source->units();
  const bool any = m > 0 && rows_ > 0;
  if (any) {
    be.broadcast_bias(z_.data(), b_.data(), rows_, m, /*accumulate=*/false);
    be.gemm(false, true, int(rows_), int(m), int(n_in), 1.0f, x_, int(n_in), w_.data(), int(n_in),
            1.0f, z_.data(), int(m));
  }
  if (split_ && softmax_) {
    // Normalised over every rank's columns of S; every rank takes part, with columns or not.
    layer_.sharded_softmax(be, z_.data(), rows_, m);
    if (any) be.loss_accumulate(loss_, z_.data(), tv, rows_, m, delta_.data(), sum);
  } else if (any) {
    be.activate_loss_accumulate(activation_params(layer_.spec()), loss_, z_.data(), tv, rows_, m,
                                delta_.data(), sum);
  }
  // Sigmoid: each sampled negative's terms stand for 1 / pi of the columns outside P.
  if (any && !softmax_) be.scale_columns(delta_.data(), rows_, m, correction_.data());
}

std::vector<uint32_t> SampledOutput::positives(const SparseBatch& targets) {
  if (!comm_) return targets.index;
  std::vector<uint32_t> mine = targets.index;
  std::sort(mine.begin(), mine.end());
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  std::vector<int64_t> counts(size_t(comm_->size()), 0);
  const auto count = int64_t(mine.size());
  comm_->all_gather(&count, 1, counts.data());
  std::vector<size_t> sizes(counts.begin(), counts.end());
  size_t total = 0;
  for (size_t c : sizes) total += c;
  // Column indices fit int32: a layer's units are limited far below 2^31 by its weights.
  std::vector<int32_t> send(mine.begin(), mine.end()), all(total);
  comm_->all_gather_v(send.data(), all.data(), sizes);
  return std::vector<uint32_t>(all.begin(), all.end());
}

void SampledOutput::reduce_gradients() {
  const size_t nw = grad_w_.size(), nb = grad_b_.size();
  std::vector<float> host(nw + nb, 0.0f);
  if (have_gradients_ && rows_ > 0) {
    const std::vector<float> w = grad_w_.to_host(), b = grad_b_.to_host();
    const float weight = float(double(rows_) / double(std::max<uint32_t>(global_rows_, 1)));
    for (size_t i = 0; i < nw; ++i) host[i] = w[i] * weight;
    for (size_t i = 0; i < nb; ++i) host[nw + i] = b[i] * weight;
  }
  comm_->all_reduce_sum(host.data(), host.size());
  grad_w_.upload(host.data(), nw);
  grad_b_.upload(host.data() + nw, nb);
}

void SampledOutput::backward(const LayerContext& ctx) {
  Backend& be = ctx.backend;
  const auto m = static_cast<uint32_t>(index_.size());
  Layer* src = connection_.source;
  const uint32_t n_in = src->units();
  grad_w_.resize(be, size_t(m) * n_in);
  grad_b_.resize(be, m);
  const bool any = m > 0 && rows_ > 0;
  if (any) {
    have_gradients_ = true;
    const float inv_rows = 1.0f / static_cast<float>(rows_);
    // The full layer's propagate() on the compact columns, transposed: G^T = delta^T x / rows,
    // the bias the column means, and dE/dx += delta W^T (w_ holds W[:, S]^T).
    be.gemm(true, false, int(m), int(n_in), int(rows_), inv_rows, delta_.data(), int(m), x_,
            int(n_in), 0.0f, grad_w_.data(), int(n_in));
    be.column_sums(delta_.data(), rows_, m, inv_rows, 0.0f, grad_b_.data());
  } else if (m > 0) {
    be.fill(grad_w_.data(), grad_w_.size(), 0.0f);
    be.fill(grad_b_.data(), grad_b_.size(), 0.0f);
  }
  if (!src->needs_delta()) return;
  if (split_) {
    // dE/dx of every row from this rank's columns; the ranks' parts are summed onto their rows.
    dx_.resize(be, size_t(rows_) * n_in);
    if (any)
      be.gemm(false, false, int(rows_), int(n_in), int(m), 1.0f, delta_.data(), int(m), w_.data(),
              int(n_in), 0.0f, dx_.data(), int(n_in));
    else if (!dx_.empty())
      be.fill(dx_.data(), dx_.size(), 0.0f);
    layer_.add_source_delta(ctx, 0, dx_.data());  // collective
  } else if (any) {
    be.gemm(false, false, int(rows_), int(n_in), int(m), 1.0f, delta_.data(), int(m), w_.data(),
            int(n_in), 1.0f, src->delta(), int(n_in));
  }
}

void SampledOutput::update(Optimizer& optimizer, uint64_t step, float alpha) {
  const auto m = static_cast<uint32_t>(index_.size());
  Backend& be = net_.backend();
  const uint32_t n_in = connection_.source->units();
  grad_w_.resize(be, size_t(m) * n_in);
  grad_b_.resize(be, m);
  // A split layer's ranks hold different columns, each computed from every row: nothing to sum.
  if (comm_ && !split_) reduce_gradients();
  if (weights_steps(optimizer) && m > 0) {
    step_weight_.assign(be, step_weight_host_);
    // w_ and b_ still hold this step's W[:, S] and b[S] (nothing changed them since the forward
    // pass; b_ has no correction in it: step weights are for Sigmoid only).
    weighted_update(optimizer, connection_.weights, n_in, w_.data(), grad_w_.data(), step, alpha);
    weighted_update(optimizer, connection_.bias, 1, b_.data(), grad_b_.data(), step, alpha);
    return;
  }
  // The bias ([units]) is [units][1]: its columns are rows of width 1.
  optimizer.update_rows(connection_.weights, n_in, index_.data(), m, grad_w_.data(), step, alpha);
  optimizer.update_rows(connection_.bias, 1, index_.data(), m, grad_b_.data(), step, alpha);
}

bool SampledOutput::weights_steps(const Optimizer& optimizer) const {
  switch (optimizer.settings().kind) {
    case OptimizerKind::AdaGrad:
    case OptimizerKind::RMSProp:
    case OptimizerKind::AdaDelta:
    case OptimizerKind::Adam:
      return !softmax_;
    default:  // SGD, Momentum, Nesterov move by the gradient, which carries 1 / pi already
      return false;
  }
}

void SampledOutput::weighted_update(Optimizer& optimizer, Parameter& p, uint32_t width,
                                    const float* before, const float* grad, uint64_t step,
                                    float alpha) {
  if (p.locked) return;
  Backend& be = net_.backend();
  const auto m = static_cast<uint32_t>(index_.size());
  const size_t n = size_t(width) * m;
  // Both arrays are updated as rows: the transposed weights' rows are W's columns, and the bias
  // ([units]) is [units][1].
  optimizer.update_rows(p, width, index_.data(), m, grad, step, alpha);
  after_.resize(be, n);
  be.gather_rows(p.value.data(), width, index_.data(), m, after_.data());
  // after = before + w (after - before), column by column (a compact row of after_ is a column).
  be.axpy(n, -1.0f, before, after_.data());
  be.scale_rows(after_.data(), m, width, step_weight_.data());
  be.axpy(n, 1.0f, before, after_.data());
  // WeightNorm bounds the weighted columns as update_rows bounded the unweighted ones.
  if (p.max_column_norm > 0.0f && p.norm_rows == width && !p.norm_over_rows)
    be.clip_row_norms(after_.data(), m, width, p.max_column_norm);
  be.scatter_rows(after_.data(), width, index_.data(), m, p.value.data());
}

}  // namespace nn
