// Host test of the fused activation + loss kernels of cuda/loss.cu
// (CudaBackend::activate_loss_accumulate; no GPU needed): one block of 256 threads per row, each
// thread taking the row's units j = t, t + 256, ...; SoftMax first finds the row maximum and the
// exponentials (the block's max and double-sum trees), then the sweep computes each unit's
// activation from z with the shared functions (math::activate_unit, fused_loss_math.h), writes
// it over z and feeds it to the loss's per-unit functions; the sparse patches, the SoftMax
// Jacobian and the closed SoftMax cross-entropy read the stored activations afterwards. Compared
// with CpuBackend's activate followed by loss_accumulate (Backend::activate_loss_accumulate's
// definition): the activations and the deltas bit for bit for the elementwise activations, the
// error within 1e-9 relative (another summation order; 2e-7 where the CPU sums a log-loss's
// sparse sweep as the log of a product, test::cpu_error_tolerance); SoftMax, whose row sum the
// CPU takes in another order, and SoftPlus (see the test) within the loss tests' tolerances.
#include "backend/math/fused_loss_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/math/loss_kernel_choice.h"
#include "backend/math/loss_row_math.h"
#include "backend/math/loss_sums.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using math::DerivKind;
using math::Form;
using test::Csr;
using test::Targets;

constexpr uint32_t kBlock = 256;  // kThreads of the CUDA backend

// A __shfl_down_sync tree over 32 lanes with `op(own, other)` (a lane whose source is out of
// range combines with itself; that never reaches lane 0); lane 0's result.
template <typename T, typename Op>
T warp_tree(std::vector<T> v, Op op) {
  for (int off = 16; off > 0; off >>= 1) {
    const std::vector<T> old = v;
    for (int l = 0; l < 32; ++l)
      v[size_t(l)] = op(old[size_t(l)], old[size_t(l + off < 32 ? l + off : l)]);
  }
  return v[0];
}

// cuda::block_sum / cuda::block_max over one value per thread: warps, then warp 0 over the warp
// results (lanes past the warps hold `identity`).
template <typename T, typename Op>
T block_tree(const std::vector<T>& per_thread, Op op, T identity) {
  std::vector<T> totals(32, identity);
  for (uint32_t w = 0; w < kBlock / 32; ++w)
    totals[w] = warp_tree(
        std::vector<T>(per_thread.begin() + w * 32, per_thread.begin() + (w + 1) * 32), op);
  return warp_tree(totals, op);
}
double block_sum(const std::vector<double>& v) {
  return block_tree(
      v, [](double x, double y) { return x + y; }, 0.0);
}
float block_max(const std::vector<float>& v) {
  return block_tree(
      v, [](float x, float o) { return o > x ? o : x; }, -INFINITY);
}

struct FusedArgs {
  math::LossRowConsts o;
  Activation act = Activation::Sigmoid;
  math::ActConsts act_c;
  bool softmax = false;
  float* z = nullptr;  // z in, a out
  const float* dense_t = nullptr;
  const Csr* sp = nullptr;
  std::vector<uint32_t> sorted_index, sorted_entry;  // entries sorted stably by (row, index)
  const float* weights = nullptr;
  float* delta = nullptr;
  uint32_t cols = 0;
  bool normalise = false;
};

// One row's block: the prologue (SoftMax max and exponentials) and the fused unit step.
struct RowBlock {
  const FusedArgs& g;
  float* z;
  float inv = 0.0f;

  RowBlock(const FusedArgs& args, uint32_t r) : g(args), z(args.z + size_t(r) * args.cols) {
    if (!g.softmax) return;
    std::vector<float> m(kBlock, -INFINITY);
    for (uint32_t t = 0; t < kBlock; ++t)
      for (uint32_t c = t; c < g.cols; c += kBlock) m[t] = z[c] > m[t] ? z[c] : m[t];
    const float mx = block_max(m);
    std::vector<double> sum(kBlock, 0.0);
    for (uint32_t t = 0; t < kBlock; ++t)
      for (uint32_t c = t; c < g.cols; c += kBlock) {
        const float e = math::softmax_exp(z[c], mx);
        z[c] = e;
        sum[t] += e;
      }
    inv = math::softmax_inverse(block_sum(sum));
  }
  float unit(uint32_t j) {
    const float a =
        g.softmax ? math::softmax_scale(z[j], inv) : math::activate_unit(g.act, z[j], g.act_c);
    z[j] = a;
    return math::as_stored(a);
  }
};

