// The multi-tensor optimizer step (Backend::optimizer_step_multi) on every backend: each tensor
// ends as optimizer_step alone leaves it, bit for bit (the CUDA backend's one kernel over a table
// of chunks against its own one-tensor kernel), with and without L2/L1 decay per tensor, tensors
// crossing chunk boundaries, an empty tensor, and a second call on other tensors (the cached table
// rebuilt) and on the same ones again (reused).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/random.h"
#include "optimizer_test_util.h"

namespace nn {
namespace {

using test::kAllOptimizers;
using test::random_values;

// One parameter: values, gradient and two state arrays in the backend's memory.
struct Tensor {
  DeviceArray<float> w, g, s0, s1;
  bool regularize;
  Tensor(Backend& be, size_t n, uint64_t seed, bool reg)
      : w(test::to_device(be, random_values(seed, n, -1.0f, 1.0f))),
        g(test::to_device(be, random_values(seed + 1, n, -0.3f, 0.3f))),
        s0(test::to_device(be, random_values(seed + 2, n, 0.0f, 0.5f))),
        s1(test::to_device(be, random_values(seed + 3, n, 0.0f, 0.5f))),
        regularize(reg) {}
  OptimizerTensor view() {
    OptimizerTensor t;
    t.w = w.data();
    t.g = g.data();
    t.state0 = s0.data();
    t.state1 = s1.data();
    t.n = w.size();
    t.regularize = regularize;
    return t;
  }
};

class OptimizerMulti : public test::BackendTest {};

TEST_P(OptimizerMulti, EveryTensorEndsAsItsOwnStepLeavesIt) {
  auto be = backend(2);
  // 8,192 floats is the CUDA kernel's chunk: sizes on, across and far from its boundaries.
  const std::vector<size_t> sizes = {1, 8192, 8193, 20001, 0, 300};
  for (const OptimizerKind kind : kAllOptimizers) {
    SCOPED_TRACE(to_string(kind));
    OptimizerParams p;
    p.kind = kind;
    p.alpha = 0.05f;
    p.lambda = 0.01f;
    p.lambda1 = 0.002f;
    p.step = 4;
    std::vector<Tensor> one, multi;
    for (size_t i = 0; i < sizes.size(); ++i) {
      one.emplace_back(*be, sizes[i], 10 * i + 1, i % 2 == 0);
      multi.emplace_back(*be, sizes[i], 10 * i + 1, i % 2 == 0);
    }
    auto step_alone = [&](Tensor& t) {
      OptimizerParams q = p;
      if (!t.regularize) q.lambda = q.lambda1 = 0.0f;
      be->optimizer_step(q, t.w.data(), t.g.data(), t.s0.data(), t.s1.data(), t.w.size());
    };
    // Two steps each way: the second multi-tensor call reuses the first's table.
    for (int step = 0; step < 2; ++step) {
      for (Tensor& t : one) step_alone(t);
      std::vector<OptimizerTensor> views;
      for (Tensor& t : multi) views.push_back(t.view());
      be->optimizer_step_multi(p, views.data(), views.size());
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      SCOPED_TRACE("tensor " + std::to_string(i) + " of " + std::to_string(sizes[i]));
      EXPECT_EQ(multi[i].w.to_host(), one[i].w.to_host());
      EXPECT_EQ(multi[i].s0.to_host(), one[i].s0.to_host());
      EXPECT_EQ(multi[i].s1.to_host(), one[i].s1.to_host());
    }
    // Other tensors (a subset, in another order): the table is rebuilt for them.
    std::vector<OptimizerTensor> subset = {multi[3].view(), multi[1].view()};
    be->optimizer_step_multi(p, subset.data(), subset.size());
    step_alone(one[3]);
    step_alone(one[1]);
    EXPECT_EQ(multi[3].w.to_host(), one[3].w.to_host());
    EXPECT_EQ(multi[1].w.to_host(), one[1].w.to_host());
    EXPECT_EQ(multi[0].w.to_host(), one[0].w.to_host());  // not in the subset: untouched
  }
}

TEST_P(OptimizerMulti, NoTensorsIsNothingToDo) {
  auto be = backend(1);
  OptimizerParams p;
  p.kind = OptimizerKind::Adam;
  be->optimizer_step_multi(p, nullptr, 0);
  be->synchronize();
}

NN_INSTANTIATE_ON_BACKENDS(OptimizerMulti);

}  // namespace
}  // namespace nn
