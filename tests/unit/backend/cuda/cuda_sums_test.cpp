// CUDA parity of the sums kept in device memory (label `cuda`; they skip without a device): the
// *_accumulate operations add what their value-returning forms return (the same kernels and
// trees, so bit for bit on the GPU, and within rounding of the CPU backend), fold_loss_sums
// matches the CPU's, a data error found by loss_accumulate is thrown by the next read, and
// uploads through the pinned staging ring arrive intact however many are in flight and however
// soon the caller reuses its memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/device_probe.h"
#include "backend/device_array.h"
#include "backend/math/loss_sums.h"
#include "core/error.h"
#include "core/random.h"
#include "cuda_test_util.h"

namespace nn {
namespace {

using test::near;
using test::on;

using test::Csr;

class CudaSums : public test::CudaVsCpu {
 protected:
  CudaSums() : CudaVsCpu(4242) {}
};

TEST_F(CudaSums, LossAccumulateAddsWhatLossAndDeltaReturns) {
  for (Activation act : {Activation::Sigmoid, Activation::SoftMax})
    for (bool sparse : {false, true})
      for (uint32_t cols : {1u, 77u, 3001u}) {
        const uint32_t rows = 9;
        LossParams p;
        p.function = ErrorFunction::CrossEntropy;
        p.activation.kind = act;
        std::vector<float> a = test::uniform(size_t(rows) * cols, rng_, -2, 2);
        cpu_->activate(p.activation, a.data(), rows, cols);
        const Csr sp = test::random_csr(rows, cols, 40, rng_, false, true, true, 3);
        const std::vector<float> dense = test::uniform(size_t(rows) * cols, rng_, 0, 1);
        auto ga = on(*gpu_, a), gdense = on(*gpu_, dense);
        auto grow = on(*gpu_, sp.row_ptr), gindex = on(*gpu_, sp.index);
        auto gweight = on(*gpu_, sp.row_weight);
        TargetView ct, gt;
        ct.sparse = gt.sparse = sparse;
        if (sparse) {
          ct.sp = gt.sp = sp.view();
          gt.sp.row_ptr = grow.data();
          gt.sp.index = gindex.empty() ? nullptr : gindex.data();
          gt.sp.row_weight = gweight.data();
        } else {
          ct.dense = dense.data();
          gt.dense = gdense.data();
        }
        DeviceArray<float> gd(*gpu_, a.size()), gd2(*gpu_, a.size());
        const double ge = gpu_->loss_and_delta(p, ga.data(), gt, rows, cols, gd.data());
        std::vector<float> cd(a.size());
        const double ce = cpu_->loss_and_delta(p, a.data(), ct, rows, cols, cd.data());
        auto sum = on(*gpu_, std::vector<double>{0.5});
        gpu_->loss_accumulate(p, ga.data(), gt, rows, cols, gd2.data(), sum.data());
        gpu_->loss_accumulate(p, ga.data(), gt, rows, cols, nullptr, sum.data());
        const std::string what = std::string(to_string(act)) + (sparse ? "/sparse" : "/dense") +
                                 "/cols " + std::to_string(cols);
        const double got = sum.to_host()[0];
        EXPECT_EQ(got, (0.5 + ge) + ge) << what << " (the same kernel and tree)";
        EXPECT_NEAR(got, (0.5 + ce) + ce, 1e-6 * (1 + std::fabs(got))) << what;
        EXPECT_EQ(gd2.to_host(), gd.to_host()) << what;
      }
}

TEST_F(CudaSums, ReductionsAndPenaltyAccumulate) {
  for (size_t n : {size_t(0), size_t(1), size_t(1000), size_t(1 << 20) + 3}) {
    const std::vector<float> x = test::uniform(n, rng_, -2.0, 2.0);
    auto gx = on(*gpu_, x);
    auto sum = on(*gpu_, std::vector<double>{0.0, 0.0});
    const double scale = 0.5 * 1e-3f;
    gpu_->sum_squares_accumulate(gx.data(), n, scale, sum.data());
    gpu_->sum_abs_accumulate(gx.data(), n, 3e-4f, sum.data() + 1);
    const std::vector<double> got = sum.to_host();
    // Starting from 0, one multiply and one add: exact whether or not they are fused.
    EXPECT_EQ(got[0], scale * gpu_->sum_squares(gx.data(), n)) << n;
    EXPECT_EQ(got[1], double(3e-4f) * gpu_->sum_abs(gx.data(), n)) << n;
    EXPECT_NEAR(got[0], scale * cpu_->sum_squares(x.data(), n), 1e-12 * (1 + got[0])) << n;
  }
  for (uint32_t rows : {1u, 256u})
    for (uint32_t cols : {1u, 3001u}) {
      const std::vector<float> a = test::uniform(size_t(rows) * cols, rng_, 0.0, 0.4);
      auto ga = on(*gpu_, a);
      auto sum = on(*gpu_, std::vector<double>{0.0});
      gpu_->sparseness_penalty_accumulate(ga.data(), rows, cols, 0.05f, 0.5f, nullptr, sum.data());
      const double gv = gpu_->sparseness_penalty(ga.data(), rows, cols, 0.05f, 0.5f, nullptr);
      const double cv = cpu_->sparseness_penalty(a.data(), rows, cols, 0.05f, 0.5f, nullptr);
      EXPECT_EQ(sum.to_host()[0], gv) << rows << "x" << cols;
      EXPECT_NEAR(gv, cv, 1e-9 * (1 + std::fabs(cv))) << rows << "x" << cols;
    }
}

TEST_F(CudaSums, FoldMatchesTheCpuBitForBit) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> s(math::kLossSumCount, 0.0);
  auto g = on(*gpu_, s);
  for (uint64_t batch = 1; batch <= 100; ++batch) {
    double v[2] = {10.0 * rng_.uniform(), batch % 2 ? 0.0 : rng_.uniform()};
    if (batch == 40) v[0] = inf;
    s[math::kLossBatch] = v[0];
    s[math::kLossPenalty] = v[1];
    cpu_->fold_loss_sums(s.data(), batch);
    gpu_->upload(g.data() + math::kLossBatch, v, sizeof v);
    gpu_->fold_loss_sums(g.data(), batch);
  }
  const std::vector<double> got = g.to_host();
  for (size_t i = 0; i < math::kLossSumCount; ++i)
    EXPECT_EQ(std::memcmp(&got[i], &s[i], sizeof(double)), 0) << "slot " << i;
  EXPECT_EQ(got[math::kLossFirstBad], 40.0);
  EXPECT_FALSE(gpu_->host_memory());
}

TEST_F(CudaSums, BadSparseTargetIsThrownByTheRead) {
  Csr t;
  t.cols = 10;
  t.add_row({1, 2});
  t.add_row({3, 12});
  auto grow = on(*gpu_, t.row_ptr), gindex = on(*gpu_, t.index);
  TargetView gt;
  gt.sparse = true;
  gt.sp = t.view();
  gt.sp.row_ptr = grow.data();
  gt.sp.index = gindex.data();
  LossParams p;
  p.activation.kind = Activation::Sigmoid;
  DeviceArray<float> a(*gpu_, 20);
  gpu_->fill(a.data(), 20, 0.5f);
  auto sum = on(*gpu_, std::vector<double>{0.0});
  gpu_->loss_accumulate(p, a.data(), gt, 2, 10, nullptr, sum.data());  // no wait, no throw
  try {
    sum.to_host();
    FAIL() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("row 1: index 12"), std::string::npos) << e.what();
  }
}

// More uploads in flight than staging slots (16), one larger than a slot (4 MiB, so chunked),
// and the source overwritten right after each upload returns.
TEST_F(CudaSums, StagedUploadsArriveIntact) {
  const size_t sizes[] = {1, 3, 1000, 65536, (size_t(4) << 20) / 4 + 77, 5, 300000};
  std::vector<DeviceArray<float>> arrays;
  std::vector<std::vector<float>> want;
  std::vector<float> host;
  for (int round = 0; round < 6; ++round)
    for (size_t n : sizes) {
      host = test::uniform(n, rng_, -1, 1);
      want.push_back(host);
      arrays.emplace_back(*gpu_, n);
      arrays.back().upload(host);
      std::fill(host.begin(), host.end(), -7.0f);  // reused at once
    }
  for (size_t i = 0; i < arrays.size(); ++i) EXPECT_EQ(arrays[i].to_host(), want[i]) << i;
}

}  // namespace
}  // namespace nn
