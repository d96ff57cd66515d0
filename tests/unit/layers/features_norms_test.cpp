// WeightNorm (columns of a weight matrix capped after every update), DeltaNorm (each example's
// delta capped before it reaches the weights) and the sparseness penalty's value (which layers
// get it, which p/beta apply, and that the trainer reports it in the loss).
#include <gtest/gtest.h>

#include "features_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

constexpr uint32_t kExamples = 10, kIn = 6, kHidden = 5;

std::vector<ExampleSet> sets() {
  Rng rng(21);
  std::vector<float> x(kExamples * kIn);
  for (auto& v : x) v = float(rng.uniform() * 2 - 1);
  return {dense_set("in", kIn, x), sparse_set("out", 4, random_rows(22, kExamples, 4, 2))};
}

std::string net(const std::string& hidden_extra, const std::string& out_extra = "",
                const std::string& top = "", const std::string& activation = "Tanh") {
  return R"({"ErrorFunction": "CrossEntropy", )" + top + R"( "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "H", "Kind": "Hidden", "N": 5, "Activation": ")" +
         activation + "\"" + hidden_extra + R"(},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid" )" +
         out_extra + "}]}";
}

std::vector<float> delta_of(Fixture& f, const std::string& layer, uint32_t rows) {
  std::vector<float> d(size_t(rows) * f.net->layer(layer).units());
  f.net->backend().download(d.data(), f.net->layer(layer).delta(), d.size() * sizeof(float));
  return d;
}

double row_norm(const std::vector<float>& d, uint32_t r, uint32_t cols) {
  double sq = 0.0;
  for (uint32_t c = 0; c < cols; ++c) sq += double(d[r * cols + c]) * d[r * cols + c];
  return std::sqrt(sq);
}

// (1/rows) x^T d for x [rows][n_in], d [rows][n_out].
std::vector<double> weight_gradient(const std::vector<float>& x, const std::vector<float>& d,
                                    uint32_t rows, uint32_t n_in, uint32_t n_out) {
  std::vector<double> g(size_t(n_in) * n_out, 0.0);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < n_in; ++i)
      for (uint32_t o = 0; o < n_out; ++o)
        g[i * n_out + o] += double(x[r * n_in + i]) * d[r * n_out + o] / rows;
  return g;
}

// A JSON number for `v`, and v rounded to what that text says.
std::string json_number(double& v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  v = std::stod(buf);
  return buf;
}

void run_backward(Fixture& f) {
  f.net->set_max_batch(kExamples);
  FixedBatch batch(f.bound, kExamples);
  OutputLosses losses(*f.net, f.bound);
  analytic_gradients(*f.net, f.bound, losses, batch.hb);
}

TEST(FeaturesNorms, DeltaNormCapsEveryExampleBeforeTheGradients) {
  Fixture plain(net(""), sets());
  run_backward(plain);
  const auto d_plain = delta_of(plain, "Out", kExamples);
  // Cap the output deltas at their median length: about half the rows get clipped.
  std::vector<double> lengths;
  for (uint32_t r = 0; r < kExamples; ++r) lengths.push_back(row_norm(d_plain, r, 4));
  std::sort(lengths.begin(), lengths.end());
  double cap = 0.5 * (lengths[kExamples / 2 - 1] + lengths[kExamples / 2]);
  Fixture capped(net(R"(, "DeltaNorm": 0.01)", ", \"DeltaNorm\": " + json_number(cap)), sets());
  run_backward(capped);
  // Output deltas: the uncapped ones, rows longer than the cap scaled down to it.
  const auto d_cap = delta_of(capped, "Out", kExamples);
  int clipped = 0;
  for (uint32_t r = 0; r < kExamples; ++r) {
    const double n = row_norm(d_plain, r, 4), s = n > cap ? cap / n : 1.0;
    clipped += n > cap;
    for (uint32_t c = 0; c < 4; ++c)
      EXPECT_NEAR(d_cap[r * 4 + c], d_plain[r * 4 + c] * s, 1e-6) << r << "," << c;
  }
  EXPECT_GT(clipped, 0);
  EXPECT_LT(clipped, int(kExamples));
  // Hidden deltas: every row at most 0.01 (all were longer), and they are what the weights see.
  const auto d_h = delta_of(capped, "H", kExamples);
  for (uint32_t r = 0; r < kExamples; ++r) EXPECT_NEAR(row_norm(d_h, r, kHidden), 0.01, 1e-6);
  auto& h = dynamic_cast<FullyConnectedLayer&>(capped.net->layer("H"));
  EXPECT_TRUE(all_near_d(h.connections()[0]->weights.grad.to_host(),
                         weight_gradient(capped.sets[0].dense, d_h, kExamples, kIn, kHidden),
                         1e-7));
}

std::vector<double> column_norms(const std::vector<float>& w, uint32_t rows, uint32_t cols) {
  std::vector<double> n(cols, 0.0);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) n[c] += double(w[r * cols + c]) * w[r * cols + c];
  for (auto& v : n) v = std::sqrt(v);
  return n;
}

