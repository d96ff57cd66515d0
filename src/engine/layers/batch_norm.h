// Batch normalisation as a reusable component of a layer (not a layer itself): it normalises the
// layer's pre-activations [rows][channels * spatial] per channel and owns the trainable scale and
// bias (Parameters, updated by the run's optimizer like weights) and the running statistics.
//
//   fully connected layers: channels = units, spatial = 1 (per-activation mode)
//   convolutional layers:   channels = feature maps, spatial = values per map (spatial mode)
//
// Training normalises with the batch's mean and (biased) variance and updates the running
// statistics as exponential moving averages (momentum kMomentum, unbiased variance), the usual
// cuDNN/PyTorch convention; DSSTNE's running statistics equal the last minibatch's instead.
// Prediction uses the running statistics. Epsilon 1e-5; scale starts at 1, bias at 0, running
// mean at 0 and running variance at 1. The arithmetic is the backend's batch_norm_* kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "distributed/communicator.h"
#include "io/network_file.h"
#include "layers/parameter.h"

namespace nn {

class BatchNorm {
 public:
  static constexpr float kEpsilon = 1e-5f;
  static constexpr float kMomentum = 0.1f;

  // `owner` is the layer's name (parameter names, messages). Allocates parameters and
  // statistics; call initialize() or load() before use.
  BatchNorm(Backend& backend, const std::string& owner, uint32_t channels, uint32_t spatial = 1,
            float momentum = kMomentum);
  BatchNorm(const BatchNorm&) = delete;
  BatchNorm& operator=(const BatchNorm&) = delete;

  uint32_t channels() const { return channels_; }
  uint32_t spatial() const { return spatial_; }
  float momentum() const { return momentum_; }

  // Scale 1, bias 0, running mean 0, running variance 1; optimizer state dropped.
  void initialize();

  // y = normalised x (y may alias x). Training: batch statistics, saved for backward, and a
  // running-statistics update; otherwise the running statistics. With a communicator of several
  // ranks (data parallelism) the batch is the union of every rank's rows: the statistics and
  // backward's sums are all-reduced (batch_norm_distributed.cpp), so every rank normalises as
  // one process holding the whole batch would. Every rank must call it, even with 0 rows.
  void forward(uint32_t rows, bool training, const float* x, float* y,
               Communicator* comm = nullptr);
  // Backward of the last forward over the same x, in the same mode (training: through the batch
  // statistics; inference: the running statistics are constants): dx = dE/dx from dy = dE/dy
  // (dx may alias dy; dy holds per-example derivatives of the summed loss, as every layer delta
  // does). The scale and bias gradients are those of the batch-mean loss (sums over rows / rows).
  void backward(uint32_t rows, const float* x, const float* dy, float* dx,
                Communicator* comm = nullptr);

  Parameter& scale() { return scale_; }
  Parameter& bias() { return bias_; }
  std::vector<Parameter*> parameters() { return {&scale_, &bias_}; }
  const DeviceArray<float>& running_mean() const { return running_mean_; }
  const DeviceArray<float>& running_variance() const { return running_var_; }
  // The arrays inference reads besides the parameters (Layer::inference_arrays).
  std::vector<DeviceArray<float>*> statistics() { return {&running_mean_, &running_var_}; }

  // File form (DSSTNE's layer<i>_scaleBN/_biasBN/_runningMeanBN/_runningVarianceBN plus our
  // optimizer state). load() throws DataError naming the layer and the array on a size mismatch.
  LayerArrays save() const;
  void load(const LayerArrays& arrays);

 private:
  BatchNormParams params(uint32_t rows) const;
  // The cross-rank versions of the training forward and backward (host arithmetic).
  void forward_distributed(uint32_t rows, const float* x, float* y, Communicator& comm);
  void backward_distributed(uint32_t rows, const float* x, const float* dy, float* dx,
                            Communicator& comm);

  Backend& backend_;
  std::string owner_;
  uint32_t channels_, spatial_;
  float momentum_;
  Parameter scale_, bias_;
  DeviceArray<float> running_mean_, running_var_;
  DeviceArray<float> save_mean_, save_inv_std_;  // batch statistics of the last training forward
  DeviceArray<float> save_var_;                  // distributed: the batch variance
  bool last_training_ = false;                   // mode of the last forward
  bool last_distributed_ = false;                // the last training forward was cross-rank
};

}  // namespace nn
