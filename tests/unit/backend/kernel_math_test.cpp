// Host tests of the CUDA kernels' arithmetic (no GPU needed; they run in CI). Every custom CUDA
// kernel computes its elements with __host__ __device__ functions from backend/math/; these
// tests run the same functions over the same index space, in the same order of operations as
// the kernels (sorted CSR runs, sweep-then-patch loss rows, 64-bit top-K keys), and compare with
// the CPU backend. Where this host code and the CPU kernels evaluate the same expressions the
// results must match bit for bit; where the CPU's vectorised loops contract a*b+c into fused
// multiply-adds differently (the sparse products) and where sums run in another fixed order (a
// GPU block's tree instead of a CPU thread's loop), with tight tolerances.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/math/elementwise_math.h"
#include "backend/math/loss_kernel_choice.h"
#include "backend/math/loss_row_math.h"
#include "backend/math/norm_math.h"
#include "backend/math/optimizer_math.h"
#include "backend/top_k_emulation.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using math::DerivKind;
using math::Form;
using test::bitwise_equal;
using test::Csr;
using test::Targets;

const Activation kElementwise[] = {Activation::Sigmoid,
                                   Activation::Tanh,
                                   Activation::RectifiedLinear,
                                   Activation::Linear,
                                   Activation::ReluMax,
                                   Activation::LinearMax,
                                   Activation::LeakyRectifiedLinear,
                                   Activation::ParametricRectifiedLinear,
                                   Activation::ExponentialLinear,
                                   Activation::ScaledExponentialLinear,
                                   Activation::SoftPlus,
                                   Activation::SoftSign};

ActivationParams params_of(Activation k) {
  ActivationParams p;
  p.kind = k;
  p.slope = 0.2f;
  p.alpha = 0.7f;
  p.lambda = 1.05f;
  p.max_value = 2.0f;
  return p;
}

// Inputs over the whole range, with the awkward values: 0, -0, +-inf, NaN, huge and tiny.
std::vector<float> awkward_inputs(size_t n, Rng& rng) {
  std::vector<float> v = test::uniform(n, rng, -12.0, 12.0);
  const float special[] = {0.0f,
                           -0.0f,
                           1e-30f,
                           -1e-30f,
                           100.0f,
                           -100.0f,
                           1e30f,
                           -1e30f,
                           INFINITY,
                           -INFINITY,
                           std::numeric_limits<float>::quiet_NaN(),
                           2.0f,
                           -2.0f,
                           1.0f,
                           -1.0f};
  for (size_t i = 0; i < sizeof special / sizeof special[0] && i < n; ++i)
    v[i * 7 % n] = special[i];
  return v;
}

