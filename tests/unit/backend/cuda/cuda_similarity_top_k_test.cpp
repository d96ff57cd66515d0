// CUDA parity tests (CTest label `cuda`) of DotProduct/Cosine pooling and of the filtered top-K:
// both backends on the same inputs, awkward sizes, zero rows, strided outputs, null and aliased
// gradients; exclusions, multipliers, NaN, K larger than the width and rows left with no
// candidate. Top-K must match bit for bit; similarity within rounding of the double row sums.
// Every test skips with a message when no CUDA device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/device_probe.h"
#include "backend/device_array.h"
#include "core/random.h"
#include "cuda_test_util.h"

namespace nn {
namespace {

using test::near;
using test::on;

class CudaParitySimilarityTopK : public test::CudaVsCpu {
 protected:
  CudaParitySimilarityTopK() : CudaVsCpu(77) {}
};

TEST_F(CudaParitySimilarityTopK, DotProductAndCosineForwardAndBackward) {
  for (PoolingFunction f : {PoolingFunction::DotProduct, PoolingFunction::Cosine})
    for (uint32_t rows : {1u, 37u, 256u})
      for (uint32_t cols : {1u, 33u, 1025u}) {
        std::vector<float> a = test::uniform(size_t(rows) * cols, rng_, -1, 1),
                           b = test::uniform(size_t(rows) * cols, rng_, -1, 1);
        for (uint32_t c = 0; c < cols; ++c) a[c] = 0.0f;  // a zero row: Cosine's clamp
        const uint32_t stride = 3;
        std::vector<float> y(size_t(rows) * stride, 2.0f);
        auto ga = on(*gpu_, a), gb = on(*gpu_, b), gy = on(*gpu_, y);
        gpu_->similarity_forward(f, rows, cols, ga.data(), gb.data(), gy.data() + 1, stride);
        cpu_->similarity_forward(f, rows, cols, a.data(), b.data(), y.data() + 1, stride);
        EXPECT_TRUE(near(gy.to_host(), y, 1e-6, 1e-6)) << to_string(f) << rows << "x" << cols;

        const std::vector<float> dy = test::uniform(size_t(rows) * 2, rng_, -1, 1),
                                 d0 = test::uniform(size_t(rows) * cols, rng_, -1, 1),
                                 d1 = test::uniform(size_t(rows) * cols, rng_, -1, 1);
        auto gdy = on(*gpu_, dy);
        for (int mode = 0; mode < 4; ++mode) {  // both, da only, db only, da == db
          std::vector<float> ca = d0, cb = d1;
          auto gda = on(*gpu_, d0), gdb = on(*gpu_, d1);
          float* cpa = mode == 2 ? nullptr : ca.data();
          float* cpb = mode == 1 ? nullptr : (mode == 3 ? ca.data() : cb.data());
          float* gpa = mode == 2 ? nullptr : gda.data();
          float* gpb = mode == 1 ? nullptr : (mode == 3 ? gda.data() : gdb.data());
          gpu_->similarity_backward(f, rows, cols, ga.data(), gb.data(), gdy.data(), 2, gpa, gpb);
          cpu_->similarity_backward(f, rows, cols, a.data(), b.data(), dy.data(), 2, cpa, cpb);
          EXPECT_TRUE(near(gda.to_host(), ca, 1e-6, 1e-5)) << to_string(f) << " mode " << mode;
          EXPECT_TRUE(near(gdb.to_host(), cb, 1e-6, 1e-5)) << to_string(f) << " mode " << mode;
        }
      }
}

TEST_F(CudaParitySimilarityTopK, FilteredTopKMatchesBitForBit) {
  struct Case {
    uint32_t rows, cols, valid, k;
  };
  for (Case c : {Case{3, 10, 10, 15}, Case{64, 27278, 27278, 100}, Case{5, 1000, 600, 7},
                 Case{4, 33, 0, 2}, Case{2, 1, 1, 1}}) {
    std::vector<float> x = test::uniform(size_t(c.rows) * c.cols, rng_, -1, 1);
    for (size_t i = 0; i < x.size(); i += 5) x[i] = 0.25f;  // ties
    for (size_t i = 2; i < x.size(); i += 17) x[i] = std::numeric_limits<float>::quiet_NaN();
    if (x.size() > 3) x[3] = -0.0f;
    // Row 0 excludes every column; the others random sorted lists with duplicates and columns
    // past the width, and multipliers (some 0, one making inf * 0 = NaN).
    std::vector<uint32_t> ex_ptr{0}, ex_index, sc_ptr{0}, sc_index;
    std::vector<float> sc_value;
    for (uint32_t r = 0; r < c.rows; ++r) {
      for (uint32_t col = 0; col < c.cols + 2; ++col) {
        const double u = rng_.uniform();
        if (r == 0 || u < 0.05) ex_index.push_back(col);
        if (u < 0.01) ex_index.push_back(col);
        if (u > 0.96) {
          sc_index.push_back(col);
          sc_value.push_back(u > 0.995 ? 0.0f : float(3.0 * rng_.uniform() - 1.0));
        }
      }
      ex_ptr.push_back(uint32_t(ex_index.size()));
      sc_ptr.push_back(uint32_t(sc_index.size()));
    }
    if (c.rows > 1 && c.cols > 0) x[size_t(c.cols)] = INFINITY;
    auto gx = on(*gpu_, x);
    auto gep = on(*gpu_, ex_ptr), gei = on(*gpu_, ex_index), gsp = on(*gpu_, sc_ptr),
         gsi = on(*gpu_, sc_index);
    auto gsv = on(*gpu_, sc_value);
    for (int parts = 0; parts < 4; ++parts) {  // none, exclusions, multipliers, both
      TopKFilter cf, gf;
      if (parts & 1) {
        cf.exclude_ptr = ex_ptr.data();
        cf.exclude_index = ex_index.data();
        gf.exclude_ptr = gep.data();
        gf.exclude_index = gei.data();
      }
      if (parts & 2) {
        cf.scale_ptr = sc_ptr.data();
        cf.scale_index = sc_index.data();
        cf.scale_value = sc_value.data();
        gf.scale_ptr = gsp.data();
        gf.scale_index = gsi.data();
        gf.scale_value = gsv.data();
      }
      DeviceArray<float> gv(*gpu_, size_t(c.rows) * c.k);
      DeviceArray<uint32_t> gi(*gpu_, size_t(c.rows) * c.k);
      std::vector<float> cv(size_t(c.rows) * c.k);
      std::vector<uint32_t> ci(size_t(c.rows) * c.k);
      gpu_->top_k_filtered(gx.data(), c.rows, c.cols, c.valid, c.k, gf, gv.data(), gi.data());
      cpu_->top_k_filtered(x.data(), c.rows, c.cols, c.valid, c.k, cf, cv.data(), ci.data());
      EXPECT_TRUE(test::bitwise_equal(gv.to_host(), cv))
          << c.rows << "x" << c.cols << " k " << c.k << " parts " << parts;
      EXPECT_EQ(gi.to_host(), ci) << c.rows << "x" << c.cols << " k " << c.k << " parts " << parts;
    }
  }
}

}  // namespace
}  // namespace nn
