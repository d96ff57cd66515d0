// Finite-difference gradient checks through whole networks (train/gradient_check.h): every
// parameter gradient that backward() produces must match central differences of the batch-mean
// loss, for each hidden activation, each output activation/error function pairing, dense and
// sparse inputs and targets, multiple sources and skip connections. Also checks the checker:
// it must flag a wrong gradient, sample large arrays sensibly, and reproduce DSSTNE's Validate.
#include "train/gradient_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/error.h"
#include "model/batch_loader.h"
#include "model/model_test_util.h"
#include "train/step.h"

namespace nn::test {
namespace {

struct Case {
  std::string name;
  std::string hidden_activation;
  std::string output_activation;
  std::string error_function;
  bool sparse_input;
  bool sparse_target;
  std::string extra_layers_json = "";  // replaces the default hidden layer list when set
};

std::string network_json(const Case& c) {
  std::string hidden = c.extra_layers_json.empty()
                           ? R"({"Name": "H1", "Kind": "Hidden", "N": 5, "Activation": ")" +
                                 c.hidden_activation +
                                 R"("}, {"Name": "H2", "Kind": "Hidden", "N": 4, "Activation": ")" +
                                 c.hidden_activation + R"("},)"
                           : c.extra_layers_json;
  return R"({"Name": "gc", "ErrorFunction": ")" + c.error_function +
         R"(", "ScaledMarginalCrossEntropy": {"oneTarget": 0.8, "zeroTarget": 0.3,
           "oneScale": 2.0, "zeroScale": 0.5},
         "Layers": [
           {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"}, )" +
         hidden +
         R"({"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": ")" +
         c.output_activation + R"("}]})";
}

void check_gradients(const Case& c) {
  SCOPED_TRACE(c.name);
  const uint32_t in_w = 7, out_w = 6, n = 5;
  auto in_rows = random_rows(11, n, in_w, 3);
  std::vector<std::vector<float>> in_vals(n, std::vector<float>{0.5f, -1.0f, 2.0f});
  ExampleSet in = sparse_set("in", in_w, in_rows, in_vals);
  if (!c.sparse_input) in = densify(in);
  auto out_rows = random_rows(12, n, out_w, 2);
  ExampleSet out = sparse_set("out", out_w, out_rows);
  if (!c.sparse_target) out = densify(out);
  Fixture f(network_json(c), {in, out}, 3);
  const HostBatch hb = first_batch(f.bound, n);
  ASSERT_EQ(hb.rows, n);

  // Central differences of the batch-mean loss, every entry, |error| <= 2e-3 + 2e-2 |numeric|.
  GradientChecker checker(*f.net, f.bound, hb);
  const GradientCheckReport report = checker.run();
  size_t checked = 0;
  for (const auto& p : report.parameters) {
    EXPECT_TRUE(p.passed()) << describe(p);
    EXPECT_EQ(p.checked, p.size) << p.name;
    checked += p.checked;
  }
  EXPECT_EQ(report.parameters.size(), f.net->parameters().size());
  EXPECT_GT(checked, 50u);
}

TEST(GradientCheck, SigmoidHiddenCrossEntropySigmoidOutputSparse) {
  check_gradients({"ce-sigmoid", "Sigmoid", "Sigmoid", "CrossEntropy", true, true});
}
TEST(GradientCheck, TanhHiddenCrossEntropySoftMaxSparseTargets) {
  check_gradients({"ce-softmax", "Tanh", "SoftMax", "CrossEntropy", true, true});
}
TEST(GradientCheck, ReluHiddenL2LinearDense) {
  check_gradients({"l2-linear", "RectifiedLinear", "Linear", "L2", false, false});
}
TEST(GradientCheck, LinearHiddenL2SigmoidSparseTargets) {
  check_gradients({"l2-sigmoid", "Linear", "Sigmoid", "L2", false, true});
}
TEST(GradientCheck, SigmoidHiddenScaledMarginalCrossEntropy) {
  check_gradients({"smce", "Sigmoid", "Sigmoid", "ScaledMarginalCrossEntropy", true, true});
}
TEST(GradientCheck, SoftMaxHiddenLayer) {
  check_gradients({"softmax-hidden", "SoftMax", "Sigmoid", "CrossEntropy", false, true});
}
TEST(GradientCheck, TwoSourcesAndSkip) {
  Case c{"multi-source",
         "",
         "Sigmoid",
         "CrossEntropy",
         true,
         true,
         R"({"Name": "A", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
            {"Name": "B", "Kind": "Hidden", "N": 4, "Activation": "Sigmoid", "Source": "In"},
            {"Name": "C", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": ["A", "B"],
             "Skip": "A"},)"};
  // The output layer's default source is the previous layer (C).
  check_gradients(c);
}

// ---- the checker itself ----------------------------------------------------------------------

