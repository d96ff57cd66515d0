// Closed-form training (train/least_squares.h): the solution zeroes the gradient of the objective
// it states (computed here independently, in double, from the data), for autoencoder targets
// (the inverse shortcut) and other targets (the general solve), with analog values and with the
// biases held at 0; its reported loss is that objective's value; full-batch gradient descent of
// the same network (SGD, weight decay Lambda) converges to the same weights, which ties the
// objective's scaling to the trainer's; what it cannot solve is refused by name.
#include "train/least_squares.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/test_util.h"
#include "model/model_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

std::string linear_network(float denoising, const char* extra_output = "",
                           const char* error = "L2") {
  return std::string(R"({"ErrorFunction": ")") + error + R"(", "Denoising": {"p": )" +
         std::to_string(denoising) + R"(}, "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "Linear")" +
         extra_output + "}]}";
}

std::vector<float> values(Network& net, const std::string& name) {
  for (Parameter* p : net.parameters())
    if (p->name.find(name) != std::string::npos) return p->logical_values(p->value);
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

std::vector<std::vector<double>> dense(const ExampleSet& s) {
  std::vector<std::vector<double>> m(s.examples, std::vector<double>(s.width, 0.0));
  for (uint64_t n = 0; n < s.examples; ++n)
    for (uint64_t e = s.sparse_start[n]; e < s.sparse_end[n]; ++e)
      m[n][s.sparse_index[e]] += s.sparse_value.empty() ? 1.0 : s.sparse_value[e];
  return m;
}

// The objective of least_squares.h and its gradient, in double from the dense data:
//   sum_n ||y_n - x_n W - b||^2 + sum_i (p/(1-p) G_ii + N lambda) ||W_i||^2
struct Objective {
  double value = 0, largest_gradient = 0, gradient_scale = 0;
};

Objective objective(const ExampleSet& xs, const ExampleSet& ys, const std::vector<float>& w,
                    const std::vector<float>& b, double p, double lambda, bool bias_free) {
  const auto x = dense(xs), y = dense(ys);
  const size_t n_in = xs.width, n_out = ys.width, N = xs.examples;
  std::vector<double> ridge(n_in, 0.0);
  for (size_t i = 0; i < n_in; ++i) {
    double g = 0;
    for (size_t n = 0; n < N; ++n) g += x[n][i] * x[n][i];
    ridge[i] = p / (1 - p) * g + double(N) * lambda;
  }
  std::vector<double> gw(n_in * n_out, 0.0), gb(n_out, 0.0);
  Objective o;
  for (size_t n = 0; n < N; ++n)
    for (size_t j = 0; j < n_out; ++j) {
      double r = y[n][j] - b[j];
      for (size_t i = 0; i < n_in; ++i) r -= x[n][i] * w[i * n_out + j];
      o.value += r * r;
      o.gradient_scale += y[n][j] * y[n][j];
      for (size_t i = 0; i < n_in; ++i) gw[i * n_out + j] += -2 * x[n][i] * r;
      gb[j] += -2 * r;
    }
  for (size_t i = 0; i < n_in; ++i)
    for (size_t j = 0; j < n_out; ++j) {
      o.value += ridge[i] * w[i * n_out + j] * w[i * n_out + j];
      gw[i * n_out + j] += 2 * ridge[i] * w[i * n_out + j];
    }
  for (double g : gw) o.largest_gradient = std::max(o.largest_gradient, std::fabs(g));
  if (!bias_free)
    for (double g : gb) o.largest_gradient = std::max(o.largest_gradient, std::fabs(g));
  return o;
}

struct Case {
  bool autoencoder;
  bool analog;
  bool fit_bias;
  float denoising;
  float lambda;
};

class LeastSquaresSolution : public ::testing::TestWithParam<Case> {};

TEST_P(LeastSquaresSolution, ZeroesTheGradientOfItsObjective) {
  const Case c = GetParam();
  const uint32_t items = 14, examples = 40;
  const auto in_rows = random_rows(5, examples, items, 4);
  std::vector<std::vector<float>> in_values;
  if (c.analog)
    for (size_t n = 0; n < in_rows.size(); ++n) {
      in_values.emplace_back();
      for (size_t k = 0; k < in_rows[n].size(); ++k)
        in_values.back().push_back(0.5f + float((n * 3 + k * 7) % 5) * 0.5f);
    }
  const ExampleSet in = sparse_set("input", items, in_rows, in_values);
  ExampleSet out = c.autoencoder ? in : sparse_set("output", 9, random_rows(6, examples, 9, 2));
  out.name = "output";
  Fixture f(linear_network(c.denoising), {in, out});
  const LeastSquaresReport r =
      solve_least_squares(*f.net, f.bound, c.lambda, c.denoising, c.fit_bias);
  EXPECT_EQ(r.targets_are_inputs, c.autoencoder);
  EXPECT_EQ(r.examples, examples);
  const std::vector<float> w = values(*f.net, "weights"), b = values(*f.net, "bias");
  if (!c.fit_bias)
    for (float v : b) EXPECT_EQ(v, 0.0f);
  const Objective o = objective(in, out, w, b, c.denoising, c.lambda, !c.fit_bias);
  // Float solutions of a well-conditioned system: the gradient is rounding, far below its scale.
  EXPECT_LT(o.largest_gradient, 1e-3 * o.gradient_scale) << "objective " << o.value;
  // The reported loss is the objective per example, halved (as training reports its losses).
  EXPECT_NEAR(r.loss, o.value / (2.0 * examples), 1e-3 * r.loss + 1e-6);
  double w_squares = 0;
  for (float v : w) w_squares += double(v) * v;
  EXPECT_NEAR(r.reg_loss, 0.5 * c.lambda * w_squares, 1e-6 + 1e-4 * r.reg_loss);
  // Nudging any weight raises the objective (a minimum, not a saddle or a maximum).
  for (size_t k : {size_t(0), w.size() / 2, w.size() - 1}) {
    std::vector<float> moved = w;
    moved[k] += 0.05f;
    EXPECT_GT(objective(in, out, moved, b, c.denoising, c.lambda, !c.fit_bias).value, o.value);
  }
}

INSTANTIATE_TEST_SUITE_P(All, LeastSquaresSolution,
                         ::testing::Values(Case{true, false, true, 0.5f, 0.1f},
                                           Case{true, false, false, 0.3f, 0.05f},
                                           Case{true, true, true, 0.0f, 0.2f},
                                           Case{false, false, true, 0.25f, 0.1f},
                                           Case{false, true, false, 0.0f, 0.02f}));

// ZeroDiagonal (EASE with p = 0, EDLAE with p > 0): the weight of each item to itself is 0 and
// the solution is the minimum of the same objective over the other weights: their gradient
// vanishes, nudging one raises the objective, and the reported loss is its value. Refused where
// the constraint has no meaning (other targets) or the model has biases.
TEST(LeastSquares, ZeroDiagonalMinimisesOverTheOtherWeights) {
  const uint32_t items = 14, examples = 40;
  const ExampleSet in = sparse_set("input", items, random_rows(5, examples, items, 4));
  ExampleSet out = in;
  out.name = "output";
  for (const float p : {0.0f, 0.4f}) {
    Fixture f(linear_network(p), {in, out});
    const LeastSquaresReport r =
        solve_least_squares(*f.net, f.bound, 0.05f, p, /*fit_bias=*/false, /*zero_diagonal=*/true);
    const std::vector<float> w = values(*f.net, "weights"), b = values(*f.net, "bias");
    const size_t n_out = in.width;
    for (size_t j = 0; j < n_out; ++j) EXPECT_EQ(w[j * n_out + j], 0.0f) << "p " << p;
    // The gradient over the off-diagonal weights, by central differences of the objective.
    const Objective o = objective(in, out, w, b, p, 0.05f, true);
    double largest = 0;
    for (size_t k = 0; k < w.size(); k += 5) {
      if (k / n_out == k % n_out) continue;
      std::vector<float> up = w, down = w;
      up[k] += 1e-2f;
      down[k] -= 1e-2f;
      const double g = (objective(in, out, up, b, p, 0.05f, true).value -
                        objective(in, out, down, b, p, 0.05f, true).value) /
                       2e-2;
      largest = std::max(largest, std::fabs(g));
      EXPECT_GT(objective(in, out, up, b, p, 0.05f, true).value, o.value);
    }
    EXPECT_LT(largest, 1e-3 * o.gradient_scale) << "p " << p;
    EXPECT_NEAR(r.loss, o.value / (2.0 * examples), 1e-3 * r.loss + 1e-6) << "p " << p;
  }
  Fixture with_bias(linear_network(0.2f), {in, out});
  EXPECT_CONTAINS(error_of<ConfigError>([&] {
                    solve_least_squares(*with_bias.net, with_bias.bound, 0.05f, 0.2f, true, true);
                  }),
                  "with ZeroDiagonal needs the biases held at 0 (FitBias false)");
  ExampleSet other = sparse_set("output", 9, random_rows(6, examples, 9, 2));
  Fixture not_auto(linear_network(0.2f), {in, other});
  EXPECT_CONTAINS(error_of<ConfigError>([&] {
                    solve_least_squares(*not_auto.net, not_auto.bound, 0.05f, 0.2f, false, true);
                  }),
                  "with ZeroDiagonal needs the targets to be the inputs");
}

// Gradient descent on the same network and data (full batch, SGD, weight decay Lambda, no
// denoising: the expected objective is then the objective itself) ends where the closed form
// starts: the closed form is the minimiser of what nn-train minimises.
TEST(LeastSquares, GradientDescentConvergesToTheClosedForm) {
  const uint32_t items = 8, examples = 30;
  const auto rows = random_rows(9, examples, items, 3);
  const std::vector<ExampleSet> data = {sparse_set("input", items, rows),
                                        sparse_set("output", items, rows)};
  const float lambda = 0.05f;
  Fixture solved(linear_network(0.0f), data);
  solve_least_squares(*solved.net, solved.bound, lambda, 0.0f, true);
  Fixture trained(linear_network(0.0f), data);
  TrainOptions o;
  o.epochs = 3000;
  o.minibatch = examples;  // full batch: plain gradient descent
  o.optimizer.kind = OptimizerKind::SGD;
  o.optimizer.alpha = 0.3f;
  o.optimizer.lambda = lambda;
  o.shuffle = false;
  o.progress_seconds = 0;
  TrainingLoop(*trained.net, trained.bound, o, nullptr).run();
  for (const char* name : {"weights", "bias"}) {
    const std::vector<float> a = values(*solved.net, name), b = values(*trained.net, name);
    ASSERT_EQ(a.size(), b.size());
    double largest = 0;
    for (size_t k = 0; k < a.size(); ++k)
      largest = std::max(largest, std::fabs(double(a[k] - b[k])));
    EXPECT_LT(largest, 2e-3) << name;
  }
}

// Through the training loop: one "epoch", the loss reported, and the network holds the solution.
TEST(LeastSquares, TrainingLoopSolvesAsOneEpoch) {
  const auto rows = random_rows(2, 25, 10, 3);
  Fixture f(linear_network(0.4f), {sparse_set("input", 10, rows), sparse_set("output", 10, rows)});
  TrainOptions o;
  o.epochs = 50;  // ignored: one solve
  o.minibatch = 8;
  o.optimizer.lambda = 0.1f;
  o.least_squares = true;
  o.progress_seconds = 0;
  std::vector<std::string> lines;
  TrainingLoop loop(*f.net, f.bound, o, [&](const std::string& s) { lines.push_back(s); });
  const std::vector<EpochReport> reports = loop.run();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(loop.epoch(), 1u);
  EXPECT_GT(reports[0].loss, 0.0);
  bool logged = false;
  for (const auto& l : lines)
    logged = logged || l.find("solved in closed form") != std::string::npos;
  EXPECT_TRUE(logged);
  Fixture g(linear_network(0.4f), {sparse_set("input", 10, rows), sparse_set("output", 10, rows)});
  const LeastSquaresReport r = solve_least_squares(*g.net, g.bound, 0.1f, 0.4f, true);
  EXPECT_EQ(values(*f.net, "weights"), values(*g.net, "weights"));
  EXPECT_DOUBLE_EQ(reports[0].loss, r.loss);
}

TEST(LeastSquares, RefusesWhatItCannotSolve) {
  const auto rows = random_rows(3, 12, 10, 3);
  const std::vector<ExampleSet> data = {sparse_set("input", 10, rows),
                                        sparse_set("output", 10, rows)};
  auto refusal = [&](const std::string& json, float lambda1 = 0.0f) {
    Fixture f(json, data);
    return error_of<ConfigError>([&] { check_least_squares(*f.net, f.bound, lambda1); });
  };
  EXPECT_CONTAINS(refusal(linear_network(0, "", "CrossEntropy")), "\"ErrorFunction\": \"L2\"");
  EXPECT_CONTAINS(refusal(std::string(R"({"ErrorFunction": "L2", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "Sigmoid"}]})")),
                  "\"Activation\": \"Linear\"");
  EXPECT_CONTAINS(refusal(std::string(R"({"ErrorFunction": "L2", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Hidden", "Kind": "Hidden", "N": 4, "Activation": "Linear"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "Linear"}]})")),
                  "one Input layer and one Output layer");
  EXPECT_CONTAINS(refusal(linear_network(0, R"(, "pDropout": 0.2)")), "pDropout");
  EXPECT_CONTAINS(refusal(linear_network(0), 0.01f), "L1 decay");
  // Dense data.
  Fixture d(linear_network(0), {densify(data[0]), densify(data[1])});
  EXPECT_CONTAINS(error_of<ConfigError>([&] { check_least_squares(*d.net, d.bound, 0.0f); }),
                  "needs sparse datasets");
}

TEST(LeastSquares, AnUnseenInputWithoutRidgeIsSingular) {
  // Input unit 9 is in no example: with no weight decay and no denoising its row of A is zero.
  std::vector<std::vector<uint32_t>> rows = {{0, 1}, {2, 3}, {1, 4}, {5, 6}, {7, 8}, {0, 8}};
  Fixture f(linear_network(0), {sparse_set("input", 10, rows), sparse_set("output", 10, rows)});
  EXPECT_CONTAINS(
      error_of<ConfigError>([&] { solve_least_squares(*f.net, f.bound, 0.0f, 0.0f, true); }),
      "singular");
  EXPECT_NO_THROW(solve_least_squares(*f.net, f.bound, 0.01f, 0.0f, true));
}

}  // namespace
}  // namespace nn::test
