// Loss selection and validation.
#include "train/loss_setup.h"

#include "core/error.h"
#include "layers/layer.h"

namespace nn {

LossParams loss_params(const NetworkSpec& spec, const LayerSpec& output,
                       const ExampleSet* targets) {
  LossParams p;
  p.function = spec.error_function;
  p.activation = activation_params(output);
  p.smce_one_target = spec.smce_one_target;
  p.smce_zero_target = spec.smce_zero_target;
  p.smce_one_scale = spec.smce_one_scale;
  p.smce_zero_scale = spec.smce_zero_scale;
  p.delta_boost_one = spec.delta_boost_one;
  p.delta_boost_zero = spec.delta_boost_zero;
  p.raw_softmax_targets = spec.softmax_targets == SoftMaxTargets::Raw;
  const std::string where = (spec.source.empty() ? std::string("network") : spec.source) +
                            ": layer '" + output.name + "'";
  const Activation a = p.activation.kind;
  const bool bounded01 = a == Activation::Sigmoid || a == Activation::SoftMax;
  if (output.type == LayerType::Pooling &&
      (p.function == ErrorFunction::CrossEntropy ||
       p.function == ErrorFunction::ScaledMarginalCrossEntropy ||
       p.function == ErrorFunction::DataScaledMarginalCrossEntropy))
    throw ConfigError(where + ": ErrorFunction " + to_string(p.function) +
                      " needs outputs in (0,1), but a Pooling layer applies no activation "
                      "function; use L1 or L2, or put a Sigmoid or SoftMax layer after it");
  switch (p.function) {
    case ErrorFunction::CrossEntropy:
    case ErrorFunction::ScaledMarginalCrossEntropy:
      if (!bounded01)
        throw ConfigError(where + ": ErrorFunction " + to_string(p.function) +
                          " needs outputs in (0,1): use Activation Sigmoid or SoftMax, not " +
                          to_string(a));
      break;
    case ErrorFunction::DataScaledMarginalCrossEntropy:
      if (a != Activation::Sigmoid)
        throw ConfigError(where +
                          ": ErrorFunction DataScaledMarginalCrossEntropy needs "
                          "Activation Sigmoid, not " +
                          std::string(to_string(a)));
      if (targets && !targets->is_sparse())
        throw ConfigError(where +
                          ": ErrorFunction DataScaledMarginalCrossEntropy needs sparse "
                          "targets; dataset '" +
                          targets->name + "' is dense");
      break;
    default:
      break;
  }
  return p;
}

}  // namespace nn
