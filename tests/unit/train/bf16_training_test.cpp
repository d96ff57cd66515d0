// Training in BF16 precision (docs/wide-outputs.md, "BF16 arithmetic"): fully connected layers
// convert each dense input and delta once per step and the optimizer writes the matrices' BF16
// copies with its update (bit for bit the weights rounded, and the losses of fresh conversions);
// the sparse input product stays FP32; and the losses of a BF16
// run differ from FP32's (the arithmetic changed) but stay within 1% of them, with a full and
// with a sampled output layer. Skipped where the CPU refuses BF16 (no AVX512-BF16).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "../backend/backend_test_util.h"
#include "../backend/counting_backend.h"
#include "backend/math/bf16_math.h"
#include "core/error.h"
#include "model/model_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

// Three tastes of items, so the network has something to learn.
std::vector<std::vector<uint32_t>> rows_of(size_t n) {
  std::vector<std::vector<uint32_t>> rows(n);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t t = uint32_t(i % 3) * 10;
    rows[i] = {t + uint32_t(i % 4), t + 4 + uint32_t(i % 5), t + 9};
  }
  return rows;
}

// A sparse input, two dense hidden layers and a wide output: two dense weight matrices
// (H1 -> H2, H2 -> Output) and one sparse (Input -> H1).
const char* kJson = R"({"ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "H1", "Kind": "Hidden", "N": 24, "Activation": "Sigmoid"},
    {"Name": "H2", "Kind": "Hidden", "N": 16, "Activation": "Tanh"},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
     "Activation": "Sigmoid"}]})";

TrainOptions epochs(uint32_t n) {
  TrainOptions o;
  o.epochs = n;
  o.minibatch = 8;
  o.optimizer.kind = OptimizerKind::Adam;
  o.optimizer.alpha = 0.01f;
  o.seed = 5;
  o.progress_seconds = 0;
  return o;
}

std::vector<ExampleSet> data() {
  const auto rows = rows_of(48);
  return {sparse_set("input", 30, rows), sparse_set("output", 30, rows)};
}

// BF16 on `be`, or false (the test then skips) where it is refused.
bool try_bf16(Backend& be, std::string* why) {
  try {
    be.set_precision(Precision::BF16);
    return true;
  } catch (const ConfigError& e) {
    *why = e.what();
    return false;
  }
}

// Per step, for the two dense connections (H1 -> H2, H2 -> Output): the forward pass converts
// each one's input, the backward pass each layer's delta, once; the weight gradient and dE/dx
// reuse those copies. The matrices are converted by the first forward pass only: from then on
// the optimizer writes their copies with its update. (Before, a step converted 10 arrays: both
// matrices, both inputs twice and both deltas twice.)
TEST(Bf16Training, TheOptimizerWritesTheMatrixCopiesAndEachOperandIsConvertedOnce) {
  auto counting = std::make_unique<CountingBackend>();
  CountingBackend* be = counting.get();
  std::string why;
  if (!try_bf16(*be, &why)) GTEST_SKIP() << why;
  Fixture f(kJson, data(), 7, std::move(counting));
  TrainingLoop t(*f.net, f.bound, epochs(2), [](const std::string&) {});
  be->clear();
  t.run();
  const size_t steps = 2 * 48 / 8;
  EXPECT_EQ(be->bf16_conversions, 4 * steps + 2) << "inputs and deltas, plus the first matrices";
  EXPECT_EQ(be->bf16_copies_written, 2 * steps) << "both matrices' copies at every update";
  // x W forward, x^T dz and dz W^T backward, for both dense matrices, all from copies.
  EXPECT_EQ(be->bf16_ab_gemms, 6 * steps);
  EXPECT_EQ(be->bf16_b_gemms, 0u);
  EXPECT_EQ(be->gemms, 0u);
}

// Dense parameters of `net` that have a BF16 copy.
std::vector<Parameter*> with_copies(Network& net) {
  std::vector<Parameter*> out;
  for (Parameter* p : net.parameters())
    if (!p->value_bf16.empty()) out.push_back(p);
  return out;
}

