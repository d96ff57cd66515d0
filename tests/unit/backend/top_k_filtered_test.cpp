// Backend::top_k_filtered on every backend (fixture BackendTest: /cpu, and /cuda in CUDA builds)
// against a plain reference (filter, then a stable sort by descending score): exclusions
// (duplicated, past the valid columns), multipliers (a column listed twice, a product that is
// NaN), K larger than the row, NaN scores, rows left empty, ties and -0; and the CUDA kernels
// (per-element keys of backend/math/top_k_math.h, the radix select of top_k_select_math.h)
// emulated on the host over the same index space (HostKernelMath.*), which must give the CPU
// backend's result bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/device_array.h"
#include "backend/math/top_k_math.h"
#include "backend/top_k_emulation.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr uint32_t kNone = UINT32_MAX;

// Per-row filter lists on the host, and their TopKFilter view (host memory is the CPU backend's).
struct Filters {
  std::vector<std::vector<uint32_t>> exclude, scale_index;
  std::vector<std::vector<float>> scale_value;
  bool with_exclude = true, with_scale = true;
  std::vector<uint32_t> ex_ptr, ex_index, sc_ptr, sc_index;
  std::vector<float> sc_value;

  explicit Filters(uint32_t rows) : exclude(rows), scale_index(rows), scale_value(rows) {}
  TopKFilter view() {
    ex_ptr.assign(1, 0);
    sc_ptr.assign(1, 0);
    ex_index.clear();
    sc_index.clear();
    sc_value.clear();
    for (size_t r = 0; r < exclude.size(); ++r) {
      ex_index.insert(ex_index.end(), exclude[r].begin(), exclude[r].end());
      sc_index.insert(sc_index.end(), scale_index[r].begin(), scale_index[r].end());
      sc_value.insert(sc_value.end(), scale_value[r].begin(), scale_value[r].end());
      ex_ptr.push_back(uint32_t(ex_index.size()));
      sc_ptr.push_back(uint32_t(sc_index.size()));
    }
    TopKFilter f;
    if (with_exclude) {
      f.exclude_ptr = ex_ptr.data();
      f.exclude_index = ex_index.data();
    }
    if (with_scale) {
      f.scale_ptr = sc_ptr.data();
      f.scale_index = sc_index.data();
      f.scale_value = sc_value.data();
    }
    return f;
  }
};

struct Result {
  std::vector<float> value;
  std::vector<uint32_t> index;
};

// Filter each row, then a stable sort by descending score (ties keep the lower column first).
Result reference(const std::vector<float>& x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                 uint32_t k, const Filters& f) {
  Result out{std::vector<float>(size_t(rows) * k, -INFINITY),
             std::vector<uint32_t>(size_t(rows) * k, kNone)};
  const uint32_t valid = std::min(cols, valid_cols);
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<std::pair<float, uint32_t>> cand;
    for (uint32_t c = 0; c < valid; ++c) {
      const auto& ex = f.exclude[r];
      if (f.with_exclude && std::find(ex.begin(), ex.end(), c) != ex.end()) continue;
      float v = x[size_t(r) * cols + c];
      if (f.with_scale)
        for (size_t j = 0; j < f.scale_index[r].size(); ++j)
          if (f.scale_index[r][j] == c) v *= f.scale_value[r][j];
      if (std::isnan(v)) continue;
      cand.emplace_back(v, c);
    }
    std::stable_sort(cand.begin(), cand.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t j = 0; j < std::min<size_t>(k, cand.size()); ++j) {
      out.value[size_t(r) * k + j] = cand[j].first;
      out.index[size_t(r) * k + j] = cand[j].second;
    }
  }
  return out;
}

// top_k_filtered on `be` with x and the filters copied into its memory.
Result run_on(Backend& be, const std::vector<float>& x, uint32_t rows, uint32_t cols,
              uint32_t valid_cols, uint32_t k, Filters& f) {
  const TopKFilter host = f.view();
  auto dx = test::to_device(be, x);
  auto ep = test::to_device(be, f.ex_ptr), ei = test::to_device(be, f.ex_index),
       sp = test::to_device(be, f.sc_ptr), si = test::to_device(be, f.sc_index);
  auto sv = test::to_device(be, f.sc_value);
  TopKFilter tf;
  if (host.exclude_ptr) {
    tf.exclude_ptr = ep.data();
    tf.exclude_index = ei.data();
  }
  if (host.scale_ptr) {
    tf.scale_ptr = sp.data();
    tf.scale_index = si.data();
    tf.scale_value = sv.data();
  }
  auto dv = test::to_device(be, std::vector<float>(size_t(rows) * k, 7.0f));
  auto di = test::to_device(be, std::vector<uint32_t>(size_t(rows) * k, 7u));
  be.top_k_filtered(dx.data(), rows, cols, valid_cols, k, tf, dv.data(), di.data());
  return Result{dv.to_host(), di.to_host()};
}

