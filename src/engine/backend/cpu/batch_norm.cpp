// CpuBackend batch normalisation: training forward (batch statistics, running averages),
// inference forward (running statistics) and the backward of each, over
// [rows][channels * spatial].
//
// Each task owns a fixed block of channels and reduces them over every row in order, in
// double, so results do not depend on the thread count. Per-activation mode (spatial = 1, the
// fully connected case) walks rows with a vectorised loop over the block's channels; spatial
// mode walks each channel's contiguous run of `spatial` values. Per-channel and per-element
// arithmetic: backend/math/batch_norm_math.h, which the CUDA backend's own kernels use too.
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/batch_norm_math.h"

namespace nn {
namespace {

constexpr size_t kParallelMin = size_t(1) << 15;
constexpr uint32_t kBlock = 256;  // channels per task when spatial = 1

// The channel block [lo, hi) of a task.
struct Block {
  uint32_t lo, hi;
  uint32_t size() const { return hi - lo; }
};

uint32_t channel_block(const BatchNormParams& p) {
  if (p.spatial == 1) return kBlock;
  // Enough channels per task to give it a few thousand values per row.
  return std::max<uint32_t>(1, std::min<uint32_t>(kBlock, 4096 / p.spatial));
}

template <typename F>
void for_blocks(cpu::ThreadPool& pool, const BatchNormParams& p, const F& body) {
  const uint32_t per = channel_block(p);
  const uint32_t blocks = (p.channels + per - 1) / per;
  auto run = [&](size_t b) {
    const uint32_t lo = uint32_t(b) * per;
    body(Block{lo, std::min(p.channels, lo + per)});
  };
  const size_t work = size_t(p.rows) * p.channels * p.spatial;
  if (work >= kParallelMin && blocks > 1)
    pool.run(blocks, run);
  else
    for (uint32_t b = 0; b < blocks; ++b) run(b);
}

// acc[c - lo] += f(x value, c) over every value of the block's channels, rows in order.
template <typename F>
void reduce(const BatchNormParams& p, Block k, const float* x, double* acc, const F& f) {
  const size_t stride = size_t(p.channels) * p.spatial;
  for (uint32_t j = 0; j < k.size(); ++j) acc[j] = 0.0;
  for (uint32_t r = 0; r < p.rows; ++r) {
    const float* row = x + r * stride;
    if (p.spatial == 1) {
#pragma omp simd
      for (uint32_t j = 0; j < k.size(); ++j) acc[j] += f(double(row[k.lo + j]), k.lo + j);
    } else {
      for (uint32_t j = 0; j < k.size(); ++j) {
        const float* v = row + size_t(k.lo + j) * p.spatial;
        double s = 0.0;
#pragma omp simd reduction(+ : s)
        for (uint32_t i = 0; i < p.spatial; ++i) s += f(double(v[i]), k.lo + j);
        acc[j] += s;
      }
    }
  }
}

// out[i] = a[c] * (in[i] - shift[c]) + b[c] over the block's values (math::bn_affine).
void affine(const BatchNormParams& p, Block k, const float* in, float* out, const float* shift,
            const float* a, const float* b) {
  const size_t stride = size_t(p.channels) * p.spatial;
  for (uint32_t r = 0; r < p.rows; ++r) {
    if (p.spatial == 1) {
      const float* x = in + r * stride + k.lo;
      float* y = out + r * stride + k.lo;
#pragma omp simd
      for (uint32_t j = 0; j < k.size(); ++j) y[j] = math::bn_affine(x[j], a[j], shift[j], b[j]);
    } else {
      for (uint32_t j = 0; j < k.size(); ++j) {
        const float* x = in + r * stride + size_t(k.lo + j) * p.spatial;
        float* y = out + r * stride + size_t(k.lo + j) * p.spatial;
        const float aj = a[j], bj = b[j], sj = shift[j];
#pragma omp simd
        for (uint32_t i = 0; i < p.spatial; ++i) y[i] = math::bn_affine(x[i], aj, sj, bj);
      }
    }
  }
}

}  // namespace

void CpuBackend::batch_norm_forward_training(const BatchNormParams& p, const float* x, float* y,
                                             const float* scale, const float* bias,
                                             float* running_mean, float* running_var,
                                             float* save_mean, float* save_inv_std) {
  if (p.rows == 0 || p.channels == 0 || p.spatial == 0) return;
  const double n = double(p.rows) * p.spatial;
  for_blocks(*pool_, p, [&](Block k) {
    double mean[kBlock], var[kBlock];
    reduce(p, k, x, mean, [](double v, uint32_t) { return v; });
    for (uint32_t j = 0; j < k.size(); ++j) mean[j] /= n;
    // Two passes (mean, then squared deviations): no cancellation for large means.
    const double* m = mean;
    const uint32_t lo = k.lo;
    reduce(p, k, x, var, [m, lo](double v, uint32_t c) {
      const double d = v - m[c - lo];
      return d * d;
    });
    float shift[kBlock], a[kBlock], b[kBlock];
    for (uint32_t j = 0; j < k.size(); ++j) {
      const uint32_t c = k.lo + j;
      const math::BnTrainChannel t = math::bn_training_channel(
          mean[j], var[j] / n, n, scale[c], running_mean[c], running_var[c], p.epsilon, p.momentum);
      save_mean[c] = t.save_mean;
      save_inv_std[c] = t.save_inv_std;
      running_mean[c] = t.running_mean;
      running_var[c] = t.running_var;
      shift[j] = t.save_mean;
      a[j] = t.gain;
      b[j] = bias[c];
    }
    affine(p, k, x, y, shift, a, b);
  });
}

void CpuBackend::batch_norm_forward_inference(const BatchNormParams& p, const float* x, float* y,
                                              const float* scale, const float* bias,
                                              const float* running_mean, const float* running_var) {
  if (p.rows == 0 || p.channels == 0 || p.spatial == 0) return;
  for_blocks(*pool_, p, [&](Block k) {
    float a[kBlock];
    for (uint32_t j = 0; j < k.size(); ++j) {
      const uint32_t c = k.lo + j;
      a[j] = math::bn_inference_channel(scale[c], running_mean[c], running_var[c], p.epsilon).gain;
    }
    affine(p, k, x, y, running_mean + k.lo, a, bias + k.lo);
  });
}

void CpuBackend::batch_norm_backward(const BatchNormParams& p, const float* x, const float* dy,
                                     const float* scale, const float* save_mean,
                                     const float* save_inv_std, float alpha, float* dx,
                                     float* dscale, float* dbias) {
  if (p.channels == 0) return;
  if (p.rows == 0 || p.spatial == 0) {
    for (uint32_t c = 0; c < p.channels; ++c) dscale[c] = dbias[c] = 0.0f;
    return;
  }
  const double n = double(p.rows) * p.spatial;
  const size_t stride = size_t(p.channels) * p.spatial;
  for_blocks(*pool_, p, [&](Block k) {
    // Sums of dy and dy * x_hat per channel. x_hat is recomputed from x and the saved
    // statistics rather than stored: one buffer fewer, the same arithmetic as the forward.
    float m[kBlock], is[kBlock];
    for (uint32_t j = 0; j < k.size(); ++j) {
      m[j] = save_mean[k.lo + j];
      is[j] = save_inv_std[k.lo + j];
    }
    double sum_dy[kBlock], sum_dy_xhat[kBlock];
    for (uint32_t j = 0; j < k.size(); ++j) sum_dy[j] = sum_dy_xhat[j] = 0.0;
    for (uint32_t r = 0; r < p.rows; ++r) {
      if (p.spatial == 1) {
        const float* g = dy + r * stride + k.lo;
        const float* v = x + r * stride + k.lo;
#pragma omp simd
        for (uint32_t j = 0; j < k.size(); ++j) {
          sum_dy[j] += g[j];
          sum_dy_xhat[j] += math::bn_dy_xhat(v[j], g[j], m[j], is[j]);
        }
        continue;
      }
      for (uint32_t j = 0; j < k.size(); ++j) {
        const size_t at = r * stride + size_t(k.lo + j) * p.spatial;
        const float mj = m[j], isj = is[j];
        double s0 = 0.0, s1 = 0.0;
#pragma omp simd reduction(+ : s0, s1)
        for (uint32_t i = 0; i < p.spatial; ++i) {
          s0 += dy[at + i];
          s1 += math::bn_dy_xhat(x[at + i], dy[at + i], mj, isj);
        }
        sum_dy[j] += s0;
        sum_dy_xhat[j] += s1;
      }
    }
    // dx = scale * inv_std * (dy - mean(dy) - x_hat * mean(dy * x_hat)).
    float gain[kBlock], mdy[kBlock], mdx[kBlock];
    for (uint32_t j = 0; j < k.size(); ++j) {
      const uint32_t c = k.lo + j;
      const math::BnGradChannel t =
          math::bn_grad_channel(sum_dy[j], sum_dy_xhat[j], n, scale[c], is[j], alpha);
      gain[j] = t.gain;
      mdy[j] = t.mean_dy;
      mdx[j] = t.mean_dy_xhat;
      dscale[c] = t.dscale;
      dbias[c] = t.dbias;
    }
    // dy[i] is read before dx[i] is written: dx may alias dy.
    for (uint32_t r = 0; r < p.rows; ++r) {
      if (p.spatial == 1) {
        const float* g = dy + r * stride + k.lo;
        const float* v = x + r * stride + k.lo;
        float* out = dx + r * stride + k.lo;
#pragma omp simd
        for (uint32_t j = 0; j < k.size(); ++j)
          out[j] = math::bn_training_dx(v[j], g[j], m[j], is[j], gain[j], mdy[j], mdx[j]);
        continue;
      }
      for (uint32_t j = 0; j < k.size(); ++j) {
        const size_t at = r * stride + size_t(k.lo + j) * p.spatial;
        const float a = gain[j], b = mdy[j], c = mdx[j], mj = m[j], isj = is[j];
#pragma omp simd
        for (uint32_t i = 0; i < p.spatial; ++i)
          dx[at + i] = math::bn_training_dx(x[at + i], dy[at + i], mj, isj, a, b, c);
      }
    }
  });
}

void CpuBackend::batch_norm_backward_inference(const BatchNormParams& p, const float* x,
                                               const float* dy, const float* scale,
                                               const float* running_mean, const float* running_var,
                                               float alpha, float* dx, float* dscale,
                                               float* dbias) {
  if (p.channels == 0) return;
  const size_t stride = size_t(p.channels) * p.spatial;
  for_blocks(*pool_, p, [&](Block k) {
    float m[kBlock], is[kBlock], gain[kBlock];
    double sum_dy[kBlock], sum_dy_xhat[kBlock];
    for (uint32_t j = 0; j < k.size(); ++j) {
      const uint32_t c = k.lo + j;
      const math::BnChannel ch =
          math::bn_inference_channel(scale[c], running_mean[c], running_var[c], p.epsilon);
      m[j] = ch.mean;
      is[j] = ch.inv_std;
      gain[j] = ch.gain;
      sum_dy[j] = sum_dy_xhat[j] = 0.0;
    }
    // The statistics are constants here: no mean terms, dx is dy scaled per channel.
    for (uint32_t r = 0; r < p.rows; ++r) {
      if (p.spatial == 1) {
        // One value per channel and row: vectorised across the block's channels (a loop per
        // channel would run one element at a time).
        const float* g = dy + r * stride + k.lo;
        const float* v = x + r * stride + k.lo;
        float* out = dx + r * stride + k.lo;
#pragma omp simd
        for (uint32_t j = 0; j < k.size(); ++j) {
          const float gj = g[j];
          sum_dy[j] += gj;
          sum_dy_xhat[j] += math::bn_dy_xhat(v[j], gj, m[j], is[j]);
          out[j] = math::bn_inference_dx(gain[j], gj);  // dy[j] read first: dx may alias dy
        }
        continue;
      }
      for (uint32_t j = 0; j < k.size(); ++j) {
        const size_t at = r * stride + size_t(k.lo + j) * p.spatial;
        const float mj = m[j], isj = is[j], gj = gain[j];
        double s0 = 0.0, s1 = 0.0;
#pragma omp simd reduction(+ : s0, s1)
        for (uint32_t i = 0; i < p.spatial; ++i) {
          const float g = dy[at + i];
          s0 += g;
          s1 += math::bn_dy_xhat(x[at + i], g, mj, isj);
          dx[at + i] = math::bn_inference_dx(gj, g);
        }
        sum_dy[j] += s0;
        sum_dy_xhat[j] += s1;
      }
    }
    for (uint32_t j = 0; j < k.size(); ++j) {
      dscale[k.lo + j] = math::bn_param_grad(alpha, sum_dy_xhat[j]);
      dbias[k.lo + j] = math::bn_param_grad(alpha, sum_dy[j]);
    }
  });
}

}  // namespace nn