// The copy the optimizer wrote with its last update is the weights rounded, bit for bit; once
// the run is over it is no longer trusted, so weights changed afterwards are converted afresh.
TEST(Bf16Training, TheOptimizersCopiesAreTheUpdatedWeightsAndForgottenWhenTheRunEnds) {
  auto counting = std::make_unique<CountingBackend>();
  CountingBackend* be = counting.get();
  std::string why;
  if (!try_bf16(*be, &why)) GTEST_SKIP() << why;
  Fixture f(kJson, data(), 7, std::move(counting));
  {
    TrainingLoop t(*f.net, f.bound, epochs(3), [](const std::string&) {});
    t.run();
  }
  const std::vector<Parameter*> copies = with_copies(*f.net);
  ASSERT_EQ(copies.size(), 2u) << "the two dense matrices";
  for (Parameter* p : copies) {
    EXPECT_FALSE(p->bf16_written) << p->name;
    const std::vector<float> w = p->value.to_host();
    const std::vector<uint16_t> w16 = p->value_bf16.to_host();
    ASSERT_EQ(w16.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_EQ(w16[i], math::float_to_bf16(w[i])) << p->name << " at " << i;
  }
  // Weights changed between runs: the next run's first forward pass converts them again.
  for (Parameter* p : copies) {
    std::vector<float> w = p->value.to_host();
    for (float& v : w) v = -v;
    p->value.upload(w);
  }
  be->clear();
  TrainingLoop again(*f.net, f.bound, epochs(1), [](const std::string&) {});
  again.run();
  EXPECT_EQ(be->bf16_conversions, 4 * (48 / 8) + 2) << "the first step converts both matrices";
}

// Training with the optimizer's copies gives the losses of the same training with every matrix
// converted afresh by the forward pass, bit for bit. One step per epoch; in the second run an
// epoch callback (which might change the weights) makes the loop forget the copies before
// every step but the first.
TEST(Bf16Training, CopiesWrittenByTheOptimizerGiveTheLossesOfFreshConversions) {
  auto counting_a = std::make_unique<CountingBackend>();
  auto counting_b = std::make_unique<CountingBackend>();
  CountingBackend* be_a = counting_a.get();
  CountingBackend* be_b = counting_b.get();
  std::string why;
  if (!try_bf16(*be_a, &why) || !try_bf16(*be_b, &why)) GTEST_SKIP() << why;
  Fixture a(kJson, data(), 7, std::move(counting_a));
  Fixture b(kJson, data(), 7, std::move(counting_b));
  TrainOptions o = epochs(5);
  o.minibatch = 48;
  TrainingLoop ta(*a.net, a.bound, o, [](const std::string&) {});
  TrainingLoop tb(*b.net, b.bound, o, [](const std::string&) {});
  tb.on_epoch = [](const EpochReport&) {};
  be_a->clear();
  be_b->clear();
  const auto ra = ta.run(), rb = tb.run();
  EXPECT_EQ(be_a->bf16_conversions, 4u * 5 + 2) << "matrices converted by the first step only";
  EXPECT_EQ(be_b->bf16_conversions, 6u * 5) << "matrices converted by every step";
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t e = 0; e < ra.size(); ++e)
    EXPECT_EQ(ra[e].data_loss, rb[e].data_loss) << "epoch " << e + 1;
  for (size_t i = 0; i < with_copies(*a.net).size(); ++i)
    EXPECT_TRUE(bitwise_equal(with_copies(*a.net)[i]->value.to_host(),
                              with_copies(*b.net)[i]->value.to_host()));
}

// FP32's per-epoch losses `ra` and BF16's `rb`: within 1% of each other but not equal (the
// arithmetic changed), and both learned (the last epoch's loss well below the first's).
void expect_close_but_different(const std::vector<EpochReport>& ra,
                                const std::vector<EpochReport>& rb) {
  ASSERT_EQ(ra.size(), rb.size());
  bool differ = false;
  for (size_t e = 0; e < ra.size(); ++e) {
    differ = differ || ra[e].data_loss != rb[e].data_loss;
    EXPECT_NEAR(rb[e].data_loss, ra[e].data_loss, 0.01 * ra[e].data_loss) << "epoch " << e;
  }
  EXPECT_TRUE(differ) << "BF16 products should change the arithmetic";
  EXPECT_LT(rb.back().data_loss, 0.8 * rb.front().data_loss);
}

TEST(Bf16Training, LossesDifferFromFp32ButStayWithinOnePercent) {
  Fixture fp32(kJson, data(), 7);
  Fixture bf16(kJson, data(), 7);
  std::string why;
  if (!try_bf16(*bf16.backend, &why)) GTEST_SKIP() << why;
  TrainingLoop a(*fp32.net, fp32.bound, epochs(6), [](const std::string&) {});
  TrainingLoop b(*bf16.net, bf16.bound, epochs(6), [](const std::string&) {});
  const auto ra = a.run(), rb = b.run();
  expect_close_but_different(ra, rb);
}

// A sampled output layer (train/sampled_output.h) in BF16: its three products (z = h W[:, S],
// the weight gradient, dE/dh) go through the backend's gemm, which rounds both operands in BF16
// mode. The network's only dense products are the sampled layer's (the hidden layer's source is
// sparse, which stays FP32), so a loss that differs from FP32's shows they ran in BF16.
TEST(Bf16Training, SampledOutputLossesDifferFromFp32ButStayWithinOnePercent) {
  const char* json = R"({"ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Tanh"},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
     "Activation": "SoftMax", "Sampling": {"Negatives": 6, "Distribution": "Popularity"}}]})";
  Fixture fp32(json, data(), 7);
  Fixture bf16(json, data(), 7);
  std::string why;
  if (!try_bf16(*bf16.backend, &why)) GTEST_SKIP() << why;
  std::vector<std::string> log;
  TrainingLoop a(*fp32.net, fp32.bound, epochs(6), [](const std::string&) {});
  TrainingLoop b(*bf16.net, bf16.bound, epochs(6), [&](const std::string& l) { log.push_back(l); });
  const auto ra = a.run(), rb = b.run();
  bool sampled = false;
  for (const auto& l : log) sampled = sampled || l.rfind("sampled output:", 0) == 0;
  EXPECT_TRUE(sampled) << "the BF16 run did not sample its output layer";
  expect_close_but_different(ra, rb);
}

}  // namespace
}  // namespace nn::test
