// Finite-difference gradient checks through whole networks: every parameter gradient that
// backward() produces must match central differences of the batch-mean loss, for each hidden
// activation, each output activation/error function pairing, dense and sparse inputs and targets,
// multiple sources and skip connections.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "model/batch_loader.h"
#include "model/step.h"
#include "model_test_util.h"

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
      ? R"({"Name": "H1", "Kind": "Hidden", "N": 5, "Activation": ")" + c.hidden_activation +
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

double batch_loss(Network& net, const BoundData& bound, OutputLosses& losses, const HostBatch& hb) {
  load_inputs(net, bound, hb);
  LayerContext ctx{net.backend(), hb.rows, false, 1, 1};
  net.forward(ctx);
  return losses.evaluate(hb, false) / hb.rows;
}

void check_gradients(const Case& c) {
  SCOPED_TRACE(c.name);
  const uint32_t in_w = 7, out_w = 6, n = 5;
  auto in_rows = random_rows(11, n, in_w, 3);
  std::vector<std::vector<float>> in_vals(n, std::vector<float>{0.5f, -1.0f, 2.0f});
  DataSet in = sparse_set("in", in_w, in_rows, in_vals);
  if (!c.sparse_input) in = densify(in);
  auto out_rows = random_rows(12, n, out_w, 2);
  DataSet out = sparse_set("out", out_w, out_rows);
  if (!c.sparse_target) out = densify(out);
  Fixture f(network_json(c), {in, out}, 3);
  Network& net = *f.net;
  net.set_max_batch(n);
  BatchLoader loader(f.bound, {}, 1);
  HostBatch hb;
  std::vector<uint32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0u);
  loader.assemble(ids.data(), n, 1, false, hb);
  OutputLosses losses(net, f.bound);

  // Analytic gradients.
  load_inputs(net, f.bound, hb);
  LayerContext ctx{net.backend(), n, false, 1, 1};
  net.forward(ctx);
  losses.evaluate(hb, true);
  net.backward(ctx);

  const double eps = 1e-3;
  int checked = 0;
  for (Parameter* p : net.parameters()) {
    std::vector<float> grad = p->grad.to_host();
    std::vector<float> value = p->value.to_host();
    for (size_t i = 0; i < value.size(); ++i) {
      const float orig = value[i];
      value[i] = orig + float(eps);
      p->value.upload(value);
      const double up = batch_loss(net, f.bound, losses, hb);
      value[i] = orig - float(eps);
      p->value.upload(value);
      const double down = batch_loss(net, f.bound, losses, hb);
      value[i] = orig;
      p->value.upload(value);
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(grad[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric))
          << p->name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
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
  Case c{"multi-source", "", "Sigmoid", "CrossEntropy", true, true,
         R"({"Name": "A", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
            {"Name": "B", "Kind": "Hidden", "N": 4, "Activation": "Sigmoid", "Source": "In"},
            {"Name": "C", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": ["A", "B"],
             "Skip": "A"},)"};
  // The output layer's default source is the previous layer (C).
  check_gradients(c);
}

}  // namespace
}  // namespace nn::test
