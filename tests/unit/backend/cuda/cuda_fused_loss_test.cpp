// CUDA parity of the fused activation + loss (Backend::activate_loss_accumulate; label `cuda`,
// skips without a device): for every activation x error function pair the loss kernels support,
// dense, Boolean, weighted analog (with duplicated indices) and SparseIgnoreZero targets, an
// empty row, and widths below, at and above the block (1, 77, 256, 3001), the fused kernel gives
// on the GPU what activate followed by loss_accumulate gives there (the activations, the deltas
// and the sum bit for bit: the same per-unit functions, the stored activations made opaque to
// contraction by math::as_stored) and what the CPU backend's composition gives (within the loss
// tests' tolerances).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_test_util.h"
#include "backend/device_array.h"
#include "core/random.h"
#include "cuda_test_util.h"

namespace nn {
namespace {

using test::Csr;
using test::near;
using test::on;
using test::Targets;

class CudaFusedLoss : public test::CudaVsCpu {
 protected:
  CudaFusedLoss() : CudaVsCpu(1010) {}
};

TEST_F(CudaFusedLoss, MatchesActivateThenLossAccumulate) {
  const auto& functions = test::kAllErrorFunctions;
  const auto& acts = test::kAllActivations;
  const uint32_t rows = 6;
  for (uint32_t cols : {1u, 77u, 256u, 3001u})
    for (ErrorFunction f : functions)
      for (Activation act : acts)
        for (Targets kind : test::kAllTargets) {
          LossParams p;
          p.function = f;
          p.activation.kind = act;
          p.activation.slope = 0.2f;
          p.activation.alpha = 0.7f;
          p.activation.max_value = 2.0f;
          p.delta_boost_one = 1.5f;
          p.delta_boost_zero = 0.5f;
          const std::vector<float> z = test::uniform(size_t(rows) * cols, rng_, -3.0, 3.0);
          const test::RandomTargets targets(rows, cols, kind, 30, rng_);
          const TargetView& t = targets.view();
          const bool sparse = t.sparse;
          const Csr& sp = targets.csr();
          const test::DeviceTargets gt(*gpu_, t, rows, cols);
          const std::string what = std::string(to_string(f)) + " / " + to_string(act) +
                                   " / targets " + std::to_string(int(kind)) + " / cols " +
                                   std::to_string(cols);

          // Fused on the GPU.
          auto fz = on(*gpu_, z);
          DeviceArray<float> fd(*gpu_, z.size());
          auto fsum = on(*gpu_, std::vector<double>{0.5});
          gpu_->activate_loss_accumulate(p.activation, p, fz.data(), gt.view(), rows, cols,
                                         fd.data(), fsum.data());
          // Unfused on the GPU.
          auto uz = on(*gpu_, z);
          DeviceArray<float> ud(*gpu_, z.size());
          auto usum = on(*gpu_, std::vector<double>{0.5});
          gpu_->activate(p.activation, uz.data(), rows, cols);
          gpu_->loss_accumulate(p, uz.data(), gt.view(), rows, cols, ud.data(), usum.data());
          // The CPU's composition.
          std::vector<float> ca = z, cd(z.size());
          double csum = 0.5;
          cpu_->activate_loss_accumulate(p.activation, p, ca.data(), t, rows, cols, cd.data(),
                                         &csum);

          const std::vector<float> fa = fz.to_host(), fdelta = fd.to_host();
          EXPECT_TRUE(test::bitwise_equal(fa, uz.to_host())) << what << ": activations";
          EXPECT_TRUE(test::bitwise_equal(fdelta, ud.to_host())) << what << ": deltas";
          const double got = fsum.to_host()[0];
          EXPECT_EQ(got, usum.to_host()[0]) << what << ": sum";
          EXPECT_TRUE(near(fa, ca, 1e-6, 1e-5)) << what << ": activations vs CPU";
          // The deltas against the CPU's on the GPU's activations: some pairs' deltas are
          // ill-conditioned in the activation (CrossEntropy over SoftPlus divides by a (1 - a),
          // near 0 where a is near 1), so activations a last bit apart can give deltas 1e-3
          // apart; the activations themselves were compared just above.
          std::vector<float> cd_on_fa(z.size());
          cpu_->loss_and_delta(p, fa.data(), t, rows, cols, cd_on_fa.data());
          EXPECT_TRUE(near(fdelta, cd_on_fa, 1e-5, 1e-4)) << what << ": deltas vs CPU";
          EXPECT_NEAR(got, csum, 1e-5 * (1.0 + std::fabs(csum))) << what << ": sum vs CPU";
        }
}

TEST_F(CudaFusedLoss, NoRowsChangeNothingAndWithoutDeltasOnlyTheSumMoves) {
  const uint32_t rows = 5, cols = 300;
  LossParams p;
  p.function = ErrorFunction::CrossEntropy;
  p.activation.kind = Activation::SoftMax;
  const std::vector<float> z = test::uniform(size_t(rows) * cols, rng_, -3.0, 3.0);
  const Csr sp = test::random_csr(rows, cols, 20, rng_, false, false, true, 1);
  TargetView t;
  t.sparse = true;
  t.sp = sp.view();
  const test::DeviceTargets gt(*gpu_, t, rows, cols);
  auto gz = on(*gpu_, z);
  auto sum = on(*gpu_, std::vector<double>{2.0});
  gpu_->activate_loss_accumulate(p.activation, p, gz.data(), gt.view(), 0, cols, nullptr,
                                 sum.data());
  EXPECT_TRUE(test::bitwise_equal(gz.to_host(), z));
  EXPECT_EQ(sum.to_host()[0], 2.0);
  gpu_->activate_loss_accumulate(p.activation, p, gz.data(), gt.view(), rows, cols, nullptr,
                                 sum.data());
  std::vector<float> ca = z;
  double csum = 2.0;
  cpu_->activate_loss_accumulate(p.activation, p, ca.data(), t, rows, cols, nullptr, &csum);
  EXPECT_TRUE(near(gz.to_host(), ca, 1e-6, 1e-5));
  EXPECT_NEAR(sum.to_host()[0], csum, 1e-5 * (1.0 + std::fabs(csum)));
}

}  // namespace
}  // namespace nn
