// The public library API (include/nn/): Evaluators over one Model share its weights and agree
// with each other on any number of threads, dense and CSR inputs agree, weights round-trip, the
// Trainer trains and stops when its callback says so, and bad arguments are named.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "core/error.h"
#include "nn/nn.h"

namespace nn::api {
namespace {

const char* kNetwork = R"({ "Name": "api-test", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Sigmoid",
      "BatchNormalization": true },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "Sigmoid" } ] })";

constexpr uint32_t kCols = 40, kRows = 50;

// CSR rows with ascending columns (so dense and CSR inputs sum in the same order).
struct Csr {
  std::vector<uint64_t> row_ptr{0};
  std::vector<uint32_t> index;
  std::vector<float> dense;  // the same rows, dense
  CsrInput view() const { return {row_ptr.data(), index.data(), nullptr, kRows, kCols}; }
};

Csr make_rows() {
  Csr c;
  c.dense.assign(size_t(kRows) * kCols, 0.0f);
  std::mt19937 rng(3);
  for (uint32_t r = 0; r < kRows; ++r) {
    for (uint32_t j = 0; j < kCols; ++j)
      if (rng() % 4 == 0) {
        c.index.push_back(j);
        c.dense[size_t(r) * kCols + j] = 1.0f;
      }
    c.row_ptr.push_back(c.index.size());
  }
  return c;
}

std::shared_ptr<Model> make_model(int threads = 2) {
  return Model::from_json(kNetwork, {{"input", {kCols, 1, 1, true}}, {"output", {kCols}}}, 5,
                          {"cpu", threads});
}

TEST(Api, ModelDescribesLayersAndWeights) {
  auto m = make_model();
  ASSERT_EQ(m->layers().size(), 3u);
  EXPECT_TRUE(m->layer("Input").sparse_input);
  EXPECT_EQ(m->layer("Output").units, kCols);
  const WeightInfo& w = m->weight("Hidden<-Input:weights");
  EXPECT_EQ(w.shape, (std::vector<size_t>{kCols, 16}));
  EXPECT_THROW(m->layer("Hiden"), ConfigError);
  try {
    m->weight("Hidden<-Input:weight");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'Hidden<-Input:weights'"),
              std::string::npos);
  }
}

TEST(Api, WeightsRoundTripAndEvaluatorsSeeTheModelsWeights) {
  auto m = make_model();
  Csr rows = make_rows();
  Evaluator ev(m);
  std::vector<float> before(size_t(kRows) * kCols), after(before.size());
  ev.outputs(rows.view(), "", before.data());
  std::vector<float> bias = m->get_weights("Output<-Hidden:bias");
  for (float& b : bias) b += 0.5f;
  m->set_weights("Output<-Hidden:bias", bias.data(), bias.size());
  EXPECT_EQ(m->get_weights("Output<-Hidden:bias"), bias);
  // The Evaluator made before the change reads the same memory (no copy of the weights).
  ev.outputs(rows.view(), "", after.data());
  EXPECT_NE(before, after);
  EXPECT_THROW(m->set_weights("Output<-Hidden:bias", bias.data(), 3), ConfigError);
}

TEST(Api, Bf16PrecisionIsCloseToFp32AndRefusedWithBatchInvariance) {
  auto fp32 = make_model();
  ModelOptions o{"cpu", 2};
  o.precision = "bf16";
  std::shared_ptr<Model> bf16;
  try {
    bf16 = Model::from_json(kNetwork, {{"input", {kCols, 1, 1, true}}, {"output", {kCols}}}, 5, o);
  } catch (const ConfigError& e) {
    GTEST_SKIP() << e.what();  // no AVX512-BF16 here: refused with the reason
  }
  Csr rows = make_rows();
  std::vector<float> a(size_t(kRows) * kCols), b(a.size());
  Evaluator(fp32).outputs(rows.view(), "", a.data());
  Evaluator(bf16).outputs(rows.view(), "", b.data());
  EXPECT_NE(a, b);  // the products were rounded to BF16
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(b[i], a[i], 0.02f) << i;
  o.batch_invariant = true;
  EXPECT_THROW(
      Model::from_json(kNetwork, {{"input", {kCols, 1, 1, true}}, {"output", {kCols}}}, 5, o),
      ConfigError);
  o.batch_invariant = false;
  o.precision = "fp16";
  EXPECT_THROW(
      Model::from_json(kNetwork, {{"input", {kCols, 1, 1, true}}, {"output", {kCols}}}, 5, o),
      ConfigError);
}