double merged_sum(const FusedArgs& g, uint32_t lo, uint32_t hi) {  // row_target_sum (thread 0)
  const float* value = g.sp->value.empty() ? nullptr : g.sp->value.data();
  double sum = 0.0;
  for (uint32_t i = lo; i < hi; ++i)
    if (math::run_start(g.sorted_index.data(), lo, i))
      sum += math::merged_target(g.sorted_index.data(), g.sorted_entry.data(), value, i, hi);
  return sum;
}

// loss_rows_kernel<F, D, kJacobian, /*kFused=*/true>: the rows' errors.
template <Form F, DerivKind D, bool kJacobian>
std::vector<double> fused_rows(const FusedArgs& g, uint32_t rows) {
  std::vector<double> errors(rows, 0.0);
  const float* value = g.sp && !g.sp->value.empty() ? g.sp->value.data() : nullptr;
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t cols = g.cols;
    RowBlock blk(g, r);
    const float* a = blk.z;
    const float w = g.weights ? g.weights[r] : 1.0f;
    float* d = g.delta ? g.delta + size_t(r) * cols : nullptr;
    const bool sparse = g.dense_t == nullptr;
    std::vector<double> acc(kBlock, 0.0);
    for (uint32_t t = 0; t < kBlock; ++t)
      for (uint32_t j = t; j < cols; j += kBlock) {
        const float aj = blk.unit(j);
        float dj;
        acc[t] += math::loss_sweep_unit<F, D>(
            g.o, aj, sparse ? 0.0f : g.dense_t[size_t(r) * cols + j], w, sparse, dj);
        if (d) d[j] = dj;
      }
    if (sparse) {  // after the barrier: the patches read the stored activations
      const uint32_t lo = g.sp->row_ptr[r], hi = g.sp->row_ptr[r + 1];
      const double tsum = merged_sum(g, lo, hi);
      for (uint32_t i = lo; i < hi; ++i) {
        if (!math::run_start(g.sorted_index.data(), lo, i)) continue;
        const uint32_t j = g.sorted_index[i];
        float v = math::merged_target(g.sorted_index.data(), g.sorted_entry.data(), value, i, hi);
        if (g.normalise) v = math::normalised_target(v, tsum);
        float e, e0, dj;
        math::loss_patch_unit<F, D>(g.o, a[j], v, w, e, e0, dj);
        acc[(i - lo) % kBlock] += e;
        acc[(i - lo) % kBlock] -= e0;
        if (d) d[j] = dj;
      }
    }
    errors[r] = block_sum(acc);
    if (kJacobian && d) {
      std::vector<double> dot(kBlock, 0.0);
      for (uint32_t t = 0; t < kBlock; ++t)
        for (uint32_t j = t; j < cols; j += kBlock) dot[t] += double(d[j]) * a[j];
      const float s = static_cast<float>(block_sum(dot));
      for (uint32_t j = 0; j < cols; ++j) d[j] = math::softmax_jacobian(a[j], d[j], s);
    }
  }
  return errors;
}