TEST(HostKernelMath, ActivationForwardMatchesTheCpuBackendBitForBit) {
  CpuBackend cpu(1);
  Rng rng(1);
  const uint32_t rows = 7, cols = 131;  // awkward sizes: not multiples of a warp or a block
  for (Activation k : kElementwise) {
    const ActivationParams p = params_of(k);
    std::vector<float> x = awkward_inputs(size_t(rows) * cols, rng);
    std::vector<float> expected = x;
    cpu.activate(p, expected.data(), rows, cols);
    // The kernel's index space: one element per thread, i in [0, rows * cols).
    const math::ActConsts c = math::act_consts(p);
    std::vector<float> got(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      got[i] = k == Activation::Linear ? x[i] : math::activate_unit(k, x[i], c);
    EXPECT_TRUE(bitwise_equal(got, expected)) << to_string(k);
  }
}

TEST(HostKernelMath, ActivationBackwardMatchesTheCpuBackendBitForBit) {
  CpuBackend cpu(1);
  Rng rng(2);
  const uint32_t rows = 5, cols = 257;
  for (Activation k : kElementwise) {
    const ActivationParams p = params_of(k);
    std::vector<float> a = awkward_inputs(size_t(rows) * cols, rng);
    cpu.activate(p, a.data(), rows, cols);  // a realistic a = f(z)
    const std::vector<float> delta = test::uniform(a.size(), rng, -1.0, 1.0);
    std::vector<float> expected = delta;
    cpu.activation_backward(p, a.data(), expected.data(), rows, cols);
    const DerivKind d = math::deriv_kind(k);
    const math::DerivConsts dc = math::deriv_consts(p);
    std::vector<float> got = delta;
    if (d != DerivKind::One)
      for (size_t i = 0; i < a.size(); ++i) got[i] *= math::fprime_of(d, a[i], dc);
    EXPECT_TRUE(bitwise_equal(got, expected)) << to_string(k);
  }
}

TEST(HostKernelMath, DropoutMasksMatchTheCpuBackendBitForBit) {
  CpuBackend cpu(2);
  Rng rng(3);
  for (float p : {0.1f, 0.5f, 0.9f}) {
    const size_t n = 100003;  // spread over the CPU pool's chunks
    const std::vector<float> x = test::uniform(n, rng, -3.0, 3.0);
    std::vector<float> expected = x;
    const uint64_t seed = 77, stream = shift_stream(5, 1000);
    cpu.dropout(expected.data(), n, p, seed, stream);
    std::vector<float> got(n);
    for (size_t i = 0; i < n; ++i) got[i] = math::dropout_unit(x[i], i, p, 1.0f - p, seed, stream);
    EXPECT_TRUE(bitwise_equal(got, expected)) << p;
    size_t dropped = 0;
    for (float v : got) dropped += v == 0.0f;
    EXPECT_NEAR(double(dropped) / n, p, 0.01);  // the mask is not trivially all or nothing
  }
}

TEST(HostKernelMath, OptimizerStepsMatchTheCpuBackendBitForBit) {
  const OptimizerKind kinds[] = {OptimizerKind::SGD,      OptimizerKind::Momentum,
                                 OptimizerKind::Nesterov, OptimizerKind::AdaGrad,
                                 OptimizerKind::RMSProp,  OptimizerKind::AdaDelta,
                                 OptimizerKind::Adam};
  CpuBackend cpu(2);
  Rng rng(4);
  const size_t n = 70001;
  for (OptimizerKind kind : kinds) {
    std::vector<float> w = test::uniform(n, rng, -1.0, 1.0);
    w[3] = 0.0f;  // sign(0) = 0 in the L1 term
    std::vector<float> s0(n, 0.0f), s1(n, 0.0f);
    std::vector<float> w_cpu = w, s0_cpu = s0, s1_cpu = s1;
    for (uint64_t step = 1; step <= 3; ++step) {
      const std::vector<float> g = test::uniform(n, rng, -0.5, 0.5);
      OptimizerParams p;
      p.kind = kind;
      p.alpha = 0.05f;
      p.lambda = 0.001f;
      p.lambda1 = 0.0001f;
      p.mu = 0.9f;
      p.mu1 = 0.999f;
      p.step = step;
      cpu.optimizer_step(p, w_cpu.data(), g.data(), s0_cpu.data(), s1_cpu.data(), n);
      const math::OptConsts c = math::optimizer_consts(p);
      for (size_t i = 0; i < n; ++i) {
        switch (kind) {
          case OptimizerKind::SGD:
            math::optimizer_unit<OptimizerKind::SGD>(c, w[i], g[i], s0[i], s1[i]);
            break;
          case OptimizerKind::Momentum:
            math::optimizer_unit<OptimizerKind::Momentum>(c, w[i], g[i], s0[i], s1[i]);
            break;
          case OptimizerKind::Nesterov:
            math::optimizer_unit<OptimizerKind::Nesterov>(c, w[i], g[i], s0[i], s1[i]);
            break;
          case OptimizerKind::AdaGrad:
            math::optimizer_unit<OptimizerKind::AdaGrad>(c, w[i], g[i], s0[i], s1[i]);
            break;
          case OptimizerKind::RMSProp:
            math::optimizer_unit<OptimizerKind::RMSProp>(c, w[i], g[i], s0[i], s1[i]);
            break;
          case OptimizerKind::AdaDelta:
            math::optimizer_unit<OptimizerKind::AdaDelta>(c, w[i], g[i], s0[i], s1[i]);
            break;
          case OptimizerKind::Adam:
            math::optimizer_unit<OptimizerKind::Adam>(c, w[i], g[i], s0[i], s1[i]);
            break;
        }
      }
    }
    EXPECT_TRUE(bitwise_equal(w, w_cpu)) << to_string(kind);
    const int states = optimizer_state_count(kind);
    if (states >= 1) EXPECT_TRUE(bitwise_equal(s0, s0_cpu)) << to_string(kind);
    if (states >= 2) EXPECT_TRUE(bitwise_equal(s1, s1_cpu)) << to_string(kind);
  }
}

// The top-K kernels (cuda/top_k.cu: the radix select, then the selected keys sorted and
// gathered) are emulated by test::emulate_top_k (top_k_emulation.h).
using test::emulate_top_k;

TEST(HostKernelMath, TopKKeysGiveTheCpuBackendsOrder) {
  CpuBackend cpu(1);
  Rng rng(5);
  const uint32_t rows = 6, cols = 97;
  std::vector<float> x = test::uniform(size_t(rows) * cols, rng, -1.0, 1.0);
  // Ties (to the lower column), -0 against +0, infinities and NaN (after every number).
  for (uint32_t c = 0; c < cols; c += 3) x[c] = 0.5f;
  x[cols + 4] = -0.0f;
  x[cols + 2] = 0.0f;
  x[cols + 9] = INFINITY;
  x[2 * cols + 1] = std::numeric_limits<float>::quiet_NaN();
  x[2 * cols + 5] = -INFINITY;
  for (uint32_t c = 0; c < cols; ++c) x[3 * cols + c] = c % 2 ? std::nanf("") : -INFINITY;
  for (uint32_t c = 0; c < cols; ++c) x[4 * cols + c] = -0.0f;
  struct Case {
    uint32_t valid, k;
  };
  for (Case cs : {Case{cols, 5}, Case{cols, cols}, Case{cols, cols + 10}, Case{50, 60}, Case{0, 3},
                  Case{cols, 1}}) {
    std::vector<float> ev(size_t(rows) * cs.k), gv;
    std::vector<uint32_t> ei(size_t(rows) * cs.k), gi;
    cpu.top_k(x.data(), rows, cols, cs.valid, cs.k, ev.data(), ei.data());
    emulate_top_k(x, rows, cols, cs.valid, cs.k, gv, gi);
    EXPECT_TRUE(bitwise_equal(gv, ev)) << "valid " << cs.valid << " k " << cs.k;
    EXPECT_EQ(gi, ei) << "valid " << cs.valid << " k " << cs.k;
  }
}

// The sparse kernels: forward adds each row's entries in entry order into z; the gradient adds
// each input index's run of entries (stable sort by index) in (row, entry) order into g.
TEST(HostKernelMath, SparseForwardAndGradientMatchTheCpuBackend) {
  CpuBackend cpu(2);
  Rng rng(6);
  for (bool analog : {false, true}) {
    const uint32_t rows = 37, cols = 300, n_out = 65;
    Csr x = test::random_csr(rows, cols, 20, rng, analog, /*weighted=*/analog,
                             /*duplicates=*/true, /*empty_row=*/4);
    const SparseView v = x.view();
    const std::vector<float> w = test::uniform(size_t(cols) * n_out, rng, -1.0, 1.0);
    const std::vector<float> z0 = test::uniform(size_t(rows) * n_out, rng, -1.0, 1.0);
    std::vector<float> z_cpu = z0, z = z0;
    cpu.sparse_matmul(v, w.data(), n_out, z_cpu.data());
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t o = 0; o < n_out; ++o) {
        float acc = z[size_t(r) * n_out + o];
        const float wr = x.weight(r);
        for (uint32_t e = x.row_ptr[r]; e < x.row_ptr[r + 1]; ++e)
          acc += (x.val(e) * wr) * w[size_t(x.index[e]) * n_out + o];
        z[size_t(r) * n_out + o] = acc;
      }
    // Same terms in the same order; only fused multiply-adds may differ (last-bit rounding).
    EXPECT_TRUE(test::all_near(z, std::vector<double>(z_cpu.begin(), z_cpu.end()), 1e-6, 1e-6))
        << "forward, analog " << analog;

    const std::vector<float> delta = test::uniform(size_t(rows) * n_out, rng, -1.0, 1.0);
    const std::vector<float> g0 = test::uniform(size_t(cols) * n_out, rng, -0.1, 0.1);
    std::vector<float> g_cpu = g0, g = g0;
    const float alpha = 0.3f;
    cpu.sparse_weight_gradient(v, delta.data(), n_out, alpha, g_cpu.data());
    std::vector<uint32_t> row_of(x.index.size()), order(x.index.size());
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t e = x.row_ptr[r]; e < x.row_ptr[r + 1]; ++e) row_of[e] = r;
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return x.index[a] < x.index[b]; });
    std::vector<uint32_t> sorted_index(order.size());
    for (size_t i = 0; i < order.size(); ++i) sorted_index[i] = x.index[order[i]];
    for (uint32_t p = 0; p < order.size(); ++p) {
      if (!math::run_start(sorted_index.data(), 0, p)) continue;
      const uint32_t idx = sorted_index[p];
      for (uint32_t o = 0; o < n_out; ++o) {
        float acc = g[size_t(idx) * n_out + o];
        for (uint32_t q = p; q < order.size() && sorted_index[q] == idx; ++q) {
          const uint32_t e = order[q], r = row_of[e];
          const float s = alpha * x.val(e) * x.weight(r);
          acc += s * delta[size_t(r) * n_out + o];
        }
        g[size_t(idx) * n_out + o] = acc;
      }
    }
    EXPECT_TRUE(test::all_near(g, std::vector<double>(g_cpu.begin(), g_cpu.end()), 1e-6, 1e-6))
        << "gradient, analog " << analog;
  }
}

