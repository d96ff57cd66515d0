// Sums kept in backend memory (the *_accumulate operations and fold_loss_sums, backend.h): on the
// CPU backend each adds exactly what its double-returning form returns, in one addition, so a
// training loop that reads its sums once per epoch reports the bits it reported when it added
// the returned values itself (CUDA: cuda/cuda_sums_test.cpp); the fold on every backend; and
// DeviceArray's growth with spare capacity.
#include "backend/math/loss_sums.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/random.h"
#include "counting_backend.h"

namespace nn {
namespace {

using namespace math;

class LossSums : public ::testing::Test {
 protected:
  CpuBackend be_{2};
  Rng rng_{77};
};

TEST_F(LossSums, LossAccumulateAddsWhatLossAndDeltaReturns) {
  const uint32_t rows = 13, cols = 301;
  for (ErrorFunction f :
       {ErrorFunction::CrossEntropy, ErrorFunction::L2, ErrorFunction::ScaledMarginalCrossEntropy})
    for (Activation act : {Activation::Sigmoid, Activation::SoftMax, Activation::Linear})
      for (bool sparse : {false, true}) {
        LossParams p;
        p.function = f;
        p.activation.kind = act;
        std::vector<float> a = test::uniform(size_t(rows) * cols, rng_, -2, 2);
        be_.activate(p.activation, a.data(), rows, cols);
        const test::Csr sp = test::random_csr(rows, cols, 30, rng_, false, true, true, 4);
        const std::vector<float> dense = test::uniform(size_t(rows) * cols, rng_, 0, 1);
        TargetView t;
        t.sparse = sparse;
        if (sparse)
          t.sp = sp.view();
        else
          t.dense = dense.data();
        std::vector<float> want_delta(a.size()), got_delta(a.size());
        const double e1 = be_.loss_and_delta(p, a.data(), t, rows, cols, want_delta.data());
        const double e2 = be_.loss(p, a.data(), t, rows, cols);
        // Two calls into one sum: ((0 + e1) + e2), the host's order.
        DeviceArray<double> sum(be_, 1);
        sum.upload(std::vector<double>{0.0});
        be_.loss_accumulate(p, a.data(), t, rows, cols, got_delta.data(), sum.data());
        be_.loss_accumulate(p, a.data(), t, rows, cols, nullptr, sum.data());
        EXPECT_EQ(sum.to_host()[0], (0.0 + e1) + e2) << to_string(f) << "/" << to_string(act);
        EXPECT_EQ(got_delta, want_delta) << to_string(f) << "/" << to_string(act);
      }
}

TEST_F(LossSums, ReductionsAndPenaltyAccumulateTheirScaledValues) {
  const uint32_t rows = 37, cols = 129;
  const std::vector<float> x = test::uniform(size_t(rows) * cols, rng_, -1, 1),
                           a = test::uniform(size_t(rows) * cols, rng_, 0.0, 0.4);
  const float lambda = 1e-3f, lambda1 = 3e-4f;
  double sums[3] = {0.5, 0.25, 0.0};
  be_.sum_squares_accumulate(x.data(), x.size(), 0.5 * lambda, &sums[0]);
  be_.sum_abs_accumulate(x.data(), x.size(), lambda1, &sums[0]);
  // (4 ulps: either side's multiply-add may be contracted into an FMA by the compiler.)
  EXPECT_DOUBLE_EQ(sums[0], 0.5 + 0.5 * lambda * be_.sum_squares(x.data(), x.size()) +
                                lambda1 * be_.sum_abs(x.data(), x.size()));
  std::vector<float> want_delta(a.size(), 0.1f), got_delta = want_delta;
  const double penalty =
      be_.sparseness_penalty(a.data(), rows, cols, 0.05f, 0.5f, want_delta.data());
  be_.sparseness_penalty_accumulate(a.data(), rows, cols, 0.05f, 0.5f, got_delta.data(), &sums[1]);
  EXPECT_EQ(sums[1], 0.25 + penalty);
  EXPECT_EQ(got_delta, want_delta);
  // Empty inputs and beta 0 add nothing.
  be_.sum_squares_accumulate(x.data(), 0, 2.0, &sums[2]);
  be_.sparseness_penalty_accumulate(a.data(), rows, cols, 0.05f, 0.0f, nullptr, &sums[2]);
  EXPECT_EQ(sums[2], 0.0);
}

// fold_loss_sums on every backend, the sums in its memory, against the rule of backend.h
// written out here: data + penalty joins the total, the first non-finite batch is remembered.
class LossSumsFold : public test::BackendTest {};

TEST_P(LossSumsFold, KeepsTheTotalAndTheFirstBadBatch) {
  const double inf = std::numeric_limits<double>::infinity();
  auto be = backend(1);
  DeviceArray<double> sums(*be, kLossSumCount);
  std::vector<double> s(kLossSumCount, 0.0);
  // One fold of the host values s at batch `batch`, through the backend's memory.
  auto fold = [&](uint64_t batch) {
    sums.upload(s);
    be->fold_loss_sums(sums.data(), batch);
    s = sums.to_host();
  };
  s[kLossBatch] = 3.0;
  s[kLossPenalty] = 0.5;
  s[kLossTotal] = 1.0;
  fold(1);
  EXPECT_EQ(s[kLossTotal], 4.5);
  EXPECT_EQ(s[kLossBatch], 0.0);
  EXPECT_EQ(s[kLossPenalty], 0.0);
  EXPECT_EQ(s[kLossFirstBad], 0.0);
  s[kLossBatch] = inf;
  fold(2);
  EXPECT_EQ(s[kLossFirstBad], 2.0);
  EXPECT_EQ(s[kLossBadValue], inf);
  s[kLossBatch] = std::nan("");
  fold(3);
  EXPECT_EQ(s[kLossFirstBad], 2.0) << "the first bad batch is kept";
  EXPECT_EQ(s[kLossBadValue], inf);
  s.assign(kLossSumCount, 0.0);
  s[kLossPenalty] = std::nan("");
  fold(7);
  EXPECT_EQ(s[kLossFirstBad], 7.0);
  EXPECT_TRUE(std::isnan(s[kLossBadValue]));
  EXPECT_EQ(be->host_memory(), on_cpu());
}

NN_INSTANTIATE_ON_BACKENDS(LossSumsFold);

// A batch buffer sized by each batch's non-zeros: with spare capacity a slowly growing sequence
// reallocates a handful of times, not at every new maximum.
TEST(DeviceArrayGrowth, GrowingSizesReallocateRarely) {
  test::CountingBackend be;
  DeviceArray<uint32_t> a;
  size_t n = 1000;
  for (int batch = 0; batch < 100; ++batch) {
    a.resize(be, n);
    EXPECT_EQ(a.size(), n);
    EXPECT_GE(a.capacity(), n);
    n += 7;  // every batch a new maximum
  }
  EXPECT_LE(be.allocations, 3u) << "1000 -> 1693 elements should take ~log1.5(1.7) + 1 allocations";
  // Shrinking and growing back within the capacity never reallocates.
  const size_t before = be.allocations;
  a.resize(be, 10);
  a.resize(be, a.capacity());
  EXPECT_EQ(be.allocations, before);
}

TEST(DeviceArrayGrowth, FirstAllocationAndBorrowedViewsAreExact) {
  test::CountingBackend be;
  DeviceArray<float> w(be, 1000);
  EXPECT_EQ(w.capacity(), 1000u) << "fixed-size arrays (weights) carry no spare";
  DeviceArray<float> view;
  view.borrow(w);
  EXPECT_TRUE(view.borrowed());
  EXPECT_EQ(view.capacity(), 1000u);
  view.resize(be, 1200);  // beyond the view: memory of its own, exactly as asked
  EXPECT_FALSE(view.borrowed());
  EXPECT_EQ(view.capacity(), 1200u);
  EXPECT_EQ(w.size(), 1000u);
}

}  // namespace
}  // namespace nn
