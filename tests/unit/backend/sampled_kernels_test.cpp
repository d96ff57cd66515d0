// The column kernels of sampled output training (Backend::gather_columns, scatter_columns,
// scale_columns) on every backend, against the host arithmetic of backend/math/sampled_math.h
// and a plain loop: gathering columns, scattering them back (the other columns untouched), and
// scaling each column by its weight.
#include <gtest/gtest.h>

#include <vector>

#include "backend/math/sampled_math.h"
#include "backend_test_util.h"

namespace nn::test {
namespace {

class SampledKernels : public BackendTest {};

TEST(SampledMath, CompactElementsMapToTheirFullColumns) {
  const std::vector<uint32_t> index = {4, 0, 9};
  // Element 5 of a [rows][3] compact matrix: row 1, column 2 -> full (1, 9) of [rows][10].
  EXPECT_EQ(math::sampled_full_offset(5, 3, 10, index.data()), 19u);
  EXPECT_EQ(math::sampled_full_offset(0, 3, 10, index.data()), 4u);
  const std::vector<float> w = {2.0f, 0.5f, -1.0f};
  EXPECT_EQ(math::sampled_scaled(3.0f, 4, 3, w.data()), 1.5f);  // column 1
}

TEST_P(SampledKernels, GatherScatterAndScaleColumns) {
  auto be = backend(2);
  // Large enough for the CPU backend to split the work over threads.
  const uint32_t rows = 300, cols = 1000, count = 170;
  Rng rng(4);
  const auto full = uniform(size_t(rows) * cols, rng, -1, 1);
  std::vector<uint32_t> index;
  for (uint32_t k = 0; k < count; ++k) index.push_back((k * 37 + 11) % cols);  // distinct
  const auto d_full = to_device(*be, full);
  const auto d_index = to_device(*be, index);
  auto d_compact = to_device(*be, std::vector<float>(size_t(rows) * count, 0.0f));
  be->gather_columns(d_full.data(), rows, cols, d_index.data(), count, d_compact.data());
  const auto compact = d_compact.to_host();
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t k = 0; k < count; ++k)
      ASSERT_EQ(compact[size_t(r) * count + k], full[size_t(r) * cols + index[k]]) << r << "," << k;

  const auto w = uniform(count, rng, 0.5, 3);
  const auto d_w = to_device(*be, w);
  be->scale_columns(d_compact.data(), rows, count, d_w.data());
  const auto scaled = d_compact.to_host();
  for (size_t e = 0; e < scaled.size(); ++e) ASSERT_EQ(scaled[e], compact[e] * w[e % count]) << e;

  auto d_target = to_device(*be, std::vector<float>(size_t(rows) * cols, 7.0f));
  be->scatter_columns(d_compact.data(), rows, count, d_index.data(), cols, d_target.data());
  const auto target = d_target.to_host();
  std::vector<bool> chosen(cols, false);
  for (uint32_t j : index) chosen[j] = true;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t k = 0; k < count; ++k)
      ASSERT_EQ(target[size_t(r) * cols + index[k]], scaled[size_t(r) * count + k]);
  for (size_t e = 0; e < target.size(); ++e)
    if (!chosen[e % cols]) ASSERT_EQ(target[e], 7.0f) << "column " << e % cols << " was not chosen";
}

NN_INSTANTIATE_ON_BACKENDS(SampledKernels);

}  // namespace
}  // namespace nn::test