// ---- losses: the row kernels of cuda/loss.cu, one "thread" per unit -----------------------------

struct RowsArgs {
  math::LossRowConsts o;
  const float* a;
  const float* dense_t;
  const Csr* sp;
  std::vector<uint32_t> sorted_index, sorted_entry;  // entries sorted stably by (row, index)
  const float* weights;
  float* delta;
  uint32_t cols;
  bool normalise;
};

double target_sum(const RowsArgs& g, uint32_t lo, uint32_t hi) {
  const float* value = g.sp->value.empty() ? nullptr : g.sp->value.data();
  double sum = 0.0;
  for (uint32_t i = lo; i < hi; ++i)
    if (math::run_start(g.sorted_index.data(), lo, i))
      sum += math::merged_target(g.sorted_index.data(), g.sorted_entry.data(), value, i, hi);
  return sum;
}

template <Form F, DerivKind D, bool kJacobian>
double rows_kernel(const RowsArgs& g, uint32_t rows) {
  double total = 0.0;
  const float* value = g.sp && !g.sp->value.empty() ? g.sp->value.data() : nullptr;
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t cols = g.cols;
    const float w = g.weights ? g.weights[r] : 1.0f;
    const float* a = g.a + size_t(r) * cols;
    float* d = g.delta ? g.delta + size_t(r) * cols : nullptr;
    const bool sparse = g.dense_t == nullptr;
    double acc = 0.0;
    for (uint32_t j = 0; j < cols; ++j) {
      float dj;
      acc += math::loss_sweep_unit<F, D>(g.o, a[j], sparse ? 0.0f : g.dense_t[size_t(r) * cols + j],
                                         w, sparse, dj);
      if (d) d[j] = dj;
    }
    if (sparse) {
      const uint32_t lo = g.sp->row_ptr[r], hi = g.sp->row_ptr[r + 1];
      const double tsum = target_sum(g, lo, hi);
      for (uint32_t i = lo; i < hi; ++i) {
        if (!math::run_start(g.sorted_index.data(), lo, i)) continue;
        const uint32_t j = g.sorted_index[i];
        float v = math::merged_target(g.sorted_index.data(), g.sorted_entry.data(), value, i, hi);
        if (g.normalise) v = math::normalised_target(v, tsum);
        float e, e0, dj;
        math::loss_patch_unit<F, D>(g.o, a[j], v, w, e, e0, dj);
        acc += e;
        acc -= e0;
        if (d) d[j] = dj;
      }
    }
    total += acc;
    if (kJacobian && d) {
      double dot = 0.0;
      for (uint32_t j = 0; j < cols; ++j) dot += double(d[j]) * a[j];
      const float s = static_cast<float>(dot);
      for (uint32_t j = 0; j < cols; ++j) d[j] = math::softmax_jacobian(a[j], d[j], s);
    }
  }
  return total;
}