// The CUDA kernels of cuda/top_k.cu on the host (the radix select over the kernels' index
// space, then the selected keys sorted and gathered: top_k_emulation.h).
Result emulate_cuda(const std::vector<float>& x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                    uint32_t k, Filters& f) {
  Result out;
  test::emulate_top_k_filtered(x, rows, cols, valid_cols, k, f.view(), out.value, out.index);
  return out;
}

class TopKFiltered : public test::BackendTest {};

TEST_P(TopKFiltered, ExclusionsAreSkippedAndTheRestRankInOrder) {
  auto be = backend(1);
  const uint32_t rows = 2, cols = 6;
  const std::vector<float> x = {0.1f, 0.9f, 0.5f, 0.9f, 0.3f, 0.7f,  //
                                1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  Filters f(rows);
  f.exclude[0] = {1, 1, 4, 9};  // a duplicate and a column past the row are harmless
  f.exclude[1] = {0, 5};
  const Result got = run_on(*be, x, rows, cols, cols, 3, f);
  EXPECT_EQ(got.index, (std::vector<uint32_t>{3, 5, 2, 4, 3, 2}));
  EXPECT_EQ(got.value, (std::vector<float>{0.9f, 0.7f, 0.5f, 5.0f, 4.0f, 3.0f}));
}

TEST_P(TopKFiltered, MultipliersScaleScoresBeforeRanking) {
  auto be = backend(1);
  const uint32_t cols = 5;
  const std::vector<float> x = {1.0f, 2.0f, 3.0f, INFINITY, 0.5f};
  Filters f(1);
  // Column 0 is listed twice (x 4 x 2 = 8), column 3 becomes NaN (inf x 0: left out), column 2
  // goes negative.
  f.scale_index[0] = {0, 0, 2, 3};
  f.scale_value[0] = {4.0f, 2.0f, -1.0f, 0.0f};
  const Result got = run_on(*be, x, 1, cols, cols, 5, f);
  EXPECT_EQ(got.index, (std::vector<uint32_t>{0, 1, 4, 2, kNone}));
  EXPECT_EQ(got.value, (std::vector<float>{8.0f, 2.0f, 0.5f, -3.0f, -INFINITY}));
}

TEST_P(TopKFiltered, NanIsSkippedAndShortRowsArePadded) {
  auto be = backend(1);
  const uint32_t rows = 3, cols = 4;
  const std::vector<float> x = {kNan,  1.0f, kNan,  -INFINITY,  // NaN left out, -inf kept
                                2.0f,  1.0f, 0.0f,  -1.0f,      // every column excluded
                                -0.0f, 0.0f, -0.0f, 0.0f};      // ties: lower column first
  Filters f(rows);
  f.exclude[1] = {0, 1, 2, 3};
  f.with_scale = false;
  const Result got = run_on(*be, x, rows, cols, cols, 6, f);  // K larger than the row
  EXPECT_EQ(got.index, (std::vector<uint32_t>{1, 3, kNone, kNone, kNone, kNone,          //
                                              kNone, kNone, kNone, kNone, kNone, kNone,  //
                                              0, 1, 2, 3, kNone, kNone}));
  EXPECT_EQ(got.value[0], 1.0f);
  EXPECT_EQ(got.value[1], -INFINITY);
  EXPECT_TRUE(std::signbit(got.value[12]));  // the score as it was, -0
  for (uint32_t j = 0; j < 6; ++j) EXPECT_EQ(got.value[6 + j], -INFINITY);
}

TEST_P(TopKFiltered, NoFiltersEqualsTopKWhenThereIsNoNan) {
  auto be = backend(2);
  Rng rng(3);
  const uint32_t rows = 40, cols = 1000, k = 17;
  const std::vector<float> x = test::uniform(size_t(rows) * cols, rng, -1, 1);
  auto dx = test::to_device(*be, x);
  DeviceArray<float> v(*be, size_t(rows) * k), fv(*be, size_t(rows) * k);
  DeviceArray<uint32_t> i(*be, size_t(rows) * k), fi(*be, size_t(rows) * k);
  be->top_k(dx.data(), rows, cols, 900, k, v.data(), i.data());
  be->top_k_filtered(dx.data(), rows, cols, 900, k, TopKFilter{}, fv.data(), fi.data());
  EXPECT_EQ(fi.to_host(), i.to_host());
  EXPECT_TRUE(test::bitwise_equal(fv.to_host(), v.to_host()));
}

TEST_P(TopKFiltered, EmptyInputsWriteNothingOrPadding) {
  auto be = backend(1);
  auto v = test::to_device(*be, std::vector<float>(3, 7.0f));
  auto i = test::to_device(*be, std::vector<uint32_t>(3, 7u));
  be->top_k_filtered(nullptr, 0, 10, 10, 3, TopKFilter{}, v.data(), i.data());
  EXPECT_EQ(i.to_host(), (std::vector<uint32_t>(3, 7u)));
  auto x = test::to_device(*be, std::vector<float>{1.0f, 2.0f});
  be->top_k_filtered(x.data(), 1, 2, 0, 3, TopKFilter{}, v.data(), i.data());  // no valid column
  EXPECT_EQ(i.to_host(), (std::vector<uint32_t>(3, kNone)));
  EXPECT_EQ(v.to_host(), (std::vector<float>(3, -INFINITY)));
}

// Random rows large enough for the parallel path and the block skip, with random filters.
void random_case(Rng& rng, uint32_t rows, uint32_t cols, uint32_t valid, uint32_t k, Filters& f,
                 std::vector<float>& x) {
  x = test::uniform(size_t(rows) * cols, rng, -1, 1);
  for (size_t j = 0; j < x.size(); j += 7) x[j] = 0.25f;  // ties
  for (size_t j = 3; j < x.size(); j += 101) x[j] = kNan;
  for (size_t j = 5; j < x.size(); j += 97) x[j] = -0.0f;
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols + 3; ++c) {
      const double u = rng.uniform();
      if (u < 0.05) f.exclude[r].push_back(c);
      if (u < 0.01) f.exclude[r].push_back(c);  // duplicated
      if (u > 0.97) {
        f.scale_index[r].push_back(c);
        f.scale_value[r].push_back(u > 0.995 ? 0.0f : float(4.0 * rng.uniform() - 1.0));
      }
    }
  }
  (void)valid;
  (void)k;
}

