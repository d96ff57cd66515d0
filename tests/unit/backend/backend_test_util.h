// Shared helpers for the backend tests: random data, CSR batches and their dense equivalents.
// References in the tests are computed in double from these dense forms.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"
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

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
           return std::memcmp(&x, &y, sizeof x) == 0;
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

}  // namespace nn::test
