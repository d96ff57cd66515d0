// Hyper-parameters of a training run (see hyper_parameters.h).
#include "train/hyper_parameters.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/enums.h"
#include "train/row_sparse.h"

namespace nn {
namespace {

// A float setting with a float's digits (0.025, not 0.02500000037252903), as the epoch log
// prints the learning rate.
double float_value(float v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", double(v));
  return std::strtod(text, nullptr);
}

// A count as a number while a double holds it exactly, else as text.
HyperParameter count(const std::string& name, uint64_t v) {
  if (v <= (uint64_t(1) << 53)) return {name, double(v)};
  return {name, std::to_string(v)};
}

}  // namespace

std::vector<HyperParameter> hyper_parameters(const TrainOptions& o, const NetworkSpec& spec) {
  const OptimizerSettings& opt = o.optimizer;
  std::vector<HyperParameter> h = {
      {"optimizer", std::string(to_string(opt.kind))},
      {"alpha", float_value(opt.alpha)},
      {"lambda", float_value(opt.lambda)},
      {"lambda1", float_value(opt.lambda1)},
      {"mu", float_value(opt.mu)},
      {"mu1", float_value(opt.mu1)},
      {"decay", float_value(opt.decay)},
      count("alpha_interval", uint64_t(std::max(opt.alpha_interval, 0))),
      {"alpha_multiplier", float_value(opt.alpha_multiplier)},
      count("minibatch", o.minibatch),
      count("epochs", o.epochs),
      count("seed", o.seed),
      {"shuffle", o.shuffle},
      {"solver", std::string(o.least_squares ? "LeastSquares" : "Gradient")},
      {"sparse_update", std::string(to_string(o.sparse_update))},
      {"error_function", std::string(to_string(spec.error_function))},
      {"denoising", float_value(spec.denoising_p)}};
  if (!spec.name.empty()) h.insert(h.begin(), {"network", spec.name});
  for (const LayerSpec& l : spec.layers) {
    h.push_back(count(l.name + ".units", l.units()));
    if (l.kind != LayerKind::Input)
      h.push_back({l.name + ".activation", std::string(to_string(l.activation))});
    if (l.p_dropout > 0) h.push_back({l.name + ".dropout", float_value(l.p_dropout)});
  }
  return h;
}

}  // namespace nn
