// The CUDA backend's parallel reductions on a GPU against their host emulation
// (backend/reduce_emulation.h, the kernels' own functions over the same index spaces): column
// sums, column norms and sum_doubles bit for bit (adds, fma, sqrt and division round alike on
// both), the sparseness penalty within 1e-13 (log differs by an ulp between the two libraries),
// and the same bits run to run. Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_test_util.h"
#include "backend/math/loss_sums.h"
#include "backend/reduce_emulation.h"

namespace nn {
namespace {

using test::near;
using test::on;

class CudaReduce : public test::CudaVsCpu {
 protected:
  CudaReduce() : CudaVsCpu(61) {}
};

struct Shape {
  uint32_t rows, cols;
};
const Shape kShapes[] = {{1, 1},      {33, 3},    {1000, 1},   {4097, 3},  {2000, 65},
                         {31, 70000}, {200, 129}, {1024, 128}, {3, 300000}};

TEST_F(CudaReduce, ColumnReductionsEqualTheHostEmulationBitForBit) {
  for (const Shape s : kShapes) {
    const std::vector<float> x = test::uniform(size_t(s.rows) * s.cols, rng_, -0.2, 0.2);
    const std::vector<float> out = test::uniform(s.cols, rng_, -1, 1);
    auto gx = on(*gpu_, x), gout = on(*gpu_, out);
    gpu_->column_sums(gx.data(), s.rows, s.cols, 0.25f, 0.5f, gout.data());
    EXPECT_TRUE(test::bitwise_equal(gout.to_host(),
                                    test::emulate_column_sums(x, s.rows, s.cols, 0.25f, 0.5f, out)))
        << s.rows << "x" << s.cols;
    const float max_norm = float(0.1 * std::sqrt(double(s.rows)));
    gpu_->clip_column_norms(gx.data(), s.rows, s.cols, max_norm);
    EXPECT_TRUE(test::bitwise_equal(gx.to_host(),
                                    test::emulate_clip_column_norms(x, s.rows, s.cols, max_norm)))
        << s.rows << "x" << s.cols;
    // Run to run: the same bits (both from `out`: beta 0.5 keeps half of what is there).
    auto gout1 = on(*gpu_, out), gout2 = on(*gpu_, out);
    gpu_->column_sums(gx.data(), s.rows, s.cols, 0.25f, 0.5f, gout1.data());
    gpu_->column_sums(gx.data(), s.rows, s.cols, 0.25f, 0.5f, gout2.data());
    EXPECT_TRUE(test::bitwise_equal(gout1.to_host(), gout2.to_host())) << s.rows << "x" << s.cols;
  }
}

TEST_F(CudaReduce, SparsenessPenaltyMatchesTheHostEmulation) {
  for (const Shape s : kShapes) {
    const std::vector<float> a = test::uniform(size_t(s.rows) * s.cols, rng_, 0.0, 0.4),
                             d = test::uniform(size_t(s.rows) * s.cols, rng_, -1, 1);
    auto ga = on(*gpu_, a), gd = on(*gpu_, d);
    std::vector<float> ed = d;
    const double gv = gpu_->sparseness_penalty(ga.data(), s.rows, s.cols, 0.05f, 0.5f, gd.data());
    const double ev = test::emulate_sparseness_penalty(a, s.rows, s.cols, 0.05f, 0.5f, &ed);
    EXPECT_NEAR(gv, ev, 1e-13 * std::fabs(ev)) << s.rows << "x" << s.cols;
    EXPECT_TRUE(near(gd.to_host(), ed, 1e-7, 1e-7)) << s.rows << "x" << s.cols;
    // CPU within the stated tolerance.
    std::vector<float> cd = d;
    const double cv = cpu_->sparseness_penalty(a.data(), s.rows, s.cols, 0.05f, 0.5f, cd.data());
    EXPECT_NEAR(gv, cv, 1e-9 * (1 + std::fabs(cv))) << s.rows << "x" << s.cols;
    EXPECT_TRUE(near(gd.to_host(), cd, 1e-6, 1e-6)) << s.rows << "x" << s.cols;
  }
}

TEST_F(CudaReduce, SumDoublesEqualsTheHostEmulationBitForBit) {
  auto* cuda = dynamic_cast<CudaBackend*>(gpu_.get());
  ASSERT_NE(cuda, nullptr);
  for (size_t count : {size_t(0), size_t(1), size_t(4096), size_t(4097), size_t(70001),
                       size_t(1) << 20, size_t(3) << 20}) {
    std::vector<double> v(count);
    for (double& x : v) x = 1e3 * (rng_.uniform() - 0.3);
    auto gv = on(*gpu_, v);
    auto gout = on(*gpu_, std::vector<double>{0.0, 2.5});
    cuda->sum_doubles(gv.data(), count, gout.data());
    cuda->add_sum_doubles(gv.data(), count, 0.5, gout.data() + 1);
    const std::vector<double> got = gout.to_host();
    const double want = test::emulate_sum_doubles(v);
    double added = 2.5;
    math::add_scaled(&added, 0.5, want);
    EXPECT_EQ(std::memcmp(&got[0], &want, sizeof want), 0)
        << count << ": " << got[0] << " " << want;
    EXPECT_DOUBLE_EQ(got[1], added) << count;  // add_scaled may contract differently
  }
}

}  // namespace
}  // namespace nn
