// Batch normalisation across data-parallel ranks: the batch is the union of every rank's rows.
// Per-channel sums (count, sum x, sum x^2 forward; sum dy, sum dy*xhat backward) are summed
// over ranks in double precision, then each rank normalises its own rows. The arithmetic runs
// on host copies of the layer's values through Backend upload/download, so it works with any
// backend (a device implementation would keep the sums on the device and all-reduce them with a
// device communicator; the collective pattern is the same).
#include <cmath>
#include <vector>

#include "core/error.h"
#include "layers/batch_norm.h"

namespace nn {
namespace {

// Per-channel index of element i of a [rows][channels * spatial] array.
inline size_t channel_of(size_t i, uint32_t channels, uint32_t spatial) {
  return (i / spatial) % channels;
}

}  // namespace

void BatchNorm::forward_distributed(uint32_t rows, const float* x, float* y, Communicator& comm) {
  const size_t n = size_t(rows) * channels_ * spatial_;
  std::vector<float> hx(n);
  if (n) backend_.download(hx.data(), x, n * sizeof(float));
  // [count, sum per channel..., sum of squares per channel...]
  std::vector<double> sums(1 + 2 * size_t(channels_), 0.0);
  sums[0] = double(rows) * spatial_;
  for (size_t i = 0; i < n; ++i) {
    const size_t c = channel_of(i, channels_, spatial_);
    sums[1 + c] += hx[i];
    sums[1 + channels_ + c] += double(hx[i]) * hx[i];
  }
  comm.all_reduce_sum(sums.data(), sums.size());
  const double count = sums[0];
  if (count <= 0) throw InternalError("batch norm of layer '" + owner_ + "': empty batch");
  std::vector<float> mean(channels_), var(channels_), inv_std(channels_);
  for (uint32_t c = 0; c < channels_; ++c) {
    const double m = sums[1 + c] / count;
    const double v = std::max(0.0, sums[1 + channels_ + c] / count - m * m);
    mean[c] = float(m);
    var[c] = float(v);
    inv_std[c] = float(1.0 / std::sqrt(v + double(kEpsilon)));
  }
  save_mean_.upload(mean);
  save_inv_std_.upload(inv_std);
  save_var_.assign(backend_, var);
  // y with the global statistics: the inference kernel normalises with given mean and variance.
  if (n)
    backend_.batch_norm_forward_inference(params(rows), x, y, scale_.value.data(),
                                          bias_.value.data(), save_mean_.data(), save_var_.data());
  // Running statistics as the single-process kernel keeps them (unbiased variance).
  std::vector<float> rm = running_mean_.to_host(), rv = running_var_.to_host();
  const double unbias = count > 1 ? count / (count - 1) : 1.0;
  for (uint32_t c = 0; c < channels_; ++c) {
    rm[c] = float((1.0 - momentum_) * rm[c] + momentum_ * mean[c]);
    rv[c] = float((1.0 - momentum_) * rv[c] + momentum_ * double(var[c]) * unbias);
  }
  running_mean_.upload(rm);
  running_var_.upload(rv);
}

void BatchNorm::backward_distributed(uint32_t rows, const float* x, const float* dy, float* dx,
                                     Communicator& comm) {
  const size_t n = size_t(rows) * channels_ * spatial_;
  std::vector<float> hx(n), hdy(n);
  if (n) {
    backend_.download(hx.data(), x, n * sizeof(float));
    backend_.download(hdy.data(), dy, n * sizeof(float));
  }
  const std::vector<float> mean = save_mean_.to_host(), inv_std = save_inv_std_.to_host();
  const std::vector<float> scale = scale_.value.to_host();
  // [count, sum dy per channel..., sum dy * xhat per channel...]
  std::vector<double> sums(1 + 2 * size_t(channels_), 0.0);
  sums[0] = double(rows) * spatial_;
  for (size_t i = 0; i < n; ++i) {
    const size_t c = channel_of(i, channels_, spatial_);
    const double xhat = (double(hx[i]) - mean[c]) * inv_std[c];
    sums[1 + c] += hdy[i];
    sums[1 + channels_ + c] += hdy[i] * xhat;
  }
  // This rank's parameter gradients: means over its rows, as the trainer's row-weighted
  // gradient reduction expects of every parameter.
  const double alpha = rows ? 1.0 / double(rows) : 0.0;
  std::vector<float> dscale(channels_), dbias(channels_);
  for (uint32_t c = 0; c < channels_; ++c) {
    dbias[c] = float(alpha * sums[1 + c]);
    dscale[c] = float(alpha * sums[1 + channels_ + c]);
  }
  scale_.grad.upload(dscale);
  bias_.grad.upload(dbias);
  comm.all_reduce_sum(sums.data(), sums.size());
  const double count = sums[0];
  // dx = scale * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)), means over the global batch.
  for (size_t i = 0; i < n; ++i) {
    const size_t c = channel_of(i, channels_, spatial_);
    const double xhat = (double(hx[i]) - mean[c]) * inv_std[c];
    hdy[i] = float(double(scale[c]) * inv_std[c] *
                   (hdy[i] - sums[1 + c] / count - xhat * sums[1 + channels_ + c] / count));
  }
  if (n) backend_.upload(dx, hdy.data(), n * sizeof(float));
}

}  // namespace nn