Fixture l2_fixture(uint32_t in_w, uint32_t hidden, uint32_t n) {
  ExampleSet in = densify(sparse_set("in", in_w, random_rows(21, n, in_w, 2),
                                     std::vector<std::vector<float>>(n, {1.5f, -0.5f})));
  ExampleSet out = densify(sparse_set("out", 3, random_rows(22, n, 3, 1)));
  return Fixture(R"({"Name": "l2", "ErrorFunction": "L2", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "H", "Kind": "Hidden", "N": )" +
                     std::to_string(hidden) +
                     R"(, "Activation": "Tanh"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Linear"}]})",
                 {in, out}, 5);
}

TEST(GradientChecker, FlagsAWrongGradientEntry) {
  Fixture f = l2_fixture(4, 3, 6);
  const HostBatch hb = first_batch(f.bound, 6);
  GradientChecker checker(*f.net, f.bound, hb);
  const double loss = checker.compute_analytic();
  EXPECT_NEAR(loss, checker.loss(), 1e-6 * std::max(1.0, loss));
  Parameter& w = *f.net->parameters()[0];
  std::vector<float> grad = w.grad.to_host();
  const std::vector<float> before = w.value.to_host();

  const ParameterCheck good = checker.check(w, grad);
  EXPECT_TRUE(good.passed()) << describe(good);
  EXPECT_EQ(good.checked, w.size());

  grad[5] += 0.25f;
  const ParameterCheck bad = checker.check(w, grad);
  EXPECT_FALSE(bad.passed());
  EXPECT_EQ(bad.failures, 1u);
  EXPECT_EQ(bad.worst.index, 5u);
  EXPECT_NEAR(bad.worst.analytic - bad.worst.numeric, 0.25, 0.01);
  EXPECT_GE(bad.max_error, 0.24);
  const std::string line = describe(bad);
  EXPECT_EQ(line.rfind("FAIL " + w.name + ":", 0), 0u) << line;
  EXPECT_NE(line.find("[5]"), std::string::npos) << line;
  // Every perturbed entry was restored.
  EXPECT_EQ(w.value.to_host(), before);
}

TEST(GradientChecker, SampledArraysAlwaysIncludeTheLargestGradients) {
  Fixture f = l2_fixture(10, 8, 4);
  const HostBatch hb = first_batch(f.bound, 4);
  GradientCheckOptions opt;
  opt.max_entries = 6;
  GradientChecker checker(*f.net, f.bound, hb, opt);
  checker.compute_analytic();
  Parameter& w = *f.net->parameters()[0];  // H<-In weights: 80 entries
  ASSERT_GT(w.size(), 6u);
  std::vector<float> grad = w.grad.to_host();
  const ParameterCheck sampled = checker.check(w, grad);
  EXPECT_EQ(sampled.checked, 6u);
  EXPECT_EQ(sampled.size, w.size());
  EXPECT_TRUE(sampled.passed()) << describe(sampled);

  // Exaggerating one entry makes it the largest gradient, which a sample must include.
  size_t largest = 0;
  for (size_t i = 0; i < grad.size(); ++i)
    if (std::fabs(grad[i]) > std::fabs(grad[largest])) largest = i;
  grad[largest] *= 3.0f;
  grad[largest] += grad[largest] > 0 ? 0.1f : -0.1f;
  const ParameterCheck caught = checker.check(w, grad);
  EXPECT_EQ(caught.failures, 1u);
  EXPECT_EQ(caught.worst.index, largest);
}

// A recommender's loss: 6000 sigmoid outputs per example summed, about 4000 per example at
// initialisation. Its float32 rounding over a fixed step of 1e-3 reaches the fixed tolerance
// (the man page's example once failed a correct network that way); the measured noise sets the
// steps and the tolerance, so the correct gradients pass, and a wrong hidden bias is still
// flagged.
Fixture wide_recommender(uint32_t outputs, uint32_t hidden, uint32_t n) {
  const auto rows = random_rows(31, n, outputs, 40);
  return Fixture(R"({"Name": "wide", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in", "Sparse": true},
      {"Name": "H", "Kind": "Hidden", "N": )" +
                     std::to_string(hidden) + R"(, "Activation": "Sigmoid"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"}]})",
                 {sparse_set("in", outputs, rows), sparse_set("out", outputs, rows)}, 9);
}

TEST(GradientChecker, ALargeLossPassesCorrectGradientsAndFlagsAWrongOne) {
  Fixture f = wide_recommender(6000, 24, 16);
  const HostBatch hb = first_batch(f.bound, 16);
  GradientChecker checker(*f.net, f.bound, hb);
  const double loss = checker.compute_analytic();
  EXPECT_GT(loss, 2000.0);
  Parameter& bias = *f.net->parameters()[1];  // H<-In:bias: every output moves with it
  ASSERT_EQ(bias.size(), 24u);
  std::vector<float> grad = bias.grad.to_host();
  const ParameterCheck good = checker.check(bias, grad);
  EXPECT_TRUE(good.passed()) << describe(good);
  EXPECT_GT(good.loss_noise, 0.0) << describe(good);
  EXPECT_EQ(good.checked, 24u);

  size_t largest = 0;
  for (size_t i = 0; i < grad.size(); ++i)
    if (std::fabs(grad[i]) > std::fabs(grad[largest])) largest = i;
  grad[largest] *= 1.5f;  // half as much again: a wrong factor in backward()
  const ParameterCheck bad = checker.check(bias, grad);
  EXPECT_EQ(bad.failures, 1u) << describe(bad);
  EXPECT_EQ(bad.worst.index, largest);
}