// softmax_ce_kernel</*kFused=*/true>.
std::vector<double> fused_softmax_ce(const FusedArgs& g, uint32_t rows) {
  std::vector<double> errors(rows, 0.0);
  const float* value = g.sp && !g.sp->value.empty() ? g.sp->value.data() : nullptr;
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t cols = g.cols;
    RowBlock blk(g, r);
    const float* a = blk.z;
    const float w = g.weights ? g.weights[r] : 1.0f;
    float* d = g.delta ? g.delta + size_t(r) * cols : nullptr;
    std::vector<double> acc(kBlock, 0.0), tsum(kBlock, 0.0);
    if (g.dense_t) {
      const float* t = g.dense_t + size_t(r) * cols;
      for (uint32_t th = 0; th < kBlock; ++th)
        for (uint32_t j = th; j < cols; j += kBlock) {
          const float aj = blk.unit(j);
          acc[th] += math::softmax_ce_error(aj, t[j], w);
          tsum[th] += t[j];
        }
      errors[r] = block_sum(acc);
      const float s = static_cast<float>(block_sum(tsum));
      if (d)
        for (uint32_t j = 0; j < cols; ++j) d[j] = math::softmax_ce_delta(a[j], t[j], w, s);
      continue;
    }
    for (uint32_t j = 0; j < cols; ++j) blk.unit(j);  // its own sweep, then a barrier
    const uint32_t lo = g.sp->row_ptr[r], hi = g.sp->row_ptr[r + 1];
    const double target_sum = merged_sum(g, lo, hi);
    for (uint32_t i = lo; i < hi; ++i) {
      if (!math::run_start(g.sorted_index.data(), lo, i)) continue;
      float v = math::merged_target(g.sorted_index.data(), g.sorted_entry.data(), value, i, hi);
      if (g.normalise) v = math::normalised_target(v, target_sum);
      acc[(i - lo) % kBlock] += math::softmax_ce_stored_error(a[g.sorted_index[i]], v, w);
      tsum[(i - lo) % kBlock] += v;
    }
    errors[r] = block_sum(acc);
    const float s = static_cast<float>(block_sum(tsum));
    if (!d) continue;
    for (uint32_t j = 0; j < cols; ++j) d[j] = math::softmax_ce_delta_zero(a[j], w, s);
    for (uint32_t i = lo; i < hi; ++i) {
      if (!math::run_start(g.sorted_index.data(), lo, i)) continue;
      const uint32_t j = g.sorted_index[i];
      float v = math::merged_target(g.sorted_index.data(), g.sorted_entry.data(), value, i, hi);
      if (g.normalise) v = math::normalised_target(v, target_sum);
      d[j] = math::softmax_ce_delta(a[j], v, w, s);
    }
  }
  return errors;
}

using FusedFn = std::vector<double> (*)(const FusedArgs&, uint32_t);

// The fused instances cuda/loss.cu runs, as host emulations (math/loss_kernel_choice.h picks).
struct Picker {
  template <Form F, DerivKind D, bool kJacobian>
  static FusedFn rows() {
    return &fused_rows<F, D, kJacobian>;
  }
  static FusedFn softmax_ce() { return &fused_softmax_ce; }
};

FusedFn fused_kernel_for(ErrorFunction f, Activation act) {
  return math::choose_loss_kernel<Picker>(math::form_of(f), math::deriv_kind(act),
                                          act == Activation::SoftMax);
}

ActivationParams params_of(Activation k) {
  ActivationParams p;
  p.kind = k;
  p.slope = 0.2f;
  p.alpha = 0.7f;
  p.lambda = 1.05f;
  p.max_value = 2.0f;
  return p;
}