double softmax_ce_kernel(const RowsArgs& g, uint32_t rows) {
  double total = 0.0;
  const float* value = g.sp && !g.sp->value.empty() ? g.sp->value.data() : nullptr;
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t cols = g.cols;
    const float w = g.weights ? g.weights[r] : 1.0f;
    const float* a = g.a + size_t(r) * cols;
    float* d = g.delta ? g.delta + size_t(r) * cols : nullptr;
    double acc = 0.0, tsum = 0.0;
    if (g.dense_t) {
      const float* t = g.dense_t + size_t(r) * cols;
      for (uint32_t j = 0; j < cols; ++j) {
        acc += math::softmax_ce_error(a[j], t[j], w);
        tsum += t[j];
      }
      if (d)
        for (uint32_t j = 0; j < cols; ++j)
          d[j] = math::softmax_ce_delta(a[j], t[j], w, static_cast<float>(tsum));
      total += acc;
      continue;
    }
    const uint32_t lo = g.sp->row_ptr[r], hi = g.sp->row_ptr[r + 1];
    const double sum = target_sum(g, lo, hi);
    for (uint32_t i = lo; i < hi; ++i) {
      if (!math::run_start(g.sorted_index.data(), lo, i)) continue;
      float v = math::merged_target(g.sorted_index.data(), g.sorted_entry.data(), value, i, hi);
      if (g.normalise) v = math::normalised_target(v, sum);
      acc += math::softmax_ce_stored_error(a[g.sorted_index[i]], v, w);
      tsum += v;
    }
    total += acc;
    if (!d) continue;
    const float s = static_cast<float>(tsum);
    for (uint32_t j = 0; j < cols; ++j) d[j] = math::softmax_ce_delta_zero(a[j], w, s);
    for (uint32_t i = lo; i < hi; ++i) {
      if (!math::run_start(g.sorted_index.data(), lo, i)) continue;
      const uint32_t j = g.sorted_index[i];
      float v = math::merged_target(g.sorted_index.data(), g.sorted_entry.data(), value, i, hi);
      if (g.normalise) v = math::normalised_target(v, sum);
      d[j] = math::softmax_ce_delta(a[j], v, w, s);
    }
  }
  return total;
}

