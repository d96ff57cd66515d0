// Micro-benchmark of the CPU backend's kernels on MovieLens-20M-shaped data (batch 256, 27,278
// outputs, hidden 128/1024, ~144 non-zeros per row). Built by CMake
// (<build>/bench/nn-bench-kernels); scripts/bench_kernels.sh runs it. Prints ms per call (median of
// N).
//
// Measured on the 2-core development VM while other builds kept its load average
// near 4, so only about one core was really available (2 threads ran no faster than 1);
// 1 thread, ms per call:
//   sgemm 256x1024x27278 112 (127 GFLOP/s), its NT/TN backward products 111/112;
//   sgemm 256x128x27278 15.6
//   sigmoid 256x27278 3.4, softmax 6.6, sigmoid backward 2.3
//   loss_and_delta CE + sigmoid, sparse targets (144/row) 7.6; L2 2.7; dense CE 11.3
//   optimizer on 28M parameters: SGD 19, Momentum 25, RMSProp 25, Adam 33 (memory-bound)
//   sparse_matmul 256 rows x 144 nnz -> 1024: 14.9, -> 128: 1.1
//   sparse_weight_gradient same shapes: 14.9 and 1.6
//   top_k k=100 over 256x27278: 18
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/random.h"
#include "data/batch.h"

using namespace nn;

namespace {

double median_ms(int reps, const std::function<void()>& fn) {
  fn();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    auto t1 = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::vector<float> random_vec(size_t n, Rng& rng, float lo, float hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = float(lo + (hi - lo) * rng.uniform());
  return v;
}

struct Csr {
  std::vector<uint32_t> row_ptr, index;
  SparseView view(uint32_t cols) const {
    SparseView v;
    v.rows = uint32_t(row_ptr.size() - 1);
    v.cols = cols;
    v.row_ptr = row_ptr.data();
    v.index = index.data();
    v.nnz = index.size();
    return v;
  }
};

Csr random_csr(uint32_t rows, uint32_t cols, uint32_t per_row, Rng& rng) {
  Csr c;
  c.row_ptr.push_back(0);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t e = 0; e < per_row; ++e) c.index.push_back(uint32_t(rng.below(cols)));
    std::sort(c.index.end() - per_row, c.index.end());
    c.row_ptr.push_back(uint32_t(c.index.size()));
  }
  return c;
}

// The same three products with BF16 operands converted once (as a training step holds them:
// the weights' copy kept, the input and delta converted once per pass), through gemm_bf16_ab,
// with the step's alpha and beta (the backward product adds into the delta, the gradient is
// scaled by 1/rows).
// Skipped with the reason where the CPU or oneDNN has no BF16 products.
void bf16_products(CpuBackend& be, int reps, uint32_t batch, uint32_t hidden, uint32_t items,
                   const std::vector<float>& a, const std::vector<float>& w,
                   std::vector<float>& c) {
  std::vector<uint16_t> a16(a.size()), w16(w.size()), c16(c.size());
  be.convert_to_bf16(a.data(), a16.data(), a.size());
  be.convert_to_bf16(w.data(), w16.data(), w.size());
  be.convert_to_bf16(c.data(), c16.data(), c.size());
  std::vector<float> dx(size_t(batch) * hidden), gw(size_t(hidden) * items);
  const double flop = 2.0 * batch * hidden * items;
  try {
    double ms = median_ms(reps, [&] {
      be.gemm_bf16_ab(false, false, batch, items, hidden, 1.0f, a16.data(), hidden, w16.data(),
                      items, 0.0f, c.data(), items);
    });
    std::printf("bf16 gemm %ux%ux%u (NN)             %8.2f ms  %6.1f GFLOP/s\n", batch, hidden,
                items, ms, flop / ms * 1e-6);
    ms = median_ms(reps, [&] {
      be.gemm_bf16_ab(false, true, batch, hidden, items, 1.0f, c16.data(), items, w16.data(), items,
                      1.0f, dx.data(), hidden);
    });
    std::printf("bf16 gemm delta*W^T %ux%ux%u (NT)   %8.2f ms  %6.1f GFLOP/s\n", batch, items,
                hidden, ms, flop / ms * 1e-6);
    ms = median_ms(reps, [&] {
      be.gemm_bf16_ab(true, false, hidden, items, batch, 1.0f / batch, a16.data(), hidden,
                      c16.data(), items, 0.0f, gw.data(), items);
    });
    std::printf("bf16 gemm X^T*delta %ux%ux%u (TN)   %8.2f ms  %6.1f GFLOP/s\n", hidden, items,
                batch, ms, flop / ms * 1e-6);
  } catch (const std::exception& e) {
    std::printf("bf16 gemm: skipped (%s)\n", e.what());
  }
}