TEST(HostKernelMath, FusedActivationLossMatchesTheCpuBackend) {
  const auto& functions = test::kAllErrorFunctions;
  const auto& acts = test::kAllActivations;
  CpuBackend cpu(2);
  Rng rng(11);
  const uint32_t rows = 7;
  int cases = 0;
  for (uint32_t cols : {77u, 300u})  // fewer units than threads, and more (strided sweeps)
    for (ErrorFunction f : functions)
      for (Activation act : acts)
        for (Targets kind : test::kAllTargets) {
          LossParams p;
          p.function = f;
          p.activation = params_of(act);
          p.delta_boost_one = 1.5f;
          p.delta_boost_zero = 0.5f;
          const std::vector<float> z = test::uniform(size_t(rows) * cols, rng, -3.0, 3.0);
          const test::RandomTargets targets(rows, cols, kind, 12, rng);
          const TargetView& t = targets.view();
          const bool sparse = t.sparse;
          const Csr& sp = targets.csr();
          // The reference: activate, then loss_accumulate (the Backend's definition).
          std::vector<float> a_cpu = z, d_cpu(z.size(), 0.0f);
          double e_cpu = 0.25;  // the sum is added to
          cpu.activate_loss_accumulate(p.activation, p, a_cpu.data(), t, rows, cols, d_cpu.data(),
                                       &e_cpu);

          FusedArgs g;
          g.o = math::loss_row_consts(p, t);
          g.act = act;
          g.act_c = math::act_consts(p.activation);
          g.softmax = act == Activation::SoftMax;
          g.normalise = g.softmax && (f == ErrorFunction::CrossEntropy ||
                                      f == ErrorFunction::ScaledMarginalCrossEntropy);
          std::vector<float> a = z, d(z.size(), 0.0f);
          g.z = a.data();
          g.delta = d.data();
          g.cols = cols;
          if (sparse) {
            g.sp = &sp;
            g.weights = sp.row_weight.empty() ? nullptr : sp.row_weight.data();
            std::vector<uint32_t> row_of(sp.index.size()), order(sp.index.size());
            for (uint32_t r = 0; r < rows; ++r)
              for (uint32_t e = sp.row_ptr[r]; e < sp.row_ptr[r + 1]; ++e) row_of[e] = r;
            std::iota(order.begin(), order.end(), 0u);
            std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
              return std::make_pair(row_of[x], sp.index[x]) <
                     std::make_pair(row_of[y], sp.index[y]);
            });
            g.sorted_entry = order;
            for (uint32_t e : order) g.sorted_index.push_back(sp.index[e]);
          } else {
            g.dense_t = t.dense;
            g.weights = t.row_weight;
          }
          const FusedFn fn = fused_kernel_for(f, act);
          ASSERT_NE(fn, nullptr);
          const std::vector<double> row_errors = fn(g, rows);
          double e = 0.25;
          for (double x : row_errors) math::add_scaled(&e, 1.0, x);  // add_sum_doubles: 1 x sum

          const std::string what = std::string(to_string(f)) + " / " + to_string(act) +
                                   " / targets " + std::to_string(int(kind)) + " / cols " +
                                   std::to_string(cols);
          // SoftMax sums its row in another order on the CPU; SoftPlus: the CPU's vectorised
          // loop contracts the last elements of the array (its remainder) into fused
          // multiply-adds differently from its body, 1 ulp apart (host code, not the kernel's).
          if (g.softmax || act == Activation::SoftPlus) {
            EXPECT_TRUE(
                test::all_near(a, std::vector<double>(a_cpu.begin(), a_cpu.end()), 1e-7, 1e-5))
                << what;
            EXPECT_TRUE(
                test::all_near(d, std::vector<double>(d_cpu.begin(), d_cpu.end()), 1e-6, 1e-5))
                << what;
            EXPECT_NEAR(e, e_cpu, 1e-6 + 1e-5 * std::fabs(e_cpu)) << what;
          } else {
            EXPECT_TRUE(test::bitwise_equal(a, a_cpu)) << what;
            EXPECT_TRUE(test::bitwise_equal(d, d_cpu)) << what;
            EXPECT_NEAR(e, e_cpu, test::cpu_error_tolerance(f, act, kind, e_cpu)) << what;
          }
          ++cases;
        }
  EXPECT_EQ(cases, 2 * 7 * 13 * 4);

  // No rows, or no units: nothing is written and nothing added.
  std::vector<float> z(8, 0.5f), d(8, 7.0f);
  const std::vector<float> z0 = z, d0 = d;
  TargetView t;
  std::vector<float> dense(8, 1.0f);
  t.dense = dense.data();
  double sum = 3.0;
  LossParams p;
  p.function = ErrorFunction::L2;
  p.activation = params_of(Activation::Sigmoid);
  cpu.activate_loss_accumulate(p.activation, p, z.data(), t, 0, 8, d.data(), &sum);
  cpu.activate_loss_accumulate(p.activation, p, z.data(), t, 8, 0, d.data(), &sum);
  EXPECT_TRUE(test::bitwise_equal(z, z0));
  EXPECT_TRUE(test::bitwise_equal(d, d0));
  EXPECT_EQ(sum, 3.0);
}

}  // namespace
}  // namespace nn