using RowsFn = double (*)(const RowsArgs&, uint32_t);

// The instances cuda/loss.cu runs, as host emulations (math/loss_kernel_choice.h picks).
struct Picker {
  template <Form F, DerivKind D, bool kJacobian>
  static RowsFn rows() {
    return &rows_kernel<F, D, kJacobian>;
  }
  static RowsFn softmax_ce() { return &softmax_ce_kernel; }
};

RowsFn kernel_for(ErrorFunction f, Activation act) {
  return math::choose_loss_kernel<Picker>(math::form_of(f), math::deriv_kind(act),
                                          act == Activation::SoftMax);
}

TEST(HostKernelMath, LossRowsMatchTheCpuBackend) {
  const auto& functions = test::kAllErrorFunctions;
  std::vector<Activation> acts(std::begin(kElementwise), std::end(kElementwise));
  acts.push_back(Activation::SoftMax);
  CpuBackend cpu(2);
  Rng rng(7);
  const uint32_t rows = 9, cols = 77;
  int cases = 0;
  for (ErrorFunction f : functions)
    for (Activation act : acts)
      for (Targets kind : test::kAllTargets) {
        LossParams p;
        p.function = f;
        p.activation = params_of(act);
        p.delta_boost_one = 1.5f;
        p.delta_boost_zero = 0.5f;
        std::vector<float> a = test::uniform(size_t(rows) * cols, rng, -2.0, 2.0);
        cpu.activate(p.activation, a.data(), rows, cols);
        const test::RandomTargets targets(rows, cols, kind, 12, rng);
        const TargetView& t = targets.view();
        const bool sparse = t.sparse;
        const Csr& sp = targets.csr();
        std::vector<float> d_cpu(a.size(), 0.0f);
        const double e_cpu = cpu.loss_and_delta(p, a.data(), t, rows, cols, d_cpu.data());

        RowsArgs g{};
        g.o = math::loss_row_consts(p, t);
        g.normalise =
            act == Activation::SoftMax &&
            (f == ErrorFunction::CrossEntropy || f == ErrorFunction::ScaledMarginalCrossEntropy);
        g.a = a.data();
        g.cols = cols;
        std::vector<float> d(a.size(), 0.0f);
        g.delta = d.data();
        if (sparse) {
          g.sp = &sp;
          g.weights = sp.row_weight.empty() ? nullptr : sp.row_weight.data();
          std::vector<uint32_t> row_of(sp.index.size()), order(sp.index.size());
          for (uint32_t r = 0; r < rows; ++r)
            for (uint32_t e = sp.row_ptr[r]; e < sp.row_ptr[r + 1]; ++e) row_of[e] = r;
          std::iota(order.begin(), order.end(), 0u);
          std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
            return std::make_pair(row_of[x], sp.index[x]) < std::make_pair(row_of[y], sp.index[y]);
          });
          g.sorted_entry = order;
          for (uint32_t e : order) g.sorted_index.push_back(sp.index[e]);
        } else {
          g.dense_t = t.dense;
          g.weights = t.row_weight;
        }
        const RowsFn fn = kernel_for(f, act);
        ASSERT_NE(fn, nullptr);
        const double e = fn(g, rows);
        const std::string what = std::string(to_string(f)) + " / " + to_string(act) +
                                 " / targets " + std::to_string(int(kind));
        EXPECT_NEAR(e, e_cpu, test::cpu_error_tolerance(f, act, kind, e_cpu)) << what;
        // Deltas: the same per-unit functions in the same order, except the SoftMax sums.
        std::vector<double> expected(d_cpu.begin(), d_cpu.end());
        if (act == Activation::SoftMax)
          EXPECT_TRUE(test::all_near(d, expected, 1e-6, 1e-5)) << what;
        else
          EXPECT_TRUE(bitwise_equal(d, d_cpu)) << what;
        ++cases;
      }
  EXPECT_EQ(cases, 7 * 13 * 4);
}

