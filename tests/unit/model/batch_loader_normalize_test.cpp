// BatchLoader and the Input key "Normalize": L2 normalisation of every input row as the batch is
// assembled, before denoising (so a denoised row is the normalised row with entries dropped and
// the survivors scaled by 1/(1-p), as in Mult-DAE and Mult-VAE), and never on targets.
#include <gtest/gtest.h>

#include <cmath>

#include "data/data_test_util.h"
#include "model/batch_loader.h"

namespace nn {
namespace {

using test::make_sparse;

TEST(BatchLoaderNormalize, InputRowsHaveLengthOneBeforeDenoising) {
  std::vector<std::vector<uint32_t>> rows;
  for (uint32_t r = 0; r < 4; ++r) {
    rows.emplace_back();
    for (uint32_t k = 0; k <= 4 * r + 3; ++k) rows.back().push_back(k);
  }
  const ExampleSet in = make_sparse("in", 32, rows), out = make_sparse("out", 32, rows);
  BoundData data;
  data.examples = 4;
  data.inputs.push_back({"In", &in, RowNormalization::L2});
  data.outputs.push_back({"Out", &out, RowNormalization::None});
  const uint32_t ids[] = {0, 1, 2, 3};

  HostBatch plain;
  BatchLoader(data, {DenoiseSetting{}}, 7).assemble(ids, 4, 1, true, plain);
  for (uint32_t r = 0; r < 4; ++r) {
    const SparseBatch& b = plain.sparse[0];
    const uint32_t n = b.row_ptr[r + 1] - b.row_ptr[r];
    EXPECT_EQ(n, 4 * r + 4);
    for (uint32_t e = b.row_ptr[r]; e < b.row_ptr[r + 1]; ++e)
      EXPECT_FLOAT_EQ(b.value[e], 1.0f / std::sqrt(float(n)));
  }
  EXPECT_TRUE(plain.sparse[1].value.empty()) << "targets are not normalised";

  HostBatch denoised;
  BatchLoader(data, {DenoiseSetting{0.5f, 0}}, 7).assemble(ids, 4, 1, true, denoised);
  const SparseBatch& d = denoised.sparse[0];
  EXPECT_LT(d.nnz(), plain.sparse[0].nnz());
  for (uint32_t r = 0; r < 4; ++r)
    for (uint32_t e = d.row_ptr[r]; e < d.row_ptr[r + 1]; ++e)  // normalised over all, then x2
      EXPECT_FLOAT_EQ(d.value[e], 2.0f / std::sqrt(float(4 * r + 4)));
  // Prediction and validation batches (training false) are normalised and not denoised.
  HostBatch scoring;
  BatchLoader(data, {DenoiseSetting{0.5f, 0}}, 7).assemble(ids, 4, 1, false, scoring);
  EXPECT_EQ(scoring.sparse[0].value, plain.sparse[0].value);
}

TEST(BatchLoaderNormalize, DenseInputRows) {
  ExampleSet in = test::make_dense("in", DataType::Float, 2, 2, {3, 4, 0, 0});
  BoundData data;
  data.examples = 2;
  data.inputs.push_back({"In", &in, RowNormalization::L2});
  const uint32_t ids[] = {0, 1};
  HostBatch hb;
  BatchLoader(data, {DenoiseSetting{}}, 1).assemble(ids, 2, 1, false, hb);
  EXPECT_EQ(hb.dense[0], (std::vector<float>{0.6f, 0.8f, 0.0f, 0.0f}));
}

}  // namespace
}  // namespace nn
