// Shared helpers for the backend tests: random data, CSR batches and their dense equivalents
// (references in the tests are computed in double from these dense forms), and the means to run
// one test on every backend: the fixture BackendTest (instances "cpu" and, in builds with the
// CUDA backend, "cuda", which skips without a usable device) and copies of test data into a
// backend's memory (to_device, DeviceCsr, DeviceTargets), so a test never hands host pointers
// to a backend.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/device_probe.h"
#include "backend/device_array.h"
#include "core/random.h"

namespace nn::test {

inline std::vector<float> uniform(size_t n, Rng& rng, double lo, double hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(lo + (hi - lo) * rng.uniform());
  return v;
}

// A CSR minibatch owned by the test; view() exposes it as the backend sees it.
struct Csr {
  uint32_t cols = 0;
  std::vector<uint32_t> row_ptr{0};
  std::vector<uint32_t> index;
  std::vector<float> value;       // empty => Boolean
  std::vector<float> row_weight;  // empty => unweighted

  uint32_t rows() const { return uint32_t(row_ptr.size() - 1); }
  void add_row(const std::vector<uint32_t>& idx, const std::vector<float>& vals = {}) {
    index.insert(index.end(), idx.begin(), idx.end());
    value.insert(value.end(), vals.begin(), vals.end());
    row_ptr.push_back(uint32_t(index.size()));
  }
  SparseView view() const {
    SparseView v;
    v.rows = rows();
    v.cols = cols;
    v.row_ptr = row_ptr.data();
    v.index = index.data();
    v.value = value.empty() ? nullptr : value.data();
    v.row_weight = row_weight.empty() ? nullptr : row_weight.data();
    v.nnz = index.size();
    return v;
  }
  float weight(uint32_t r) const { return row_weight.empty() ? 1.0f : row_weight[r]; }
  float val(uint32_t e) const { return value.empty() ? 1.0f : value[e]; }

  // Dense input matrix as the sparse kernels see it: X[r][i] = sum over entries of v * w_r.
  std::vector<double> dense_input() const {
    std::vector<double> x(size_t(rows()) * cols, 0.0);
    for (uint32_t r = 0; r < rows(); ++r)
      for (uint32_t e = row_ptr[r]; e < row_ptr[r + 1]; ++e)
        x[size_t(r) * cols + index[e]] += double(val(e)) * weight(r);
    return x;
  }
  // Dense targets: duplicates add their values (analog) or give 1 (Boolean); no weights.
  std::vector<double> dense_targets() const {
    std::vector<double> t(size_t(rows()) * cols, 0.0);
    for (uint32_t r = 0; r < rows(); ++r)
      for (uint32_t e = row_ptr[r]; e < row_ptr[r + 1]; ++e) {
        double& slot = t[size_t(r) * cols + index[e]];
        slot = value.empty() ? 1.0 : slot + value[e];
      }
    return t;
  }
  // Whether unit (r, j) is stored.
  std::vector<bool> stored() const {
    std::vector<bool> s(size_t(rows()) * cols, false);
    for (uint32_t r = 0; r < rows(); ++r)
      for (uint32_t e = row_ptr[r]; e < row_ptr[r + 1]; ++e) s[size_t(r) * cols + index[e]] = true;
    return s;
  }
};

// Random rows of up to max_per_row entries; with `duplicates` some indices repeat within a row;
// row `empty_row` (if < rows) has no entries.
inline Csr random_csr(uint32_t rows, uint32_t cols, uint32_t max_per_row, Rng& rng, bool analog,
                      bool weighted, bool duplicates, uint32_t empty_row = UINT32_MAX) {
  Csr c;
  c.cols = cols;
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<uint32_t> idx;
    std::vector<float> vals;
    const uint32_t count = r == empty_row ? 0 : 1 + uint32_t(rng.below(max_per_row));
    for (uint32_t e = 0; e < count; ++e) {
      uint32_t i = uint32_t(rng.below(cols));
      if (duplicates && !idx.empty() && rng.uniform() < 0.25) i = idx[rng.below(idx.size())];
      idx.push_back(i);
      if (analog) vals.push_back(static_cast<float>(0.2 + 0.6 * rng.uniform()));
    }
    c.add_row(idx, vals);
  }
  if (weighted) c.row_weight = uniform(rows, rng, 0.5, 2.0);
  return c;
}

// The kinds of output-layer targets the loss kernels handle.
enum class Targets { Dense, SparseBoolean, SparseAnalogWeighted, SparseIgnoreZero };
inline constexpr Targets kAllTargets[] = {Targets::Dense, Targets::SparseBoolean,
                                          Targets::SparseAnalogWeighted, Targets::SparseIgnoreZero};