// Norms and the sparseness penalty: cuda/norm.cu's per-row / per-column steps.
TEST(HostKernelMath, NormsAndSparsenessPenaltyMatchTheCpuBackend) {
  CpuBackend cpu(2);
  Rng rng(8);
  const uint32_t rows = 23, cols = 601;
  const std::vector<float> x = test::uniform(size_t(rows) * cols, rng, -0.2, 0.2);
  const float max_norm = 2.0f;  // some rows longer, some shorter
  // Rows: squared length (a GPU block sums it as a tree: compare with a tolerance), then scale.
  std::vector<float> rows_cpu = x, rows_k = x;
  cpu.clip_row_norms(rows_cpu.data(), rows, cols, max_norm);
  for (uint32_t r = 0; r < rows; ++r) {
    double sq = 0.0;
    for (uint32_t c = 0; c < cols; ++c) {
      const double v = x[size_t(r) * cols + c];
      sq += v * v;
    }
    const float s = math::clip_scale(sq, max_norm);
    for (uint32_t c = 0; c < cols; ++c) rows_k[size_t(r) * cols + c] *= s;
  }
  EXPECT_TRUE(
      test::all_near(rows_k, std::vector<double>(rows_cpu.begin(), rows_cpu.end()), 1e-7, 1e-6));
  // Columns: the rows in order, in double (the CPU's order): bit for bit.
  std::vector<float> cols_cpu = x, cols_k = x;
  cpu.clip_column_norms(cols_cpu.data(), rows, cols, 0.5f);
  for (uint32_t c = 0; c < cols; ++c) {
    double sq = 0.0;
    for (uint32_t r = 0; r < rows; ++r) {
      const double v = x[size_t(r) * cols + c];
      sq += v * v;
    }
    const float s = math::clip_scale(sq, 0.5f);
    for (uint32_t r = 0; r < rows; ++r) cols_k[size_t(r) * cols + c] *= s;
  }
  EXPECT_TRUE(bitwise_equal(cols_k, cols_cpu));
  EXPECT_FALSE(bitwise_equal(cols_k, x));  // some columns were clipped
  // Sparseness penalty on sigmoid-like activations.
  const std::vector<float> a = test::uniform(size_t(rows) * cols, rng, 0.0, 0.3);
  const std::vector<float> d0 = test::uniform(size_t(rows) * cols, rng, -1.0, 1.0);
  std::vector<float> d_cpu = d0, d_k = d0;
  const float p = 0.05f, beta = 0.7f;
  const double v_cpu = cpu.sparseness_penalty(a.data(), rows, cols, p, beta, d_cpu.data());
  double total = 0.0;
  for (uint32_t c = 0; c < cols; ++c) {
    double sum = 0.0;
    for (uint32_t r = 0; r < rows; ++r) sum += a[size_t(r) * cols + c];
    const double rho = math::sparseness_rho(sum, rows);
    total += math::kl_divergence(p, rho);
    const float g = math::sparseness_gradient(p, beta, rho);
    for (uint32_t r = 0; r < rows; ++r) d_k[size_t(r) * cols + c] += g;
  }
  EXPECT_NEAR(double(rows) * beta * total, v_cpu, 1e-12 * std::fabs(v_cpu));
  EXPECT_TRUE(bitwise_equal(d_k, d_cpu));
}

