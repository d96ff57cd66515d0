// The CUDA top-K's selection (cuda/top_k.cu: per-row radix select, then a sort of the rows x K
// selected keys) on a GPU: top_k and top_k_filtered against the CPU backend bit for bit on rows
// full of ties and NaN, wide rows that several blocks share, K from 1 to past the width; and the
// scratch memory a 1,000,000-column layer takes (a full sort of the keys needed 16 bytes a column
// and CUB's scratch; the selection needs 16 bytes a selected key). Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/cuda/cuda_test_util.h"

namespace nn {
namespace {

using test::on;

class CudaTopK : public test::CudaVsCpu {
 protected:
  CudaTopK() : CudaVsCpu(71) {}
  std::vector<float> tied(size_t n) {
    const float pool[] = {0.25f, 0.5f,     -0.5f,     0.0f,
                          -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN()};
    std::vector<float> x(n);
    for (float& v : x)
      v = rng_.uniform() < 0.4 ? float(rng_.uniform() * 2 - 1) : pool[rng_.below(8)];
    return x;
  }
};

TEST_F(CudaTopK, SelectionMatchesTheCpuOnTiesWideRowsAndEveryK) {
  struct Case {
    uint32_t rows, cols, valid, k;
  };
  for (Case c : {Case{1, 200000, 200000, 1000}, Case{1, 200000, 199999, 1},
                 Case{256, 3000, 3000, 100}, Case{3, 70000, 69999, 70005}, Case{64, 5000, 5000, 1},
                 Case{5, 4096, 4096, 4095}, Case{2000, 33, 33, 5}}) {
    const std::vector<float> x = tied(size_t(c.rows) * c.cols);
    // Sparse random filters: every 7th column of odd rows excluded, every 11th scaled.
    std::vector<uint32_t> ex_ptr{0}, ex_index, sc_ptr{0}, sc_index;
    std::vector<float> sc_value;
    for (uint32_t r = 0; r < c.rows; ++r) {
      for (uint32_t col = r % 7; r % 2 && col < c.cols; col += 7) ex_index.push_back(col);
      for (uint32_t col = r % 11; col < c.cols; col += 11) {
        sc_index.push_back(col);
        sc_value.push_back(col % 3 ? 0.5f : -1.0f);
      }
      ex_ptr.push_back(uint32_t(ex_index.size()));
      sc_ptr.push_back(uint32_t(sc_index.size()));
    }
    auto gx = on(*gpu_, x);
    auto gep = on(*gpu_, ex_ptr), gei = on(*gpu_, ex_index), gsp = on(*gpu_, sc_ptr),
         gsi = on(*gpu_, sc_index);
    auto gsv = on(*gpu_, sc_value);
    const size_t out = size_t(c.rows) * c.k;
    DeviceArray<float> gv(*gpu_, out);
    DeviceArray<uint32_t> gi(*gpu_, out);
    std::vector<float> cv(out);
    std::vector<uint32_t> ci(out);
    const std::string what =
        std::to_string(c.rows) + "x" + std::to_string(c.cols) + " k " + std::to_string(c.k);
    gpu_->top_k(gx.data(), c.rows, c.cols, c.valid, c.k, gv.data(), gi.data());
    cpu_->top_k(x.data(), c.rows, c.cols, c.valid, c.k, cv.data(), ci.data());
    EXPECT_TRUE(test::bitwise_equal(gv.to_host(), cv)) << what;
    EXPECT_EQ(gi.to_host(), ci) << what;
    TopKFilter cf, gf;
    cf.exclude_ptr = ex_ptr.data();
    cf.exclude_index = ex_index.data();
    cf.scale_ptr = sc_ptr.data();
    cf.scale_index = sc_index.data();
    cf.scale_value = sc_value.data();
    gf.exclude_ptr = gep.data();
    gf.exclude_index = gei.data();
    gf.scale_ptr = gsp.data();
    gf.scale_index = gsi.data();
    gf.scale_value = gsv.data();
    gpu_->top_k_filtered(gx.data(), c.rows, c.cols, c.valid, c.k, gf, gv.data(), gi.data());
    cpu_->top_k_filtered(x.data(), c.rows, c.cols, c.valid, c.k, cf, cv.data(), ci.data());
    EXPECT_TRUE(test::bitwise_equal(gv.to_host(), cv)) << what << " filtered";
    EXPECT_EQ(gi.to_host(), ci) << what << " filtered";
    // Run to run: the same bits (the collect's arrival order must not show).
    DeviceArray<float> gv2(*gpu_, out);
    DeviceArray<uint32_t> gi2(*gpu_, out);
    gpu_->top_k_filtered(gx.data(), c.rows, c.cols, c.valid, c.k, gf, gv2.data(), gi2.data());
    EXPECT_EQ(gi2.to_host(), gi.to_host()) << what;
  }
}

// 1,000,000 outputs x 256 rows, K = 100: the scores take 1 GiB; the full sort took 4 GiB of keys
// and about as much sort scratch more, the selection about 0.7 MB.
TEST_F(CudaTopK, AMillionColumnsNeedScratchForTheSelectedKeysOnly) {
  const uint32_t rows = 256, cols = 1000000, k = 100;
  std::vector<float> x = test::uniform(size_t(rows) * cols, rng_, -1, 1);
  for (size_t i = 0; i < x.size(); i += 3) x[i] = 0.5f;  // ties among the best
  auto gx = on(*gpu_, x);
  DeviceArray<float> gv(*gpu_, size_t(rows) * k);
  DeviceArray<uint32_t> gi(*gpu_, size_t(rows) * k);
  gpu_->synchronize();
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  gpu_->top_k(gx.data(), rows, cols, cols, k, gv.data(), gi.data());
  gpu_->synchronize();
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  // Scratch stays allocated in the backend: the drop in free memory is what top_k took.
  const double taken = double(free_before) - double(free_after);
  EXPECT_LT(taken, 64.0 * (1 << 20)) << "top_k took " << taken / (1 << 20) << " MiB of scratch";
  std::vector<float> cv(size_t(rows) * k);
  std::vector<uint32_t> ci(size_t(rows) * k);
  cpu_->top_k(x.data(), rows, cols, cols, k, cv.data(), ci.data());
  EXPECT_TRUE(test::bitwise_equal(gv.to_host(), cv));
  EXPECT_EQ(gi.to_host(), ci);
}

}  // namespace
}  // namespace nn