TEST(Api, DenseAndCsrInputsAgree) {
  auto m = make_model();
  Csr rows = make_rows();
  Evaluator ev(m, 16);
  std::vector<float> a(size_t(kRows) * kCols), b(a.size());
  ev.outputs(rows.view(), "Output", a.data());
  ev.outputs(DenseInput{rows.dense.data(), kRows, kCols}, "Output", b.data());
  EXPECT_EQ(a, b);
}

TEST(Api, FourThreadsEqualOne) {
  auto m = make_model();
  Csr rows = make_rows();
  const uint32_t k = 5;
  std::vector<uint32_t> ref_i(size_t(kRows) * k);
  std::vector<float> ref_s(ref_i.size());
  Evaluator(m, 8).top_k(rows.view(), k, "", nullptr, ref_i.data(), ref_s.data());
  std::vector<std::vector<uint32_t>> idx(4, std::vector<uint32_t>(ref_i.size()));
  std::vector<std::vector<float>> score(4, std::vector<float>(ref_i.size()));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Evaluator ev(m, 8);
      for (int rep = 0; rep < 20; ++rep)
        ev.top_k(rows.view(), k, "", nullptr, idx[t].data(), score[t].data());
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(idx[t], ref_i);
    EXPECT_EQ(score[t], ref_s);
  }
}

TEST(Api, TopKExcludesAndChecksArguments) {
  auto m = make_model();
  Csr rows = make_rows();
  Evaluator ev(m);
  std::vector<uint32_t> idx(size_t(kRows) * 3);
  std::vector<float> score(idx.size());
  Exclusion ex{rows.row_ptr.data(), rows.index.data(), kRows};
  ev.top_k(rows.view(), 3, "", &ex, idx.data(), score.data());
  for (uint32_t r = 0; r < kRows; ++r)
    for (uint32_t j = 0; j < 3; ++j)
      for (uint64_t e = rows.row_ptr[r]; e < rows.row_ptr[r + 1]; ++e)
        EXPECT_NE(idx[r * 3 + j], rows.index[e]);
  EXPECT_THROW(ev.top_k(rows.view(), 0, "", nullptr, idx.data(), score.data()), ConfigError);
  CsrInput bad = rows.view();
  bad.cols = kCols + 1;
  EXPECT_THROW(ev.top_k(bad, 3, "", nullptr, idx.data(), score.data()), ConfigError);
  std::vector<uint32_t> wrong = rows.index;
  wrong[0] = kCols;
  bad = rows.view();
  bad.index = wrong.data();
  try {
    ev.outputs(bad, "", score.data());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("x: row 0 has column 40"), std::string::npos);
  }
}

TEST(Api, TrainerTrainsAndStopsWhenAsked) {
  auto m = make_model(1);
  Csr rows = make_rows();
  std::vector<Dataset> data{
      Dataset::csr("input", rows.row_ptr.data(), rows.index.data(), nullptr, kRows, kCols),
      Dataset::csr("output", rows.row_ptr.data(), rows.index.data(), nullptr, kRows, kCols)};
  TrainSettings s;
  s.epochs = 10;
  s.minibatch = 10;
  s.optimizer = "Adam";
  s.alpha = 0.01f;
  Trainer t(m, data, s);
  std::vector<EpochStats> seen;
  const auto stats = t.run([&](const EpochStats& e) {
    seen.push_back(e);
    return e.epoch < 6;
  });
  ASSERT_EQ(stats.size(), 6u);
  EXPECT_EQ(t.epoch(), 6u);
  EXPECT_LT(stats.back().loss, stats.front().loss);
  EXPECT_GT(stats.front().examples_per_second, 0);
  s.optimizer = "adamw";
  EXPECT_THROW(Trainer(m, data, s), ConfigError);
}

}  // namespace
}  // namespace nn::api
