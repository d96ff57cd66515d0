// Padded rows through the public API (docs/performance.md, "Padded rows"): a Model whose output
// layer holds its rows padded (the CPU backend told so by NN_CPU_ROW_ALIGN, as the CUDA backend
// pads by default) shows the weights, sizes, outputs, top K and files of the same Model
// unpadded, and a file saved by one loads into the other.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "nn/nn.h"

namespace nn::api {
namespace {

constexpr uint32_t kIn = 20, kOut = 45, kRows = 37, kK = 6;

const char* kNet = R"({ "Name": "padded", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Tanh" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "SoftMax" } ] })";

// NN_CPU_ROW_ALIGN for the lifetime of one object (backends read it when they are made).
class RowAlignment {
 public:
  explicit RowAlignment(const char* floats) { setenv("NN_CPU_ROW_ALIGN", floats, 1); }
  ~RowAlignment() { unsetenv("NN_CPU_ROW_ALIGN"); }
};

std::shared_ptr<Model> make_model(const char* align) {
  const RowAlignment env(align);
  return Model::from_json(kNet, {{"input", {kIn, 1, 1, true}}, {"output", {kOut}}}, 5, {"cpu", 2});
}

struct Batch {
  std::vector<uint64_t> row_ptr{0};
  std::vector<uint32_t> index;
  CsrInput input() const { return {row_ptr.data(), index.data(), nullptr, kRows, kIn}; }
};
Batch batch() {
  std::mt19937 rng(3);
  Batch b;
  for (uint32_t r = 0; r < kRows; ++r) {
    for (uint32_t j = 0; j < kIn; ++j)
      if (rng() % 3 == 0) b.index.push_back(j);
    b.row_ptr.push_back(b.index.size());
  }
  return b;
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-6 + 1e-6 * std::fabs(b[i])) << what << " at " << i;
}

TEST(PaddedRowsApi, AModelWithPaddedRowsShowsTheUnpaddedWeightsAndOutputs) {
  const auto padded = make_model("8"), plain = make_model("1");
  // The weights as files and the API count them: 8 x 45 and 45, not 8 x 48 and 48.
  ASSERT_EQ(padded->weights().size(), plain->weights().size());
  for (const WeightInfo& w : plain->weights()) {
    SCOPED_TRACE(w.name);
    EXPECT_EQ(padded->weight(w.name).size, w.size);
    EXPECT_EQ(padded->weight(w.name).shape, w.shape);
    EXPECT_EQ(padded->get_weights(w.name), plain->get_weights(w.name));  // the same draws
  }
  EXPECT_EQ(padded->weight("Output<-Hidden:weights").shape, (std::vector<uint64_t>{8, kOut}));

  const Batch b = batch();
  Evaluator ep(padded, 16), eq(plain, 16);  // chunks of 16: a short last one
  std::vector<float> op(size_t(kRows) * kOut), oq(op.size());
  ep.outputs(b.input(), "Output", op.data());
  eq.outputs(b.input(), "Output", oq.data());
  expect_near(op, oq, "outputs");
  for (uint32_t r = 0; r < kRows; ++r) {  // SoftMax over the 45 units, none of the padding
    double sum = 0;
    for (uint32_t j = 0; j < kOut; ++j) sum += op[size_t(r) * kOut + j];
    ASSERT_NEAR(sum, 1.0, 1e-5) << r;
  }
  std::vector<uint32_t> ip(size_t(kRows) * kK), iq(ip.size());
  std::vector<float> sp(ip.size()), sq(ip.size());
  ep.top_k(b.input(), kK, "Output", nullptr, ip.data(), sp.data());
  eq.top_k(b.input(), kK, "Output", nullptr, iq.data(), sq.data());
  EXPECT_EQ(ip, iq);
  expect_near(sp, sq, "top-K scores");
  for (uint32_t i : ip) EXPECT_LT(i, kOut);  // never a padded column
}

TEST(PaddedRowsApi, WeightsSetAndSavedThroughAPaddedModelReadBackUnpadded) {
  const auto padded = make_model("8");
  const std::string name = "Output<-Hidden:weights";
  std::vector<float> w(padded->weight(name).size);
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 17) * 0.01f - 0.05f;
  padded->set_weights(name, w.data(), w.size());
  EXPECT_EQ(padded->get_weights(name), w);
  std::vector<float> wrong(w.size() + 3);
  EXPECT_THROW(padded->set_weights(name, wrong.data(), wrong.size()), ConfigError);

  const std::string path = ::testing::TempDir() + "padded_rows_api_test.nc";
  padded->save(path);
  const auto loaded = Model::load(path, {"cpu", 2});  // unpadded: NN_CPU_ROW_ALIGN unset
  EXPECT_EQ(loaded->get_weights(name), w);
  EXPECT_EQ(loaded->get_weights("Output<-Hidden:bias"), padded->get_weights("Output<-Hidden:bias"));
  {
    const RowAlignment env("8");
    const auto again = Model::load(path, {"cpu", 2});
    EXPECT_EQ(again->get_weights(name), w);
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace nn::api
