// CpuBackend variational layer kernels: the reparameterised sample, its backward pass with the
// KL term's gradient, and the KL term's value. Per-element arithmetic is
// backend/math/variational_math.h, which the CUDA twin (cuda/variational.cu) runs too, so both
// draw the same noise. Rows are independent, so the work is split over rows; the KL sum is taken
// per row (units in order, in double) and then over rows in order, whatever the thread count.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/loss_sums.h"
#include "backend/math/variational_math.h"

namespace nn {

void CpuBackend::variational_forward(const float* q, uint32_t rows, uint32_t n, bool sample,
                                     uint64_t seed, uint64_t stream, float* a) {
  if (rows == 0 || n == 0) return;
  cpu::parallel_ranges(
      *pool_, rows, std::max<size_t>(1, cpu::kMinTaskFloats / n), [=](size_t lo, size_t hi) {
        for (size_t r = lo; r < hi; ++r) {
          const float* mean = q + r * 2 * n;
          const float* logvar = mean + n;
          float* out = a + r * n;
          for (uint32_t j = 0; j < n; ++j)
            out[j] = sample ? math::variational_sample(mean[j], logvar[j],
                                                       math::gaussian_at(seed, stream, r * n + j))
                            : mean[j];
        }
      });
}

void CpuBackend::variational_backward(const float* q, const float* da, uint32_t rows, uint32_t n,
                                      bool sample, float beta, uint64_t seed, uint64_t stream,
                                      float* dq) {
  if (rows == 0 || n == 0) return;
  cpu::parallel_ranges(
      *pool_, rows, std::max<size_t>(1, cpu::kMinTaskFloats / n), [=](size_t lo, size_t hi) {
        for (size_t r = lo; r < hi; ++r) {
          const float* mean = q + r * 2 * n;
          const float* logvar = mean + n;
          float* d_mean = dq + r * 2 * n;
          float* d_logvar = d_mean + n;
          for (uint32_t j = 0; j < n; ++j) {
            const float noise = sample ? math::gaussian_at(seed, stream, r * n + j) : 0.0f;
            math::variational_gradient(mean[j], logvar[j], da[r * n + j], noise, sample, beta,
                                       d_mean[j], d_logvar[j]);
          }
        }
      });
}

void CpuBackend::variational_kl_accumulate(const float* q, uint32_t rows, uint32_t n, float beta,
                                           double* sum) {
  if (rows == 0 || n == 0) return;
  std::vector<double> per_row(rows, 0.0);
  double* out = per_row.data();
  cpu::parallel_ranges(*pool_, rows, std::max<size_t>(1, cpu::kMinTaskFloats / n),
                       [=](size_t lo, size_t hi) {
                         for (size_t r = lo; r < hi; ++r) {
                           const float* mean = q + r * 2 * n;
                           const float* logvar = mean + n;
                           double s = 0.0;
                           for (uint32_t j = 0; j < n; ++j)
                             s += math::variational_kl(mean[j], logvar[j]);
                           out[r] = s;
                         }
                       });
  double total = 0.0;
  for (double v : per_row) total += v;
  math::add_scaled(sum, double(beta), total);
}

}  // namespace nn