// ReLU kinks: with a step large enough to cross them, central differences mix two slopes; the
// entries whose gradient is one side's slope pass (counted), a wrong one still fails.
TEST(GradientChecker, KinksPassOnOneSideAndWrongGradientsStillFail) {
  ExampleSet in = densify(sparse_set("in", 6, random_rows(41, 12, 6, 3),
                                     std::vector<std::vector<float>>(12, {1.0f, -0.7f, 0.4f})));
  ExampleSet out = densify(sparse_set("out", 4, random_rows(42, 12, 4, 1)));
  Fixture f(R"({"Name": "relu", "ErrorFunction": "L2", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "H", "Kind": "Hidden", "N": 16, "Activation": "Relu"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Linear"}]})",
            {in, out}, 13);
  const HostBatch hb = first_batch(f.bound, 12);
  GradientCheckOptions opt;
  opt.epsilon = 0.05;  // wide enough to cross many rows' kinks
  GradientChecker checker(*f.net, f.bound, hb, opt);
  checker.compute_analytic();
  size_t kinks = 0;
  for (Parameter* p : f.net->parameters()) {
    std::vector<float> grad = p->grad.to_host();
    const ParameterCheck c = checker.check(*p, grad);
    EXPECT_TRUE(c.passed()) << describe(c);
    kinks += c.kinks;
  }
  EXPECT_GT(kinks, 0u);
  Parameter& w = *f.net->parameters()[0];
  std::vector<float> grad = w.grad.to_host();
  size_t largest = 0;
  for (size_t i = 0; i < grad.size(); ++i)
    if (std::fabs(grad[i]) > std::fabs(grad[largest])) largest = i;
  grad[largest] += grad[largest] > 0 ? 0.3f : -0.3f;
  const ParameterCheck bad = checker.check(w, grad);
  EXPECT_EQ(bad.failures, 1u) << describe(bad);
}

// DSSTNE's validate_ScaledMarginalCrossEntropy_02 test (a config of its tst/test_data, checked
// by NNNetwork::Validate): Input 2 -> Hidden 2 Sigmoid -> Output 2 Sigmoid, SMCE with targets
// 1/0 and scales 30/1, "Classification" data (example s has the single feature s mod 2 in and
// out), batch 4, one-sided differences with DSSTNE's absolute threshold 0.02.
TEST(GradientChecker, ReproducesDsstneValidateSmceCase) {
  const uint32_t n = 1024;
  std::vector<std::vector<uint32_t>> rows(n);
  for (uint32_t s = 0; s < n; ++s) rows[s] = {s % 2};
  Fixture f(R"({"Name": "validate", "ErrorFunction": "ScaledMarginalCrossEntropy",
      "ScaledMarginalCrossEntropy": {"oneTarget": 1.0, "zeroTarget": 0.0, "oneScale": 30.0,
                                     "zeroScale": 1.0},
      "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Hidden", "Kind": "Hidden", "N": 2, "Activation": "Sigmoid"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "Sigmoid"}]})",
            {sparse_set("input", 2, rows), sparse_set("output", 2, rows)}, 12345);
  const HostBatch hb = first_batch(f.bound, 4);
  EXPECT_EQ(hb.rows, 4u);
  GradientCheckOptions opt;
  opt.central = false;
  opt.abs_tolerance = 0.02;
  opt.rel_tolerance = 0.0;
  GradientChecker checker(*f.net, f.bound, hb, opt);
  const GradientCheckReport report = checker.run();
  EXPECT_TRUE(report.passed());
  EXPECT_EQ(report.rows, 4u);
  EXPECT_GT(report.loss, 0.0);
  ASSERT_EQ(report.parameters.size(), 4u);  // two weights and two biases
  for (const auto& p : report.parameters) EXPECT_TRUE(p.passed()) << describe(p);
}

TEST(GradientChecker, FirstBatchTakesTheFirstExamplesInOrder) {
  std::vector<std::vector<uint32_t>> rows = {{0}, {1, 2}, {3}, {0, 3}, {2}};
  Fixture f(R"({"Name": "b", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out"}]})",
            {sparse_set("in", 4, rows), sparse_set("out", 4, rows)});
  const HostBatch three = first_batch(f.bound, 3);
  ASSERT_EQ(three.rows, 3u);
  ASSERT_EQ(three.sparse.size(), 2u);
  EXPECT_EQ(three.sparse[0].row_ptr, (std::vector<uint32_t>{0, 1, 3, 4}));
  EXPECT_EQ(three.sparse[0].index, (std::vector<uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(first_batch(f.bound, 1024).rows, 5u);  // capped at the dataset size
  EXPECT_THROW(first_batch(f.bound, 0), ConfigError);
}

}  // namespace
}  // namespace nn::test
