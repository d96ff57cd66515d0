// Optimizer schedule and state handling; the arithmetic is Backend::optimizer_step.
#include "train/optimizer.h"

#include <cmath>
#include <sstream>

namespace nn {

std::string describe(const OptimizerSettings& s) {
  std::ostringstream o;
  o << to_string(s.kind) << " alpha=" << s.alpha << " lambda=" << s.lambda;
  if (s.lambda1 != 0.0f) o << " lambda1=" << s.lambda1;
  if (s.kind != OptimizerKind::SGD && s.kind != OptimizerKind::AdaGrad) o << " mu=" << s.mu;
  if (s.kind == OptimizerKind::Adam) o << " mu1=" << s.mu1;
  if (s.decay > 0.0f) o << " decay=" << s.decay;
  if (s.alpha_interval > 0)
    o << " alpha*=" << s.alpha_multiplier << " every " << s.alpha_interval << " epochs";
  return o.str();
}

Optimizer::Optimizer(Backend& backend, OptimizerSettings settings)
    : backend_(backend), settings_(settings) {}

void Optimizer::prepare(Parameter& p) {
  const size_t want = static_cast<size_t>(optimizer_state_count(settings_.kind));
  bool ok = p.state.size() == want;
  for (auto& s : p.state) ok = ok && s.size() == p.size();
  if (ok) return;
  p.state.clear();
  for (size_t i = 0; i < want; ++i) {
    p.state.emplace_back(backend_, p.size());
    backend_.fill(p.state.back().data(), p.size(), 0.0f);
  }
}

float Optimizer::learning_rate(uint64_t epoch, uint64_t step) const {
  double a = settings_.alpha;
  if (settings_.alpha_interval > 0)
    a *= std::pow(double(settings_.alpha_multiplier), double(epoch / settings_.alpha_interval));
  if (settings_.decay > 0.0f) a /= 1.0 + double(settings_.decay) * double(step);
  return static_cast<float>(a);
}

OptimizerParams Optimizer::params(const Parameter& p, uint64_t step, float alpha) const {
  return params(p.regularize, step, alpha);
}

OptimizerParams Optimizer::params(bool regularize, uint64_t step, float alpha) const {
  OptimizerParams op;
  op.kind = settings_.kind;
  op.alpha = alpha;
  op.lambda = regularize ? settings_.lambda : 0.0f;
  op.lambda1 = regularize ? settings_.lambda1 : 0.0f;
  op.mu = settings_.mu;
  op.mu1 = settings_.mu1;
  op.step = step;
  return op;
}

void Optimizer::skip_rows(Parameter& p, uint32_t width, const uint32_t* rows, const float* factors,
                          uint32_t count) {
  if (p.locked || count == 0) return;
  p.bf16_written = false;
  float* s0 = p.state.size() > 0 ? p.state[0].data() : nullptr;
  float* s1 = p.state.size() > 1 ? p.state[1].data() : nullptr;
  backend_.optimizer_skip_rows(settings_.kind, p.value.data(), s0, s1, width, rows, factors, count);
}

void Optimizer::update_rows(Parameter& p, uint32_t width, const uint32_t* index, uint32_t count,
                            const float* grad, uint64_t step, float alpha) {
  if (p.locked || count == 0) return;
  p.bf16_written = false;
  float* s0 = p.state.size() > 0 ? p.state[0].data() : nullptr;
  float* s1 = p.state.size() > 1 ? p.state[1].data() : nullptr;
  backend_.optimizer_step_rows(params(p, step, alpha), p.value.data(), grad, s0, s1, width, index,
                               count);
  // The untransposed matrix is [width][units]: its columns are these rows.
  if (p.max_column_norm > 0.0f && p.norm_rows == width && !p.norm_over_rows) {
    columns_.resize(backend_, size_t(width) * count);
    backend_.gather_rows(p.value.data(), width, index, count, columns_.data());
    backend_.clip_row_norms(columns_.data(), count, width, p.max_column_norm);
    backend_.scatter_rows(columns_.data(), width, index, count, p.value.data());
  }
}

void Optimizer::update(Parameter& p, uint64_t step, float alpha) {
  if (p.locked) return;
  p.bf16_written = false;  // the forward pass converts the new values
  const OptimizerParams op = params(p, step, alpha);
  float* s0 = p.state.size() > 0 ? p.state[0].data() : nullptr;
  float* s1 = p.state.size() > 1 ? p.state[1].data() : nullptr;
  if (p.row_grad.enabled) {  // train/row_sparse.h (which leaves WeightNorm to the dense update)
    const RowGradient& rg = p.row_grad;
    backend_.optimizer_step_rows(op, p.value.data(), rg.values.data(), s0, s1, rg.width, rg.rows,
                                 rg.count);
    return;
  }
  backend_.optimizer_step(op, p.value.data(), p.grad.data(), s0, s1, p.size());
  clip_norms(p);
}

void Optimizer::clip_norms(Parameter& p) {
  if (p.max_column_norm > 0.0f && p.norm_rows > 0) {
    const auto cols = static_cast<uint32_t>(p.size() / p.norm_rows);
    if (p.norm_over_rows)  // one convolution filter per row
      backend_.clip_row_norms(p.value.data(), p.norm_rows, cols, p.max_column_norm);
    else
      backend_.clip_column_norms(p.value.data(), p.norm_rows, cols, p.max_column_norm);
  }
}

void Optimizer::update_all(const std::vector<Parameter*>& parameters, uint64_t step, float alpha) {
  multi_.clear();
  for (Parameter* p : parameters) {
    if (p->locked) continue;
    if (p->row_grad.enabled) {
      update(*p, step, alpha);
      continue;
    }
    OptimizerTensor t;
    t.w = p->value.data();
    t.g = p->grad.data();
    t.state0 = p->state.size() > 0 ? p->state[0].data() : nullptr;
    t.state1 = p->state.size() > 1 ? p->state[1].data() : nullptr;
    t.n = p->size();
    t.regularize = p->regularize;
    // A BF16 copy that a forward pass made (a dense product's matrix) is rewritten by the
    // update itself, unless WeightNorm changes the values after it.
    const bool copy = backend_.precision() == Precision::BF16 &&
                      p->value_bf16.size() == p->size() && p->max_column_norm <= 0.0f;
    t.w_bf16 = copy ? p->value_bf16.data() : nullptr;
    p->bf16_written = copy;
    multi_.push_back(t);
  }
  if (multi_.empty()) return;
  // The decay of regularized tensors; the backend zeroes it for the others (t.regularize).
  backend_.optimizer_step_multi(params(true, step, alpha), multi_.data(), multi_.size());
  for (Parameter* p : parameters)
    if (!p->locked && !p->row_grad.enabled) clip_norms(*p);
}

}  // namespace nn