TEST(FeaturesNorms, WeightNormCapsColumnsAfterEveryUpdate) {
  // One large SGD step without the norm, to pick a cap that clips some columns but not all.
  Fixture plain(net(""), sets());
  TrainingLoop tp(*plain.net, plain.bound, sgd_options(1, 3.0f, kExamples), null_log());
  tp.run();
  const auto w_plain = plain.net->parameters()[0]->value.to_host();  // H<-In [6][5]
  auto norms = column_norms(w_plain, kIn, kHidden);
  auto sorted = norms;
  std::sort(sorted.begin(), sorted.end());
  double cap = 0.5 * (sorted[1] + sorted[2]);  // 3 columns are longer
  Fixture capped(net(", \"WeightNorm\": " + json_number(cap)), sets());
  TrainingLoop tc(*capped.net, capped.bound, sgd_options(1, 3.0f, kExamples), null_log());
  tc.run();
  const auto w_cap = capped.net->parameters()[0]->value.to_host();
  std::vector<double> want(w_plain.begin(), w_plain.end());
  for (uint32_t i = 0; i < kIn; ++i)
    for (uint32_t o = 0; o < kHidden; ++o)
      if (norms[o] > cap) want[i * kHidden + o] *= cap / norms[o];
  EXPECT_TRUE(all_near_d(w_cap, want, 1e-6));

  // Later updates stay within the cap; the file records it as the weight's norm.
  TrainingLoop more(*capped.net, capped.bound, sgd_options(4, 3.0f, kExamples), null_log());
  more.run();
  for (double n : column_norms(capped.net->parameters()[0]->value.to_host(), kIn, kHidden))
    EXPECT_LE(n, cap * (1 + 1e-6));
  EXPECT_FLOAT_EQ(capped.net->to_file().weights[0].norm, float(cap));
  EXPECT_EQ(capped.net->parameters()[0]->max_column_norm, float(cap));
  // The output layer has no WeightNorm.
  EXPECT_EQ(capped.net->parameters()[2]->max_column_norm, 0.0f);
}

// Host KL penalty rows * beta * sum_j KL(p || mean_r a[r][j]).
double penalty(const std::vector<float>& a, uint32_t rows, uint32_t cols, double p, double beta) {
  double total = 0.0;
  for (uint32_t c = 0; c < cols; ++c) {
    double rho = 0.0;
    for (uint32_t r = 0; r < rows; ++r) rho += a[r * cols + c] / double(rows);
    total += p * std::log(p / rho) + (1 - p) * std::log((1 - p) / (1 - rho));
  }
  return rows * beta * total;
}

std::vector<float> hidden_after_training_forward(Fixture& f) {
  f.net->set_max_batch(kExamples);
  FixedBatch batch(f.bound, kExamples);
  OutputLosses losses(*f.net, f.bound);
  objective(*f.net, f.bound, losses, batch.hb);
  std::vector<float> a(kExamples * kHidden);
  f.net->backend().download(a.data(), f.net->layer("H").activations(), a.size() * sizeof(float));
  return a;
}

TEST(FeaturesNorms, SparsenessPenaltyAppliesToSparseHiddenLayersWithTheRightValues) {
  const std::string top = R"("SparsenessPenalty": {"p": 0.1, "beta": 0.5},)";
  struct Case {
    std::string hidden, top;
    double p, beta;  // expected effective values (as floats); beta 0 = no penalty
  } cases[] = {
      {R"(, "Sparse": true)", top, float(0.1), float(0.5)},
      {"", top, 0, 0},  // not Sparse
      {R"(, "Sparse": true, "SparsenessPenalty": {"p": 0.3, "beta": 2})", top, float(0.3), 2},
      {R"(, "Sparse": true, "SparsenessPenalty": {"beta": 2})", top, float(0.1), 2},
      // A layer's own beta turns it on even when the network's is 0.
      {R"(, "Sparse": true, "SparsenessPenalty": {"p": 0.3, "beta": 2})", "", float(0.3), 2},
      {R"(, "Sparse": true)", "", 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.hidden + " / " + c.top);
    Fixture f(net(c.hidden, "", c.top, "Sigmoid"), sets());
    const auto a = hidden_after_training_forward(f);
    const LayerContext ctx{f.net->backend(), kExamples, true, 1, 1};
    const double got = f.net->penalties(ctx);
    if (c.beta == 0)
      EXPECT_EQ(got, 0.0);
    else
      EXPECT_NEAR(got, penalty(a, kExamples, kHidden, c.p, c.beta), 1e-6 * got);
  }
}

TEST(FeaturesNorms, TrainerReportsThePenaltyInTheLoss) {
  const std::string hidden = R"(, "Sparse": true)";
  Fixture with(net(hidden, "", R"("SparsenessPenalty": {"p": 0.05, "beta": 0.8},)", "Sigmoid"),
               sets());
  Fixture without(net(hidden, "", "", "Sigmoid"), sets());
  const double expected =
      penalty(hidden_after_training_forward(with), kExamples, kHidden, 0.05f, 0.8f) / kExamples;
  EXPECT_GT(expected, 0.01);
  TrainingLoop tw(*with.net, with.bound, sgd_options(1, 0.1f, kExamples), null_log());
  TrainingLoop to(*without.net, without.bound, sgd_options(1, 0.1f, kExamples), null_log());
  const double lw = tw.run()[0].data_loss, lo = to.run()[0].data_loss;
  EXPECT_NEAR(lw - lo, expected, 1e-5 * expected);
}

}  // namespace
}  // namespace nn::test
