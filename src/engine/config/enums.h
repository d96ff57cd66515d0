// Enumerations shared by configs, network files and kernels. Numeric values are DSSTNE's codes
// (its engine/NNEnum.h), because they are stored in network .nc files (docs/file-formats.md,
// "Network files").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nn {

enum class LayerKind : uint32_t { Input = 0, Hidden = 1, Output = 2, Target = 3 };
// Variational is ours (DSSTNE has 0-2): a Gaussian bottleneck (layers/variational_layer.h).
enum class LayerType : uint32_t {
  FullyConnected = 0,
  Convolutional = 1,
  Pooling = 2,
  Variational = 3,
};

// Ours: what an Input layer does to each example's row before anything else sees it (the layer
// key "Normalize"): nothing, or divide it by its Euclidean length.
enum class RowNormalization : uint32_t { None = 0, L2 = 1 };

// Ours: the targets of a SoftMax output under CrossEntropy (and ScaledMarginalCrossEntropy) when
// they are sparse (the network key "SoftMaxTargets"): divided by their row sum (Normalized, so
// each example's targets sum to 1), or as stored (Raw: the multinomial log-likelihood of the
// row, -sum_i x_i log p_i, the loss of Mult-DAE and Mult-VAE).
enum class SoftMaxTargets : uint32_t { Normalized = 0, Raw = 1 };

// Ours: the arithmetic of the dense matrix products (the network and CDL key "Precision", the
// tools' --precision): FP32 throughout, or BF16 operands with FP32 accumulation and FP32 master
// weights (docs/wide-outputs.md, "BF16 arithmetic"). Not stored in network files.
enum class Precision : uint32_t { FP32 = 0, BF16 = 1 };

enum class Activation : uint32_t {
  Sigmoid = 0,
  Tanh = 1,
  RectifiedLinear = 2,
  Linear = 3,
  ParametricRectifiedLinear = 4,
  SoftPlus = 5,
  SoftSign = 6,
  SoftMax = 7,
  ReluMax = 8,
  LinearMax = 9,
  ExponentialLinear = 10,
  LeakyRectifiedLinear = 11,
  ScaledExponentialLinear = 12,
  // Ours (DSSTNE rejects MaxOut): the max over groups of Maxout.k pre-activations.
  MaxOut = 13,
};

enum class ErrorFunction : uint32_t {
  L1 = 0,
  L2 = 1,
  CrossEntropy = 2,
  ScaledMarginalCrossEntropy = 3,
  DataScaledMarginalCrossEntropy = 4,
  Hinge = 5,
  L2Hinge = 6,
};

enum class WeightInit : uint32_t {
  Xavier = 0,
  CaffeXavier = 1,
  Gaussian = 2,
  Uniform = 3,
  UnitBall = 4,
  Constant = 5,
  SELU = 6,
};

enum class PoolingFunction : uint32_t {
  None = 0,
  Max = 1,
  Average = 2,
  LRN = 3,
  Maxout = 4,
  DotProduct = 5,
  Cosine = 6,
  Stochastic = 7,
  LCN = 8,
  GlobalTemporal = 9,
};

enum class NetworkKind : uint32_t { FeedForward = 0, AutoEncoder = 1 };

// Optimizer codes follow DSSTNE's TrainingMode order.
enum class OptimizerKind : uint32_t {
  SGD = 0,
  Momentum = 1,
  AdaGrad = 2,
  Nesterov = 3,
  RMSProp = 4,
  AdaDelta = 5,
  Adam = 6,
};

enum class Command : uint32_t { Train = 0, Predict = 1, Validate = 2, Serve = 3 };

// Canonical names (as DSSTNE spells them) for messages and for writing configs back.
const char* to_string(LayerKind v);
const char* to_string(LayerType v);
const char* to_string(Activation v);
const char* to_string(ErrorFunction v);
const char* to_string(WeightInit v);
const char* to_string(PoolingFunction v);
const char* to_string(NetworkKind v);
const char* to_string(OptimizerKind v);
const char* to_string(Command v);
const char* to_string(RowNormalization v);
const char* to_string(SoftMaxTargets v);
const char* to_string(Precision v);

}  // namespace nn