// One core's arithmetic peak with AVX-512: FP32 FMAs (vfmadd231ps, 32 FLOPs) against BF16 dot
// products (vdpbf16ps, 64 FLOPs), each a loop of 12 independent accumulators in registers: the
// ceiling of any BF16 product without AMX, whoever writes the kernel (docs/wide-outputs.md).
#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bf16"))) void isa_peaks() {
  constexpr long kIters = 20000000;
  __m512 acc[12];
  const __m512 x = _mm512_set1_ps(1.0001f), y = _mm512_set1_ps(0.9999f);
  const __m512bh xb = (__m512bh)_mm512_set1_epi16(0x3f80);
  for (int bf16 = 0; bf16 < 2; ++bf16) {
    for (auto& a : acc) a = _mm512_setzero_ps();
    const auto t0 = std::chrono::steady_clock::now();
    for (long it = 0; it < kIters; ++it)
      for (auto& a : acc) a = bf16 ? _mm512_dpbf16_ps(a, xb, xb) : _mm512_fmadd_ps(x, y, a);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    float sum = 0.0f;
    for (auto& a : acc) sum += _mm512_reduce_add_ps(a);
    std::printf("one core's peak, %s %8.1f GFLOP/s (checksum %.3g)\n",
                bf16 ? "vdpbf16ps zmm  " : "vfmadd231ps zmm",
                double(kIters) * 12 * (bf16 ? 64 : 32) / s * 1e-9, sum);
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 0;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 10;
  CpuBackend be(threads);
  std::printf("cpu backend, %d threads, median of %d\n", be.threads(), reps);
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512bf16")) isa_peaks();
#endif
  const uint32_t batch = 256, items = 27278, nnz = 144;
  Rng rng(1);

  // Dense linear algebra: the forward product of a 1024-wide hidden layer into the outputs.
  for (uint32_t hidden : {128u, 1024u}) {
    auto a = random_vec(size_t(batch) * hidden, rng, -1, 1);
    auto w = random_vec(size_t(hidden) * items, rng, -0.1f, 0.1f);
    std::vector<float> c(size_t(batch) * items);
    double ms = median_ms(reps, [&] {
      be.gemm(false, false, batch, items, hidden, 1.0f, a.data(), hidden, w.data(), items, 0.0f,
              c.data(), items);
    });
    std::printf("sgemm %ux%ux%u (NN)                 %8.2f ms  %6.1f GFLOP/s\n", batch, hidden,
                items, ms, 2.0 * batch * hidden * items / ms * 1e-6);
    std::vector<float> dx(size_t(batch) * hidden);
    ms = median_ms(reps, [&] {
      be.gemm(false, true, batch, hidden, items, 1.0f, c.data(), items, w.data(), items, 0.0f,
              dx.data(), hidden);
    });
    std::printf("sgemm delta*W^T %ux%ux%u (NT)       %8.2f ms\n", batch, items, hidden, ms);
    std::vector<float> gw(size_t(hidden) * items);
    ms = median_ms(reps, [&] {
      be.gemm(true, false, hidden, items, batch, 1.0f, a.data(), hidden, c.data(), items, 0.0f,
              gw.data(), items);
    });
    std::printf("sgemm X^T*delta %ux%ux%u (TN)       %8.2f ms\n", hidden, items, batch, ms);
    bf16_products(be, reps, batch, hidden, items, a, w, c);
  }

  // Elementwise kernels over one output batch.
  auto z = random_vec(size_t(batch) * items, rng, -8, 8);
  std::vector<float> x(z.size()), d(z.size());
  ActivationParams ap;
  for (Activation act : {Activation::Sigmoid, Activation::Tanh, Activation::RectifiedLinear,
                         Activation::ExponentialLinear, Activation::SoftPlus, Activation::SoftSign,
                         Activation::SoftMax}) {
    ap.kind = act;
    double ms = median_ms(reps, [&] {
      std::copy(z.begin(), z.end(), x.begin());
      be.activate(ap, x.data(), batch, items);
    });
    double copy_ms = median_ms(reps, [&] { std::copy(z.begin(), z.end(), x.begin()); });
    std::printf("activate %-24s 256x27278 %8.2f ms\n", to_string(act), ms - copy_ms);
  }
  ap.kind = Activation::Sigmoid;
  std::copy(z.begin(), z.end(), x.begin());
  be.activate(ap, x.data(), batch, items);
  std::printf("activation_backward Sigmoid 256x27278 %8.2f ms\n", median_ms(reps, [&] {
                be.activation_backward(ap, x.data(), d.data(), batch, items);
              }));

  Csr targets = random_csr(batch, items, nnz, rng);
  TargetView tv;
  tv.sparse = true;
  tv.sp = targets.view(items);
  LossParams lp;
  lp.activation.kind = Activation::Sigmoid;
  for (ErrorFunction f : {ErrorFunction::CrossEntropy, ErrorFunction::L2,
                          ErrorFunction::ScaledMarginalCrossEntropy}) {
    lp.function = f;
    double ms =
        median_ms(reps, [&] { be.loss_and_delta(lp, x.data(), tv, batch, items, d.data()); });
    std::printf("loss_and_delta %-26s sparse sigmoid %8.2f ms\n", to_string(f), ms);
  }
  {
    std::vector<float> dense_t(z.size(), 0.0f);
    TargetView dt;
    dt.dense = dense_t.data();
    lp.function = ErrorFunction::CrossEntropy;
    double ms =
        median_ms(reps, [&] { be.loss_and_delta(lp, x.data(), dt, batch, items, d.data()); });
    std::printf("loss_and_delta CrossEntropy dense sigmoid       %8.2f ms\n", ms);
  }

  // Optimizer over a 27278x1024 weight matrix (~28M parameters).
  {
    const size_t n = size_t(items) * 1024;
    auto w = random_vec(n, rng, -0.1f, 0.1f);
    auto g = random_vec(n, rng, -0.01f, 0.01f);
    std::vector<float> s0(n, 0.0f), s1(n, 0.0f);
    OptimizerParams op;
    for (OptimizerKind k : {OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::RMSProp,
                            OptimizerKind::Adam}) {
      op.kind = k;
      double ms = median_ms(reps, [&] {
        be.optimizer_step(op, w.data(), g.data(), s0.data(), s1.data(), n);
        ++op.step;
      });
      std::printf("optimizer %-9s 28M params               %8.2f ms\n", to_string(k), ms);
    }
    std::printf("fill 28M                                    %8.2f ms\n",
                median_ms(reps, [&] { be.fill(g.data(), n, 0.0f); }));
  }

  // Hidden-layer odds and ends on a 256 x 1024 batch, and top-K over one output batch.
  {
    auto h = random_vec(size_t(batch) * 1024, rng, -1, 1);
    std::vector<float> bias(1024);
    std::printf("dropout p=0.2 256x1024                      %8.3f ms\n",
                median_ms(reps, [&] { be.dropout(h.data(), h.size(), 0.2f, 1, 2); }));
    std::printf("column_sums 256x1024                        %8.3f ms\n", median_ms(reps, [&] {
                  be.column_sums(h.data(), batch, 1024, 1.0f, 0.0f, bias.data());
                }));
    std::vector<float> tv(size_t(batch) * 100);
    std::vector<uint32_t> ti(size_t(batch) * 100);
    std::printf("top_k k=100 256x27278                       %8.2f ms\n", median_ms(reps, [&] {
                  be.top_k(z.data(), batch, items, items, 100, tv.data(), ti.data());
                }));
  }

  // Sparse input layer: 256 rows x 144 non-zeros into 1024 (and 128) hidden units.
  for (uint32_t hidden : {128u, 1024u}) {
    Csr in = random_csr(batch, items, nnz, rng);
    SparseView sv = in.view(items);
    auto w = random_vec(size_t(items) * hidden, rng, -0.1f, 0.1f);
    std::vector<float> zh(size_t(batch) * hidden, 0.0f), gw(size_t(items) * hidden, 0.0f);
    auto delta = random_vec(size_t(batch) * hidden, rng, -1, 1);
    std::printf("sparse_matmul 256x144 -> %4u                %8.2f ms\n", hidden,
                median_ms(reps, [&] { be.sparse_matmul(sv, w.data(), hidden, zh.data()); }));
    std::printf("sparse_weight_gradient 256x144 -> %4u       %8.2f ms\n", hidden,
                median_ms(reps, [&] {
                  be.sparse_weight_gradient(sv, delta.data(), hidden, 1.0f / 256, gw.data());
                }));
    // The same batch indexed for row-sparse training (data/batch.h index_touched), as nn-train
    // hands it over: the forward product and the compact gradient of the touched rows.
    SparseBatch b;
    b.rows = batch;
    b.cols = items;
    b.row_ptr = in.row_ptr;
    b.index = in.index;
    std::vector<uint32_t> mark;
    index_touched(b, mark);
    SparseView iv = sv;
    iv.touched = b.touched.data();
    iv.slot = b.slot.data();
    iv.touched_count = uint32_t(b.touched.size());
    iv.set_slot_groups(b.slot_groups.data());
    SparseView compact = iv;
    compact.index = b.slot.data();
    compact.cols = iv.touched_count;
    std::printf("sparse_matmul indexed 256x144 -> %4u        %8.2f ms\n", hidden,
                median_ms(reps, [&] { be.sparse_matmul(iv, w.data(), hidden, zh.data()); }));
    std::printf("sparse_weight_gradient indexed -> %4u       %8.2f ms  (%u touched rows)\n", hidden,
                median_ms(reps,
                          [&] {
                            be.sparse_weight_gradient(compact, delta.data(), hidden, 1.0f / 256,
                                                      gw.data());
                          }),
                iv.touched_count);
  }

  // OpenMP / OpenBLAS interplay: gemm right after an OpenMP kernel (workers still spinning).
  {
    const uint32_t hidden = 1024;
    auto a = random_vec(size_t(batch) * hidden, rng, -1, 1);
    auto w = random_vec(size_t(hidden) * items, rng, -0.1f, 0.1f);
    std::vector<float> c(size_t(batch) * items);
    auto gemm = [&] {
      be.gemm(false, false, batch, items, hidden, 1.0f, a.data(), hidden, w.data(), items, 0.0f,
              c.data(), items);
    };
    double alone = median_ms(reps, gemm);
    double sig = median_ms(reps, [&] { be.activate(ap, c.data(), batch, items); });
    double both = median_ms(reps, [&] {
      gemm();
      be.activate(ap, c.data(), batch, items);
    });
    std::printf("interleave: gemm %.2f + sigmoid %.2f = %.2f ms; together %.2f ms\n", alone, sig,
                alone + sig, both);
  }
  return 0;
}