// How close a kernel's summed error (a log per unit) must come to the CPU backend's. Where the
// CPU sweeps sparse targets of a log-loss (CrossEntropy, the marginal cross-entropies; not
// SoftMax, whose forms differ) it takes one log per lane of the t = 0 factors' product
// (backend/cpu/log_product.h), closer to the exact sum than a fast log per unit (~3e-7 relative
// each): the two agree to that rounding. Every other error is the same per-unit values summed in
// another order.
inline double cpu_error_tolerance(ErrorFunction f, Activation act, Targets kind, double e_cpu) {
  const bool log_sweep =
      (kind == Targets::SparseBoolean || kind == Targets::SparseAnalogWeighted) &&
      act != Activation::SoftMax &&
      (f == ErrorFunction::CrossEntropy || f == ErrorFunction::ScaledMarginalCrossEntropy ||
       f == ErrorFunction::DataScaledMarginalCrossEntropy);
  return (log_sweep ? 2e-7 : 1e-9) * (1.0 + std::fabs(e_cpu));
}

// Random targets of one kind for a rows x cols batch, viewed as the loss kernels take them:
// sparse ones up to `per_row` entries per row with duplicated indices and row 2 empty (values
// and row weights for SparseAnalogWeighted); dense ones in [0, 1) with every third zero, with
// example weights in [0.5, 2). Not copyable: view() points into it.
class RandomTargets {
 public:
  RandomTargets(uint32_t rows, uint32_t cols, Targets kind, uint32_t per_row, Rng& rng) {
    const bool analog = kind == Targets::SparseAnalogWeighted;
    sp_ = random_csr(rows, cols, per_row, rng, analog, analog, /*duplicates=*/true,
                     /*empty_row=*/2);
    weights_ = uniform(rows, rng, 0.5, 2.0);
    view_.sparse = kind != Targets::Dense;
    view_.ignore_zero = kind == Targets::SparseIgnoreZero;
    if (view_.sparse) {
      view_.sp = sp_.view();
    } else {
      dense_ = uniform(size_t(rows) * cols, rng, 0.0, 1.0);
      for (size_t i = 0; i < dense_.size(); i += 3) dense_[i] = 0.0f;
      view_.dense = dense_.data();
      view_.row_weight = weights_.data();
    }
  }
  RandomTargets(const RandomTargets&) = delete;
  RandomTargets& operator=(const RandomTargets&) = delete;
  const TargetView& view() const { return view_; }
  const Csr& csr() const { return sp_; }

 private:
  Csr sp_;
  std::vector<float> dense_, weights_;
  TargetView view_;
};

// Every error function and every activation (the loss kernels' order), for tests that sweep
// them all.
inline constexpr ErrorFunction kAllErrorFunctions[] = {
    ErrorFunction::L1,
    ErrorFunction::L2,
    ErrorFunction::CrossEntropy,
    ErrorFunction::ScaledMarginalCrossEntropy,
    ErrorFunction::DataScaledMarginalCrossEntropy,
    ErrorFunction::Hinge,
    ErrorFunction::L2Hinge};
inline constexpr Activation kAllActivations[] = {Activation::Sigmoid,
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
                                                 Activation::SoftSign,
                                                 Activation::SoftMax};

// Identical bits, except that any NaN equals any NaN: IEEE 754 leaves the sign and payload of a
// NaN produced by arithmetic open, and they differ between scalar and SIMD code (a build without
// -march=native gave -NaN on one path and +NaN on the other) and on the GPU.
inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
           return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, sizeof x) == 0;
         });
}

// |actual - expected| <= abs_tol + rel_tol * |expected|, element by element, with the first
// failing position in the message.
inline ::testing::AssertionResult all_near(const std::vector<float>& actual,
                                           const std::vector<double>& expected, double abs_tol,
                                           double rel_tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i) {
    const double tol = abs_tol + rel_tol * std::fabs(expected[i]);
    if (!(std::fabs(double(actual[i]) - expected[i]) <= tol))
      return ::testing::AssertionFailure() << "at " << i << ": got " << actual[i] << ", expected "
                                           << expected[i] << " (tolerance " << tol << ")";
  }
  return ::testing::AssertionSuccess();
}

// ---- data in a backend's memory ----------------------------------------------------------------

// A new array in b's memory holding a copy of `host`.
template <typename T>
DeviceArray<T> to_device(Backend& b, const std::vector<T>& host) {
  DeviceArray<T> d;
  d.assign(b, host);
  return d;
}

// A CSR batch copied into b's memory from host arrays (a Csr or any host SparseView); view()
// is what the kernels take. Movable: the arrays' memory does not move with them.
class DeviceCsr {
 public:
  DeviceCsr(Backend& b, const SparseView& host) : view_(host) {
    const size_t nnz = host.rows ? host.row_ptr[host.rows] : 0;
    row_ptr_ = copy(b, host.row_ptr, host.rows + size_t(1));
    index_ = copy(b, host.index, nnz);
    value_ = copy(b, host.value, nnz);
    weight_ = copy(b, host.row_weight, host.rows);
    view_.row_ptr = row_ptr_.data();
    view_.index = index_.data();
    view_.value = value_.data();
    view_.row_weight = weight_.data();
  }
  DeviceCsr(Backend& b, const Csr& c) : DeviceCsr(b, c.view()) {}
  const SparseView& view() const { return view_; }

