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
  // The penalty terms (sparseness penalties, a Variational layer's KL term; 0 when there are
  // none) are part of what backward() differentiates, so they are part of the checked loss.
  return (losses_.evaluate(batch_, /*write_deltas=*/false) + net_.penalties(ctx)) / batch_.rows;
}

double GradientChecker::compute_analytic() {
  load_inputs(net_, data_, batch_);
  LayerContext ctx{net_.backend(), batch_.rows, options_.training, options_.seed, 1};
  net_.forward(ctx);
  const double err =
      (losses_.evaluate(batch_, /*write_deltas=*/true) + net_.penalties(ctx)) / batch_.rows;
  net_.backward(ctx);
  return err;
}

std::vector<size_t> GradientChecker::entries_to_check(const Parameter& p,
                                                      const std::vector<float>& analytic) const {
  // The entries of the logical array: a padded matrix's padding (always 0, with no gradient)
  // is not the network's and is never checked.
  std::vector<size_t> all;
  all.reserve(p.logical_size());
  for (size_t i = 0; i < analytic.size(); ++i)
    if (!p.padding.on() || i % p.padding.stride < p.padding.width) all.push_back(i);
  const std::vector<size_t> logical = all;
  const size_t n = all.size();
  if (options_.max_entries == 0 || n <= options_.max_entries) return all;

  // The largest gradients first: with wide sparse inputs most rows see no example of the batch
  // and have zero gradients, which a purely random sample would mostly pick.
  const size_t largest = options_.max_entries / 2;
  std::partial_sort(all.begin(), all.begin() + largest, all.end(), [&](size_t a, size_t b) {
    const float fa = std::fabs(analytic[a]), fb = std::fabs(analytic[b]);
    return fa > fb || (fa == fb && a < b);
  });
  std::vector<char> taken(analytic.size(), 0);
  std::vector<size_t> out(all.begin(), all.begin() + largest);
  for (size_t i : out) taken[i] = 1;
  uint64_t name_hash = 0;
  for (char c : p.name) name_hash = mix64(name_hash ^ static_cast<unsigned char>(c));
  Rng rng(mix64(options_.seed ^ name_hash));
  while (out.size() < options_.max_entries) {
    const size_t i = logical[static_cast<size_t>(rng.below(n))];
    if (taken[i]) continue;
    taken[i] = 1;
    out.push_back(i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// A step may grow to this many times epsilon * max(1, |w|) for a noisy loss; beyond that the
// tolerance takes the rest of the noise (a larger step would trade noise for truncation error).
constexpr double kMaxStepFactor = 32.0;

double scale_of(double w) {
  return std::max(1.0, std::fabs(w));
}

}  // namespace

double GradientChecker::loss_with(Parameter& p, size_t i, float w, double offset,
                                  double* step_taken) {
  // The step actually taken in float, so rounding of w + h does not bias the quotient.
  const float v = static_cast<float>(double(w) + offset);
  if (step_taken) *step_taken = double(v) - double(w);
  net_.backend().upload(p.value.data() + i, &v, sizeof(float));
  return loss();
}

double GradientChecker::noise_at(Parameter& p, size_t i, double base) {
  float w = 0.0f;
  net_.backend().download(&w, p.value.data() + i, sizeof(float));
  // Far smaller than a step: a kink inside the probe would pass for noise.
  const double delta = options_.epsilon * scale_of(w) / 64.0;
  // Five points: x = 0 (base) and four offsets; y = loss. Least squares y = a + b x.
  double x[5] = {0.0}, y[5] = {base};
  for (int k = 0, n = 1; k < 4; ++k, ++n) {
    const double offset = (k < 2 ? k - 2 : k - 1) * delta;  // -2, -1, 1, 2 deltas
    y[n] = loss_with(p, i, w, offset, &x[n]);
  }
  net_.backend().upload(p.value.data() + i, &w, sizeof(float));
  double mx = 0, my = 0;
  for (int n = 0; n < 5; ++n) mx += x[n] / 5, my += y[n] / 5;
  double sxx = 0, sxy = 0;
  for (int n = 0; n < 5; ++n) sxx += (x[n] - mx) * (x[n] - mx), sxy += (x[n] - mx) * (y[n] - my);
  const double b = sxx > 0 ? sxy / sxx : 0.0;
  double ssr = 0;
  for (int n = 0; n < 5; ++n) {
    const double r = y[n] - my - b * (x[n] - mx);
    ssr += r * r;
  }
  const double sigma = std::sqrt(ssr / 3.0);  // 5 points, 2 fitted parameters
  return std::isfinite(sigma) ? sigma : 0.0;
}

namespace {

// f'(0) from f at 0, x1 and x2 (distinct, non-zero, on one side of 0): the second-order
// one-sided difference (exact for quadratics), with the weights of the three values, whose
// norm says how much the values' noise the estimate carries.
struct OneSided {
  double slope = 0, weight_norm = 0;
};
OneSided one_sided(double f0, double x1, double f1, double x2, double f2) {
  const double c0 = -(x1 + x2) / (x1 * x2), c1 = x2 / (x1 * (x2 - x1)), c2 = -x1 / (x2 * (x2 - x1));
  return {c0 * f0 + c1 * f1 + c2 * f2, std::sqrt(c0 * c0 + c1 * c1 + c2 * c2)};
}

}  // namespace

GradientChecker::Difference GradientChecker::difference(Parameter& p, size_t i, float w, double h,
                                                        double a, double base, double noise) {
  // The allowance for a quotient whose loss values carry `noise` each, combined with weights
  // of norm `weight_norm`: noise_factor times sqrt(2) standard deviations (for the central
  // quotient, noise_factor * noise / h).
  const auto noise_allowance = [&](double weight_norm) {
    return options_.noise_factor * std::sqrt(2.0) * noise * weight_norm;
  };
  Difference d;
  double up_step = 0, down_step = 0;
  const double up = loss_with(p, i, w, h, &up_step);
  const double down = options_.central ? loss_with(p, i, w, -h, &down_step) : base;
  down_step = -down_step;
  const double span = up_step + down_step;
  d.numeric = (up - down) / span;
  d.allowed = options_.abs_tolerance + options_.rel_tolerance * std::fabs(d.numeric) +
              noise_allowance(std::sqrt(2.0) / span);  // weights +-1/span
  d.central_ok =
      std::isfinite(d.numeric) && std::isfinite(a) && std::fabs(a - d.numeric) <= d.allowed;
  if (!d.central_ok && options_.central && std::isfinite(a)) {
    // A kink (ReLU, max pooling) in [w - h, w + h] mixes two slopes in the central quotient;
    // on the side without one, the loss is smooth over twice the step, and the second-order
    // one-sided difference there is backward's gradient (on a smooth loss both sides are).
    double up2_step = 0, down2_step = 0;
    const double up2 = loss_with(p, i, w, 2 * h, &up2_step);
    const double down2 = loss_with(p, i, w, -2 * h, &down2_step);
    const OneSided right = one_sided(base, up_step, up, up2_step, up2);
    const OneSided left = one_sided(base, -down_step, down, down2_step, down2);
    for (const OneSided& side : {right, left}) {
      const double allowed = options_.abs_tolerance + options_.rel_tolerance * std::fabs(a) +
                             noise_allowance(side.weight_norm);
      if (std::isfinite(side.slope) && std::fabs(a - side.slope) <= allowed) d.kink = true;
    }
  }
  net_.backend().upload(p.value.data() + i, &w, sizeof(float));
  return d;
}

ParameterCheck GradientChecker::check(Parameter& p, const std::vector<float>& analytic) {
  if (analytic.size() != p.size())
    throw InternalError("gradient check: " + p.name + ": " + std::to_string(analytic.size()) +
                        " analytic values for " + std::to_string(p.size()) + " entries");
  Backend& be = net_.backend();
  ParameterCheck out;
  out.name = p.name;
  out.size = p.logical_size();
  const std::vector<size_t> entries = entries_to_check(p, analytic);
  if (entries.empty()) return out;
  // Losses come back from the backend as double sums of the outputs' errors; `base` is the
  // unperturbed one (one-sided differences, kinks and the noise probes need it).
  const double base = loss();
  // The noise of this array's loss: the largest of three probes (the entry with the largest
  // gradient, which moves the most outputs, and two others).
  size_t largest = entries[0];
  for (size_t i : entries)
    if (std::fabs(analytic[i]) > std::fabs(analytic[largest])) largest = i;
  double noise = noise_at(p, largest, base);
  if (entries.size() > 2) {
    noise = std::max(noise, noise_at(p, entries[entries.size() / 3], base));
    noise = std::max(noise, noise_at(p, entries[2 * entries.size() / 3], base));
  }
  out.loss_noise = noise;

  double worst_passed = -1.0, worst_failed = -1.0;
  EntryCheck passed_worst;
  for (size_t i : entries) {
    float orig = 0.0f;
    be.download(&orig, p.value.data() + i, sizeof(float));
    // The step: relative to the entry, and large enough that the noise over it stays within
    // half the absolute tolerance (up to kMaxStepFactor times the plain step).
    const double plain = options_.epsilon * scale_of(orig);
    const double for_noise = options_.abs_tolerance > 0
                                 ? 2.0 * options_.noise_factor * noise / options_.abs_tolerance
                                 : 0.0;
    const double h = std::min(std::max(plain, for_noise), kMaxStepFactor * plain);
    out.max_step = std::max(out.max_step, h);
    const double a = analytic[i];
    // Kinks on both sides of w (several ReLU rows switching within the step) spoil every
    // difference at this step: a step 8 times smaller (8 times the noise allowance, far fewer
    // kinks) gets one more try.
    const Difference first = difference(p, i, orig, h, a, base, noise);
    Difference d = first;
    int retry = 0;
    if (options_.central && !d.passed() && std::isfinite(a))
      d = difference(p, i, orig, h / 8.0, a, base, noise), retry = 1;
    const bool ok = d.passed();
    if (ok && (d.kink || retry > 0)) ++out.kinks;
    const double numeric = ok ? d.numeric : first.numeric;
    const double allowed = ok ? d.allowed : first.allowed;
    const double error = std::fabs(a - numeric);
    ++out.checked;
    if (!ok) ++out.failures;
    out.max_error = std::max(out.max_error, std::isfinite(error) ? error : HUGE_VAL);
    // The worst entry: the failure furthest outside its tolerance, or without failures the
    // entry closest to it.
    const double ratio = std::isfinite(error) ? error / allowed : HUGE_VAL;
    double& worst_ratio = ok ? worst_passed : worst_failed;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      (ok ? passed_worst : out.worst) = {i, a, numeric};
    }
  }
  if (out.failures == 0) out.worst = passed_worst;
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
  if (c.kinks) s += ", " + std::to_string(c.kinks) + " next to a kink (one-sided or smaller step)";
  std::snprintf(buf, sizeof buf, ", loss noise %.2g, step up to %.2g", c.loss_noise, c.max_step);
  s += buf;
  if (!c.passed()) {
    std::snprintf(buf, sizeof buf,
                  "; %zu outside the tolerance, worst [%zu]: backward %.6g, finite difference %.6g",
                  c.failures, c.worst.index, c.worst.analytic, c.worst.numeric);
    s += buf;
  }
  return s;
}

}  // namespace nn
