// Finite-difference gradient check over one minibatch (see gradient_check.h).
#include "train/gradient_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/error.h"
#include "core/random.h"

namespace nn {

size_t GradientCheckReport::failures() const {
  size_t n = 0;
  for (const auto& p : parameters) n += p.passed() ? 0 : 1;
  return n;
}

GradientChecker::GradientChecker(Network& net, const BoundData& data, const HostBatch& batch,
                                 GradientCheckOptions options)
    : net_(net), data_(data), batch_(batch), options_(options), losses_(net, data) {
  if (batch_.rows == 0) throw ConfigError("gradient check: the minibatch is empty");
  if (!(options_.epsilon > 0.0)) throw ConfigError("gradient check: epsilon must be positive");
  if (net_.max_batch() < batch_.rows) net_.set_max_batch(batch_.rows);
}

double GradientChecker::loss() {
  load_inputs(net_, data_, batch_);
  LayerContext ctx{net_.backend(), batch_.rows, options_.training, options_.seed, 1};
  net_.forward(ctx);
  // The sparseness penalty (0 unless a Sparse hidden layer has one) is part of what backward()
  // differentiates, so it is part of the checked loss.
  return (losses_.evaluate(batch_, /*write_deltas=*/false) + net_.sparseness_penalty(batch_.rows)) /
         batch_.rows;
}

double GradientChecker::compute_analytic() {
  load_inputs(net_, data_, batch_);
  LayerContext ctx{net_.backend(), batch_.rows, options_.training, options_.seed, 1};
  net_.forward(ctx);
  const double err =
      (losses_.evaluate(batch_, /*write_deltas=*/true) + net_.sparseness_penalty(batch_.rows)) /
      batch_.rows;
  net_.backward(ctx);
  return err;
}

std::vector<size_t> GradientChecker::entries_to_check(const Parameter& p,
                                                      const std::vector<float>& analytic) const {
  const size_t n = analytic.size();
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), size_t(0));
  if (options_.max_entries == 0 || n <= options_.max_entries) return all;

  // The largest gradients first: with wide sparse inputs most rows see no example of the batch
  // and have zero gradients, which a purely random sample would mostly pick.
  const size_t largest = options_.max_entries / 2;
  std::partial_sort(all.begin(), all.begin() + largest, all.end(), [&](size_t a, size_t b) {
    const float fa = std::fabs(analytic[a]), fb = std::fabs(analytic[b]);
    return fa > fb || (fa == fb && a < b);
  });
  std::vector<char> taken(n, 0);
  std::vector<size_t> out(all.begin(), all.begin() + largest);
  for (size_t i : out) taken[i] = 1;
  uint64_t name_hash = 0;
  for (char c : p.name) name_hash = mix64(name_hash ^ static_cast<unsigned char>(c));
  Rng rng(mix64(options_.seed ^ name_hash));
  while (out.size() < options_.max_entries) {
    const size_t i = static_cast<size_t>(rng.below(n));
    if (taken[i]) continue;
    taken[i] = 1;
    out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

ParameterCheck GradientChecker::check(Parameter& p, const std::vector<float>& analytic) {
  if (analytic.size() != p.size())
    throw InternalError("gradient check: " + p.name + ": " + std::to_string(analytic.size()) +
                        " analytic values for " + std::to_string(p.size()) + " entries");
  Backend& be = net_.backend();
  ParameterCheck out;
  out.name = p.name;
  out.size = p.size();
  const double base = options_.central ? 0.0 : loss();
  double worst_ratio = -1.0;
  for (size_t i : entries_to_check(p, analytic)) {
    float* entry = p.value.data() + i;
    float orig = 0.0f;
    be.download(&orig, entry, sizeof(float));
    auto loss_at = [&](double offset) {
      const float v = static_cast<float>(orig + offset);
      be.upload(entry, &v, sizeof(float));
      return loss();
    };
    // The step actually taken in float, so rounding of w + eps does not bias the quotient.
    const double up_step = double(static_cast<float>(orig + options_.epsilon)) - orig;
    double numeric;
    if (options_.central) {
      const double down_step = orig - double(static_cast<float>(orig - options_.epsilon));
      const double up = loss_at(options_.epsilon);
      const double down = loss_at(-options_.epsilon);
      numeric = (up - down) / (up_step + down_step);
    } else {
      numeric = (loss_at(options_.epsilon) - base) / up_step;
    }
    be.upload(entry, &orig, sizeof(float));

    const double a = analytic[i];
    const double error = std::fabs(a - numeric);
    const double allowed = options_.abs_tolerance + options_.rel_tolerance * std::fabs(numeric);
    const bool ok = std::isfinite(numeric) && std::isfinite(a) && error <= allowed;
    ++out.checked;
    if (!ok) ++out.failures;
    out.max_error = std::max(out.max_error, std::isfinite(error) ? error : HUGE_VAL);
    const double ratio = std::isfinite(error) ? error / allowed : HUGE_VAL;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      out.worst = {i, a, numeric};
    }
  }
  return out;
}

GradientCheckReport GradientChecker::run() {
  GradientCheckReport report;
  report.rows = batch_.rows;
  report.loss = compute_analytic();
  // Copy every gradient first: the perturbed forward passes do not touch gradients today, but
  // the check must not depend on that.
  std::vector<Parameter*> params = net_.parameters();
  std::vector<std::vector<float>> grads;
  for (Parameter* p : params) grads.push_back(p->grad.to_host());
  for (size_t k = 0; k < params.size(); ++k) {
    if (params[k]->size() == 0) continue;
    report.parameters.push_back(check(*params[k], grads[k]));
  }
  return report;
}

HostBatch first_batch(const BoundData& data, uint32_t minibatch) {
  if (minibatch == 0) throw ConfigError("gradient check: the minibatch must be positive");
  const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(minibatch, data.examples));
  if (rows == 0) throw ConfigError("gradient check: the datasets hold no examples");
  std::vector<uint32_t> ids(rows);
  std::iota(ids.begin(), ids.end(), 0u);
  BatchLoader loader(data, std::vector<DenoiseSetting>(data.inputs.size()), 0);
  HostBatch hb;
  loader.assemble(ids.data(), rows, 0, /*training=*/false, hb);
  return hb;
}

std::string describe(const ParameterCheck& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %s: %zu/%zu entries checked, max |error| %.3g",
                c.passed() ? "PASS" : "FAIL", c.name.c_str(), c.checked, c.size, c.max_error);
  std::string s = buf;
  if (!c.passed()) {
    std::snprintf(buf, sizeof buf,
                  "; %zu outside the tolerance, worst [%zu]: backward %.6g, finite difference %.6g",
                  c.failures, c.worst.index, c.worst.analytic, c.worst.numeric);
    s += buf;
  }
  return s;
}

}  // namespace nn