 private:
  // A null or empty host array stays null (null value / row_weight have a meaning).
  template <typename T>
  static DeviceArray<T> copy(Backend& b, const T* host, size_t n) {
    DeviceArray<T> d;
    if (host && n) {
      d.resize(b, n);
      d.upload(host, n);
    }
    return d;
  }
  SparseView view_;
  DeviceArray<uint32_t> row_ptr_, index_;
  DeviceArray<float> value_, weight_;
};

// Output-layer targets of a rows x cols batch copied into b's memory from a host TargetView
// (dense values or sparse entries, row weights, row sums).
class DeviceTargets {
 public:
  DeviceTargets(Backend& b, const TargetView& host, uint32_t rows, uint32_t cols) : view_(host) {
    if (host.sparse) {
      sparse_ = std::make_unique<DeviceCsr>(b, host.sp);
      view_.sp = sparse_->view();
    }
    view_.dense = copy(b, dense_, host.dense, size_t(rows) * cols);
    view_.row_weight = copy(b, weight_, host.row_weight, rows);
    view_.row_sum = copy(b, row_sum_, host.row_sum, rows);
  }
  const TargetView& view() const { return view_; }

 private:
  static const float* copy(Backend& b, DeviceArray<float>& d, const float* host, size_t n) {
    if (!host || !n) return nullptr;
    d.resize(b, n);
    d.upload(host, n);
    return d.data();
  }
  TargetView view_;
  std::unique_ptr<DeviceCsr> sparse_;
  DeviceArray<float> dense_, weight_, row_sum_;
};

// ---- one test on every backend
// --------------------------------------------------------------------

// The backends a test runs on: "cpu" always; "cuda" in builds with the CUDA backend (its
// instances skip at run time where no device is usable). Instance names start with the backend
// ("/cpu", "/cuda_Sigmoid"), so --gtest_filter='*/cuda*' selects the CUDA instances.
inline std::vector<std::string> backend_names() {
#ifdef NN_HAVE_CUDA
  return {"cpu", "cuda"};
#else
  return {"cpu"};
#endif
}

// Why backend `name` cannot run here ("" when it can). The CUDA probe runs once per process.
inline std::string backend_unavailable(const std::string& name) {
  if (name == "cpu") return "";
  if (name != "cuda") return "unknown backend '" + name + "'";
  static const std::string cuda_reason = [] {
    if (cuda_device_count() > 0) return std::string();
    const std::string summary = cuda_device_summary();  // "no CUDA device: <the probe's reason>"
    return summary.rfind("no CUDA device", 0) == 0 ? summary : "no CUDA device: " + summary;
  }();
  return cuda_reason;
}

// A fresh backend `name`; cpu_threads is the CPU backend's thread count (others ignore it), so
// tests that used CpuBackend(1) or CpuBackend(2) keep their partitioning on the CPU.
inline std::unique_ptr<Backend> open_backend(const std::string& name, int cpu_threads) {
  if (name == "cpu") return std::make_unique<CpuBackend>(cpu_threads);
  return make_backend(name, cpu_threads);
}

inline const std::string& backend_of(const std::string& param) {
  return param;
}
template <typename... T>
const std::string& backend_of(const std::tuple<std::string, T...>& param) {
  return std::get<0>(param);
}

// Fixture of a test run on every backend. Param is the backend name, or a tuple whose first
// element is the backend name (tests also parameterised over cases: BackendTestWith<Case>).
template <typename Param>
class BackendTestBase : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const std::string why = backend_unavailable(backend_name());
    if (!why.empty()) GTEST_SKIP() << why;
  }
  const std::string& backend_name() const { return backend_of(this->GetParam()); }
  bool on_cpu() const { return backend_name() == "cpu"; }
  std::unique_ptr<Backend> backend(int cpu_threads = 2) const {
    return open_backend(backend_name(), cpu_threads);
  }
};

using BackendTest = BackendTestBase<std::string>;
template <typename... Case>
using BackendTestWith = BackendTestBase<std::tuple<std::string, Case...>>;

// Instantiates the BackendTest fixture `suite` once per backend ("Backends/suite.test/cpu").
#define NN_INSTANTIATE_ON_BACKENDS(suite)                                \
  INSTANTIATE_TEST_SUITE_P(                                              \
      Backends, suite, ::testing::ValuesIn(::nn::test::backend_names()), \
      [](const ::testing::TestParamInfo<std::string>& info) { return info.param; })

}  // namespace nn::test
