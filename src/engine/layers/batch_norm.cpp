// Batch normalisation component: parameter/statistics management around the backend kernels.
#include "layers/batch_norm.h"

#include "core/error.h"

namespace nn {

BatchNorm::BatchNorm(Backend& backend, const std::string& owner, uint32_t channels,
                     uint32_t spatial, float momentum)
    : backend_(backend),
      owner_(owner),
      channels_(channels),
      spatial_(spatial),
      momentum_(momentum) {
  NN_CHECK(channels > 0 && spatial > 0, "batch norm of layer '" + owner + "' has no channels");
  scale_.name = owner + ":scaleBN";
  bias_.name = owner + ":biasBN";
  for (Parameter* p : {&scale_, &bias_}) {
    p->value.resize(backend, channels);
    p->grad.resize(backend, channels);
    // Regularising the scale would pull it to 0 and undo the normalisation.
    p->regularize = false;
  }
  running_mean_.resize(backend, channels);
  running_var_.resize(backend, channels);
  save_mean_.resize(backend, channels);
  save_inv_std_.resize(backend, channels);
}

void BatchNorm::initialize() {
  backend_.fill(scale_.value.data(), channels_, 1.0f);
  backend_.fill(bias_.value.data(), channels_, 0.0f);
  backend_.fill(running_mean_.data(), channels_, 0.0f);
  backend_.fill(running_var_.data(), channels_, 1.0f);
  scale_.state.clear();
  bias_.state.clear();
}

BatchNormParams BatchNorm::params(uint32_t rows) const {
  BatchNormParams p;
  p.rows = rows;
  p.channels = channels_;
  p.spatial = spatial_;
  p.epsilon = kEpsilon;
  p.momentum = momentum_;
  return p;
}

void BatchNorm::forward(uint32_t rows, bool training, const float* x, float* y,
                        Communicator* comm) {
  last_training_ = training;
  last_distributed_ = training && comm && comm->size() > 1;
  if (last_distributed_)
    forward_distributed(rows, x, y, *comm);
  else if (training)
    backend_.batch_norm_forward_training(
        params(rows), x, y, scale_.value.data(), bias_.value.data(), running_mean_.data(),
        running_var_.data(), save_mean_.data(), save_inv_std_.data());
  else
    backend_.batch_norm_forward_inference(params(rows), x, y, scale_.value.data(),
                                          bias_.value.data(), running_mean_.data(),
                                          running_var_.data());
}

void BatchNorm::backward(uint32_t rows, const float* x, const float* dy, float* dx,
                         Communicator* comm) {
  const float alpha = rows ? 1.0f / static_cast<float>(rows) : 0.0f;
  if (last_distributed_) {
    NN_CHECK(comm && comm->size() > 1, "distributed batch norm backward without communicator");
    backward_distributed(rows, x, dy, dx, *comm);
  } else if (last_training_)
    backend_.batch_norm_backward(params(rows), x, dy, scale_.value.data(), save_mean_.data(),
                                 save_inv_std_.data(), alpha, dx, scale_.grad.data(),
                                 bias_.grad.data());
  else
    backend_.batch_norm_backward_inference(params(rows), x, dy, scale_.value.data(),
                                           running_mean_.data(), running_var_.data(), alpha, dx,
                                           scale_.grad.data(), bias_.grad.data());
}

LayerArrays BatchNorm::save() const {
  LayerArrays a;
  a.layer = owner_;
  a.bn_scale = scale_.value.to_host();
  a.bn_bias = bias_.value.to_host();
  a.bn_running_mean = running_mean_.to_host();
  a.bn_running_variance = running_var_.to_host();
  for (const auto& s : scale_.state) a.bn_scale_state.push_back(s.to_host());
  for (const auto& s : bias_.state) a.bn_bias_state.push_back(s.to_host());
  return a;
}

void BatchNorm::load(const LayerArrays& a) {
  const std::string where = "network file layer '" + owner_ + "': batch normalisation array ";
  auto check = [&](const char* name, size_t size) {
    if (size != channels_)
      throw DataError(where + name + " has " + std::to_string(size) + " values, expected " +
                      std::to_string(channels_) + " (one per channel)");
  };
  check("scaleBN", a.bn_scale.size());
  check("biasBN", a.bn_bias.size());
  check("runningMeanBN", a.bn_running_mean.size());
  check("runningVarianceBN", a.bn_running_variance.size());
  for (const auto& s : a.bn_scale_state) check("nn_scaleBN_state", s.size());
  for (const auto& s : a.bn_bias_state) check("nn_biasBN_state", s.size());
  scale_.value.upload(a.bn_scale);
  bias_.value.upload(a.bn_bias);
  running_mean_.upload(a.bn_running_mean);
  running_var_.upload(a.bn_running_variance);
  auto load_state = [&](Parameter& p, const std::vector<std::vector<float>>& states) {
    p.state.clear();
    for (const auto& v : states) {
      p.state.emplace_back(backend_, v.size());
      p.state.back().upload(v);
    }
  };
  load_state(scale_, a.bn_scale_state);
  load_state(bias_, a.bn_bias_state);
}

}  // namespace nn
