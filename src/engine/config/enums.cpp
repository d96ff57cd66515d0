// Canonical names of the config enumerations (DSSTNE's spellings) and the name tables used to
// parse them from config files, aliases included.
#include <cctype>

#include "config/enum_names.h"

namespace nn {

const char* to_string(LayerKind v) {
  switch (v) {
    case LayerKind::Input:
      return "Input";
    case LayerKind::Hidden:
      return "Hidden";
    case LayerKind::Output:
      return "Output";
    case LayerKind::Target:
      return "Target";
  }
  return "?";
}

const char* to_string(LayerType v) {
  switch (v) {
    case LayerType::FullyConnected:
      return "FullyConnected";
    case LayerType::Convolutional:
      return "Convolutional";
    case LayerType::Pooling:
      return "Pooling";
    case LayerType::Variational:
      return "Variational";
  }
  return "?";
}

const char* to_string(RowNormalization v) {
  switch (v) {
    case RowNormalization::None:
      return "None";
    case RowNormalization::L2:
      return "L2";
  }
  return "?";
}

const char* to_string(SoftMaxTargets v) {
  switch (v) {
    case SoftMaxTargets::Normalized:
      return "Normalized";
    case SoftMaxTargets::Raw:
      return "Raw";
  }
  return "?";
}

const char* to_string(Precision v) {
  switch (v) {
    case Precision::FP32:
      return "FP32";
    case Precision::BF16:
      return "BF16";
  }
  return "?";
}

const char* to_string(Activation v) {
  switch (v) {
    case Activation::Sigmoid:
      return "Sigmoid";
    case Activation::Tanh:
      return "Tanh";
    case Activation::RectifiedLinear:
      return "RectifiedLinear";
    case Activation::Linear:
      return "Linear";
    case Activation::ParametricRectifiedLinear:
      return "ParametricRectifiedLinear";
    case Activation::SoftPlus:
      return "SoftPlus";
    case Activation::SoftSign:
      return "SoftSign";
    case Activation::SoftMax:
      return "SoftMax";
    case Activation::ReluMax:
      return "RELUMax";
    case Activation::LinearMax:
      return "LinearMax";
    case Activation::ExponentialLinear:
      return "ExponentialLinear";
    case Activation::LeakyRectifiedLinear:
      return "LeakyRectifiedLinear";
    case Activation::ScaledExponentialLinear:
      return "ScaledExponentialLinear";
    case Activation::MaxOut:
      return "MaxOut";
  }
  return "?";
}

const char* to_string(ErrorFunction v) {
  switch (v) {
    case ErrorFunction::L1:
      return "L1";
    case ErrorFunction::L2:
      return "L2";
    case ErrorFunction::CrossEntropy:
      return "CrossEntropy";
    case ErrorFunction::ScaledMarginalCrossEntropy:
      return "ScaledMarginalCrossEntropy";
    case ErrorFunction::DataScaledMarginalCrossEntropy:
      return "DataScaledMarginalCrossEntropy";
    case ErrorFunction::Hinge:
      return "Hinge";
    case ErrorFunction::L2Hinge:
      return "L2Hinge";
  }
  return "?";
}

const char* to_string(WeightInit v) {
  switch (v) {
    case WeightInit::Xavier:
      return "Xavier";
    case WeightInit::CaffeXavier:
      return "CaffeXavier";
    case WeightInit::Gaussian:
      return "Gaussian";
    case WeightInit::Uniform:
      return "Uniform";
    case WeightInit::UnitBall:
      return "UnitBall";
    case WeightInit::Constant:
      return "Constant";
    case WeightInit::SELU:
      return "SELU";
  }
  return "?";
}

const char* to_string(PoolingFunction v) {
  switch (v) {
    case PoolingFunction::None:
      return "None";
    case PoolingFunction::Max:
      return "Max";
    case PoolingFunction::Average:
      return "Average";
    case PoolingFunction::LRN:
      return "LRN";
    case PoolingFunction::Maxout:
      return "Maxout";
    case PoolingFunction::DotProduct:
      return "DotProduct";
    case PoolingFunction::Cosine:
      return "Cosine";
    case PoolingFunction::Stochastic:
      return "Stochastic";
    case PoolingFunction::LCN:
      return "LCN";
    case PoolingFunction::GlobalTemporal:
      return "GlobalTemporal";
  }
  return "?";
}

const char* to_string(NetworkKind v) {
  switch (v) {
    case NetworkKind::FeedForward:
      return "FeedForward";
    case NetworkKind::AutoEncoder:
      return "AutoEncoder";
  }
  return "?";
}

const char* to_string(OptimizerKind v) {
  switch (v) {
    case OptimizerKind::SGD:
      return "SGD";
    case OptimizerKind::Momentum:
      return "Momentum";
    case OptimizerKind::AdaGrad:
      return "AdaGrad";
    case OptimizerKind::Nesterov:
      return "Nesterov";
    case OptimizerKind::RMSProp:
      return "RMSProp";
    case OptimizerKind::AdaDelta:
      return "AdaDelta";
    case OptimizerKind::Adam:
      return "Adam";
  }
  return "?";
}

const char* to_string(Command v) {
  switch (v) {
    case Command::Train:
      return "Train";
    case Command::Predict:
      return "Predict";
    case Command::Validate:
      return "Validate";
    case Command::Serve:
      return "Serve";
  }
  return "?";
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

// One value a config may name, with the extra spelling DSSTNE accepts for it (if any).
template <class E>
struct NameEntry {
  E value;
  const char* alias = nullptr;
};

// The accepted names per enumeration, in the order they are listed to users. The canonical name
// (to_string) is always accepted; the aliases are those DSSTNE's JSON reader
// (LoadNeuralNetworkJSON in NNNetwork.cpp) and CDL reader (utils/cdl.cpp) accept.
template <class E>
struct Names;

template <>
struct Names<LayerKind> {
  static constexpr NameEntry<LayerKind> table[] = {
      {LayerKind::Input}, {LayerKind::Hidden}, {LayerKind::Output}, {LayerKind::Target}};
};

template <>
struct Names<LayerType> {
  static constexpr NameEntry<LayerType> table[] = {{LayerType::FullyConnected},
                                                   {LayerType::Convolutional},
                                                   {LayerType::Pooling},
                                                   {LayerType::Variational}};
};

template <>
struct Names<RowNormalization> {
  static constexpr NameEntry<RowNormalization> table[] = {{RowNormalization::None},
                                                          {RowNormalization::L2}};
};

template <>
struct Names<SoftMaxTargets> {
  static constexpr NameEntry<SoftMaxTargets> table[] = {{SoftMaxTargets::Normalized},
                                                        {SoftMaxTargets::Raw}};
};

template <>
struct Names<Precision> {
  static constexpr NameEntry<Precision> table[] = {{Precision::FP32}, {Precision::BF16}};
};

// ParametricRectifiedLinear (PRelu) is absent: DSSTNE rejects it.
template <>
struct Names<Activation> {
  static constexpr NameEntry<Activation> table[] = {{Activation::Sigmoid},
                                                    {Activation::Tanh},
                                                    {Activation::Linear},
                                                    {Activation::RectifiedLinear, "ReLU"},
                                                    {Activation::LeakyRectifiedLinear, "LReLU"},
                                                    {Activation::ExponentialLinear, "ELU"},
                                                    {Activation::ScaledExponentialLinear, "SELU"},
                                                    {Activation::SoftMax},
                                                    {Activation::SoftPlus},
                                                    {Activation::SoftSign},
                                                    {Activation::ReluMax},
                                                    {Activation::LinearMax},
                                                    {Activation::MaxOut}};
};

template <>
struct Names<ErrorFunction> {
  static constexpr NameEntry<ErrorFunction> table[] = {
      {ErrorFunction::L1},
      {ErrorFunction::L2},
      {ErrorFunction::L2Hinge},
      {ErrorFunction::Hinge},
      {ErrorFunction::CrossEntropy, "Cross Entropy"},
      {ErrorFunction::ScaledMarginalCrossEntropy},
      {ErrorFunction::DataScaledMarginalCrossEntropy}};
};

template <>
struct Names<WeightInit> {
  static constexpr NameEntry<WeightInit> table[] = {
      {WeightInit::Xavier},  {WeightInit::CaffeXavier}, {WeightInit::Gaussian},
      {WeightInit::Uniform}, {WeightInit::UnitBall},    {WeightInit::Constant},
      {WeightInit::SELU}};
};

// None, Stochastic, LCN and GlobalTemporal are absent: DSSTNE rejects them in configs.
template <>
struct Names<PoolingFunction> {
  static constexpr NameEntry<PoolingFunction> table[] = {
      {PoolingFunction::Max},
      {PoolingFunction::Average},
      {PoolingFunction::LRN, "LocalResponseNormalization"},
      {PoolingFunction::Maxout},
      {PoolingFunction::DotProduct},
      {PoolingFunction::Cosine}};
};

template <>
struct Names<NetworkKind> {
  static constexpr NameEntry<NetworkKind> table[] = {{NetworkKind::FeedForward},
                                                     {NetworkKind::AutoEncoder}};
};

template <>
struct Names<OptimizerKind> {
  static constexpr NameEntry<OptimizerKind> table[] = {
      {OptimizerKind::SGD},     {OptimizerKind::Momentum}, {OptimizerKind::Nesterov},
      {OptimizerKind::AdaGrad}, {OptimizerKind::AdaDelta}, {OptimizerKind::RMSProp},
      {OptimizerKind::Adam}};
};

template <>
struct Names<Command> {
  static constexpr NameEntry<Command> table[] = {
      {Command::Train}, {Command::Predict}, {Command::Validate}, {Command::Serve}};
};

}  // namespace

template <class E>
std::optional<E> enum_from_string(std::string_view text) {
  const std::string wanted = to_lower(text);
  for (const auto& entry : Names<E>::table) {
    if (to_lower(to_string(entry.value)) == wanted) return entry.value;
    if (entry.alias && to_lower(entry.alias) == wanted) return entry.value;
  }
  return std::nullopt;
}

template <class E>
std::string enum_choices() {
  std::string out;
  for (const auto& entry : Names<E>::table) {
    if (!out.empty()) out += ", ";
    out += to_string(entry.value);
    if (entry.alias) out += std::string(" (") + entry.alias + ")";
  }
  return out;
}

// The enumerations the config layer names; other instantiations would not link.
#define NN_INSTANTIATE_ENUM_NAMES(E)                               \
  template std::optional<E> enum_from_string<E>(std::string_view); \
  template std::string enum_choices<E>();
NN_INSTANTIATE_ENUM_NAMES(LayerKind)
NN_INSTANTIATE_ENUM_NAMES(LayerType)
NN_INSTANTIATE_ENUM_NAMES(Activation)
NN_INSTANTIATE_ENUM_NAMES(ErrorFunction)
NN_INSTANTIATE_ENUM_NAMES(WeightInit)
NN_INSTANTIATE_ENUM_NAMES(PoolingFunction)
NN_INSTANTIATE_ENUM_NAMES(NetworkKind)
NN_INSTANTIATE_ENUM_NAMES(OptimizerKind)
NN_INSTANTIATE_ENUM_NAMES(Command)
NN_INSTANTIATE_ENUM_NAMES(RowNormalization)
NN_INSTANTIATE_ENUM_NAMES(SoftMaxTargets)
NN_INSTANTIATE_ENUM_NAMES(Precision)
#undef NN_INSTANTIATE_ENUM_NAMES

}  // namespace nn