// Transposed sparse weights: cuda/sparse_transposed.cu's forward (per row and output unit, the
// entries in order) and gradient (per index run, zero deltas skipped).
TEST(HostKernelMath, TransposedSparseMatchesTheCpuBackend) {
  CpuBackend cpu(2);
  Rng rng(9);
  const uint32_t rows = 29, cols = 400, n_out = 37;
  Csr x = test::random_csr(rows, cols, 30, rng, true, true, true, 6);
  const SparseView v = x.view();
  const std::vector<float> w = test::uniform(size_t(n_out) * cols, rng, -1.0, 1.0);
  const std::vector<float> z0 = test::uniform(size_t(rows) * n_out, rng, -1.0, 1.0);
  std::vector<float> z_cpu = z0, z = z0;
  cpu.sparse_matmul_transposed(v, w.data(), n_out, z_cpu.data());
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t o = 0; o < n_out; ++o) {
      float acc = 0.0f;
      for (uint32_t e = x.row_ptr[r]; e < x.row_ptr[r + 1]; ++e)
        acc += x.val(e) * x.weight(r) * w[size_t(o) * cols + x.index[e]];
      z[size_t(r) * n_out + o] += acc;
    }
  EXPECT_TRUE(test::all_near(z, std::vector<double>(z_cpu.begin(), z_cpu.end()), 1e-6, 1e-6));
  std::vector<float> delta = test::uniform(size_t(rows) * n_out, rng, -1.0, 1.0);
  for (size_t i = 0; i < delta.size(); i += 4) delta[i] = 0.0f;  // skipped terms
  const std::vector<float> g0 = test::uniform(size_t(n_out) * cols, rng, -0.1, 0.1);
  std::vector<float> g_cpu = g0, g = g0;
  cpu.sparse_weight_gradient_transposed(v, delta.data(), n_out, 0.4f, g_cpu.data());
  std::vector<uint32_t> row_of(x.index.size()), order(x.index.size());
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t e = x.row_ptr[r]; e < x.row_ptr[r + 1]; ++e) row_of[e] = r;
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return x.index[a] < x.index[b]; });
  std::vector<uint32_t> sorted_index(order.size());
  for (size_t i = 0; i < order.size(); ++i) sorted_index[i] = x.index[order[i]];
  for (uint32_t p = 0; p < order.size(); ++p) {
    if (!math::run_start(sorted_index.data(), 0, p)) continue;
    const uint32_t idx = sorted_index[p];
    for (uint32_t o = 0; o < n_out; ++o) {
      float acc = g[size_t(o) * cols + idx];
      for (uint32_t q = p; q < order.size() && sorted_index[q] == idx; ++q) {
        const uint32_t e = order[q], r = row_of[e];
        const float d = delta[size_t(r) * n_out + o];
        if (d == 0.0f) continue;
        acc += 0.4f * x.weight(r) * d * x.val(e);
      }
      g[size_t(o) * cols + idx] = acc;
    }
  }
  EXPECT_TRUE(test::all_near(g, std::vector<double>(g_cpu.begin(), g_cpu.end()), 1e-6, 1e-6));
}

}  // namespace
}  // namespace nn

namespace nn {
namespace {

// A row whose entries arrive in (row, index) order needs no sorted_entry map (SparseView::
// rows_sorted): merged_target reads the values in place, as through the identity map.
TEST(HostKernelMath, MergedTargetOfPresortedEntriesReadsValuesInPlace) {
  const uint32_t index[] = {1, 1, 3, 7, 7, 7};
  const uint32_t identity[] = {0, 1, 2, 3, 4, 5};
  const float value[] = {0.5f, 0.25f, 2.0f, 1.0f, 0.125f, 4.0f};
  for (uint32_t i = 0; i < 6; ++i) {
    if (!math::run_start(index, 0, i)) continue;
    EXPECT_EQ(math::merged_target(index, nullptr, value, i, 6),
              math::merged_target(index, identity, value, i, 6))
        << i;
  }
  EXPECT_EQ(math::merged_target(index, nullptr, value, 0, 6), 0.75f);
  EXPECT_EQ(math::merged_target(index, nullptr, value, 3, 6), 5.125f);
  EXPECT_EQ(math::merged_target(index, nullptr, nullptr, 2, 6), 1.0f);  // Boolean targets
}

}  // namespace
}  // namespace nn
