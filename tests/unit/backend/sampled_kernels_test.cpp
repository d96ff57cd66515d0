// The kernels of sampled output training (Backend::gather_rows, scatter_rows, scale_columns,
// scale_rows, transpose) on every backend, against the host arithmetic of
// backend/math/sampled_math.h and plain loops: gathering rows, scattering them back (the other rows
// untouched), scaling each column by its weight, and transposing (there and back gives the matrix
// again).
#include <gtest/gtest.h>

#include <vector>

#include "backend/math/sampled_math.h"
#include "backend_test_util.h"

namespace nn::test {
namespace {

class SampledKernels : public BackendTest {};

TEST(SampledMath, CompactElementsMapToTheirFullRows) {
  const std::vector<uint32_t> index = {4, 0, 9};
  // Element 5 of a [3][4] compact matrix: row 1, column 1 -> full (0, 1) of [*][4].
  EXPECT_EQ(math::sampled_row_offset(5, 4, index.data()), 1u);
  EXPECT_EQ(math::sampled_row_offset(2, 4, index.data()), 18u);   // row 0 -> full row 4
  EXPECT_EQ(math::sampled_row_offset(11, 4, index.data()), 39u);  // row 2 -> full row 9
  const std::vector<float> w = {2.0f, 0.5f, -1.0f};
  EXPECT_EQ(math::sampled_scaled(3.0f, 4, 3, w.data()), 1.5f);      // column 1
  EXPECT_EQ(math::sampled_row_scaled(3.0f, 4, 3, w.data()), 1.5f);  // row 1
}

TEST_P(SampledKernels, GatherScatterRowsAndScaleColumnsAndRows) {
  auto be = backend(2);
  // Large enough for the CPU backend to split the work over threads; rows cut across chunks.
  const uint32_t width = 129, full_rows = 1000, count = 370;
  Rng rng(4);
  const auto full = uniform(size_t(full_rows) * width, rng, -1, 1);
  std::vector<uint32_t> index;
  for (uint32_t k = 0; k < count; ++k) index.push_back((k * 37 + 11) % full_rows);  // distinct
  const auto d_full = to_device(*be, full);
  const auto d_index = to_device(*be, index);
  auto d_compact = to_device(*be, std::vector<float>(size_t(count) * width, 0.0f));
  be->gather_rows(d_full.data(), width, d_index.data(), count, d_compact.data());
  const auto compact = d_compact.to_host();
  for (uint32_t k = 0; k < count; ++k)
    for (uint32_t c = 0; c < width; ++c)
      ASSERT_EQ(compact[size_t(k) * width + c], full[size_t(index[k]) * width + c])
          << k << "," << c;

  const auto w = uniform(width, rng, 0.5, 3);
  const auto d_w = to_device(*be, w);
  be->scale_columns(d_compact.data(), count, width, d_w.data());
  const auto scaled = d_compact.to_host();
  for (size_t e = 0; e < scaled.size(); ++e) ASSERT_EQ(scaled[e], compact[e] * w[e % width]) << e;
  const auto rw = uniform(count, rng, 0.5, 3);
  const auto d_rw = to_device(*be, rw);
  auto d_rows = to_device(*be, scaled);
  be->scale_rows(d_rows.data(), count, width, d_rw.data());
  const auto row_scaled = d_rows.to_host();
  for (size_t e = 0; e < row_scaled.size(); ++e)
    ASSERT_EQ(row_scaled[e], scaled[e] * rw[e / width]) << e;

  auto d_target = to_device(*be, std::vector<float>(size_t(full_rows) * width, 7.0f));
  be->scatter_rows(d_compact.data(), width, d_index.data(), count, d_target.data());
  const auto target = d_target.to_host();
  std::vector<bool> chosen(full_rows, false);
  for (uint32_t j : index) chosen[j] = true;
  for (uint32_t k = 0; k < count; ++k)
    for (uint32_t c = 0; c < width; ++c)
      ASSERT_EQ(target[size_t(index[k]) * width + c], scaled[size_t(k) * width + c]);
  for (size_t e = 0; e < target.size(); ++e)
    if (!chosen[e / width]) ASSERT_EQ(target[e], 7.0f) << "row " << e / width << " was not chosen";
}

TEST_P(SampledKernels, TransposeMovesEveryElementAndBackAgain) {
  auto be = backend(2);
  Rng rng(9);
  // Shapes that are not multiples of a tile, a single row, and a wide matrix split over threads.
  for (const auto& [rows, cols] :
       std::vector<std::pair<uint32_t, uint32_t>>{{1, 1}, {1, 70}, {33, 65}, {128, 3001}}) {
    const auto a = uniform(size_t(rows) * cols, rng, -1, 1);
    const auto d_a = to_device(*be, a);
    auto d_t = to_device(*be, std::vector<float>(a.size(), 0.0f));
    be->transpose(d_a.data(), rows, cols, d_t.data());
    const auto t = d_t.to_host();
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < cols; ++c)
        ASSERT_EQ(t[size_t(c) * rows + r], a[size_t(r) * cols + c])
            << rows << "x" << cols << " at " << r << "," << c;
    auto d_back = to_device(*be, std::vector<float>(a.size(), 0.0f));
    be->transpose(d_t.data(), cols, rows, d_back.data());
    EXPECT_EQ(d_back.to_host(), a) << rows << "x" << cols;
  }
}

NN_INSTANTIATE_ON_BACKENDS(SampledKernels);

}  // namespace
}  // namespace nn::test