TEST_P(TopKFiltered, MatchesTheReferenceOnRandomRows) {
  auto be = backend(2);
  Rng rng(11);
  struct Case {
    uint32_t rows, cols, valid, k;
  };
  for (Case c : {Case{64, 2000, 2000, 10}, Case{5, 300, 250, 400}, Case{33, 129, 129, 1},
                 Case{3, 64, 64, 64}}) {
    Filters f(c.rows);
    std::vector<float> x;
    random_case(rng, c.rows, c.cols, c.valid, c.k, f, x);
    const Result want = reference(x, c.rows, c.cols, c.valid, c.k, f);
    const Result got = run_on(*be, x, c.rows, c.cols, c.valid, c.k, f);
    EXPECT_EQ(got.index, want.index) << c.rows << "x" << c.cols << " k " << c.k;
    EXPECT_TRUE(test::bitwise_equal(got.value, want.value)) << c.rows << "x" << c.cols;
  }
}

TEST(HostKernelMath, TopKFilteredKeysGiveTheCpuBackendsResult) {
  CpuBackend cpu(2);
  Rng rng(12);
  struct Case {
    uint32_t rows, cols, valid, k;
    bool exclude, scale;
  };
  for (Case c : {Case{40, 1500, 1500, 20, true, true}, Case{7, 97, 60, 100, true, false},
                 Case{7, 97, 97, 5, false, true}, Case{4, 33, 0, 3, true, true},
                 Case{2, 1, 1, 1, true, true}}) {
    Filters f(c.rows);
    std::vector<float> x;
    random_case(rng, c.rows, c.cols, c.valid, c.k, f, x);
    f.with_exclude = c.exclude;
    f.with_scale = c.scale;
    const Result want = run_on(cpu, x, c.rows, c.cols, c.valid, c.k, f);
    const Result got = emulate_cuda(x, c.rows, c.cols, c.valid, c.k, f);
    EXPECT_EQ(got.index, want.index) << c.rows << "x" << c.cols << " k " << c.k;
    EXPECT_TRUE(test::bitwise_equal(got.value, want.value)) << c.rows << "x" << c.cols;
  }
}

NN_INSTANTIATE_ON_BACKENDS(TopKFiltered);

}  // namespace
}  // namespace nn
