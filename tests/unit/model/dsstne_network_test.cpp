// A network file in DSSTNE's layout (written by the raw-netCDF test helper, no "nn_" items) with
// known weights loads through read_network_file + Network::load_arrays and predicts the outputs
// computed by hand from DSSTNE's conventions: weights stored [input unit][output unit], one
// weight (and one bias) per source in declaration order, summed into the layer's input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "io/dsstne_network_writer.h"
#include "io/network_file.h"
#include "model_test_util.h"
#include "predict/predictor.h"

namespace nn::test {
namespace {

namespace fs = std::filesystem;

// A private directory removed with everything in it at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("nn_dsstne_net_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

float sigmoid(float z) {
  return 1.0f / (1.0f + std::exp(-z));
}

// z[o] += sum_i a[i] * w[i * n_out + o] + bias[o]: DSSTNE's [input][output] weight layout.
void add_source(const std::vector<float>& a, const DsstneWeight& w, std::vector<float>& z) {
  const size_t n_out = w.width;
  ASSERT_EQ(a.size(), w.height);
  ASSERT_EQ(z.size(), n_out);
  for (size_t o = 0; o < n_out; ++o) {
    double s = w.bias[o];
    for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * w.weights[i * n_out + o];
    z[o] += float(s);
  }
}

std::vector<float> map_values(std::vector<float> z, const std::function<float(float)>& f) {
  for (auto& v : z) v = f(v);
  return z;
}

// Loads `path`, binds `input` to the input layer and returns the scores of `layer` per example.
std::vector<std::vector<float>> predict(const std::string& path, const ExampleSet& input,
                                        const std::string& layer) {
  NetworkFile file = read_network_file(path);
  EXPECT_FALSE(file.training.present);  // a DSSTNE file has no training state
  auto backend = make_backend("cpu", 2);
  std::vector<ExampleSet> sets{input};
  const BoundData bound = bind_datasets(file.spec, sets, /*need_outputs=*/false, "test input");
  Network net(*backend, file.spec, bound.sparse_inputs());
  net.load_arrays(file);
  std::vector<std::vector<float>> out;
  Predictor predictor(net, bound, /*minibatch=*/2);  // 3 examples: a full and a short batch
  const uint32_t units = net.layer(layer).units();
  predictor.run(layer, [&](uint64_t first, uint32_t rows, const float* scores) {
    EXPECT_EQ(first, out.size());
    for (uint32_t r = 0; r < rows; ++r)
      out.emplace_back(scores + size_t(r) * units, scores + size_t(r + 1) * units);
  });
  return out;
}

void expect_rows_near(const std::vector<std::vector<float>>& got,
                      const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < want.size(); ++r) {
    ASSERT_EQ(got[r].size(), want[r].size()) << "example " << r;
    for (size_t j = 0; j < want[r].size(); ++j)
      EXPECT_NEAR(got[r][j], want[r][j], 1e-5f) << "example " << r << ", unit " << j;
  }
}

// Input(3, dense) -> Hidden(2, Tanh) -> Output(2, Sigmoid), the output also fed straight from the
// input: three weights, stored Hidden<-Input, Output<-Hidden, Output<-Input.
DsstneNetwork two_source_network() {
  DsstneNetwork net;
  net.name = "two-source";
  net.error_function = 2;  // CrossEntropy
  net.layers = {dsstne_fc_layer("Input", 0, 3, {}, 0, "in"),
                dsstne_fc_layer("Hidden", 1, 2, {"Input"}, 1),
                dsstne_fc_layer("Output", 2, 2, {"Hidden", "Input"}, 0, "out")};
  net.weights = {dsstne_fc_weight("Input", 3, "Hidden", 2, -0.3f, 0.1f, 0.1f),
                 dsstne_fc_weight("Hidden", 2, "Output", 2, 0.5f, -0.2f, -0.2f),
                 dsstne_fc_weight("Input", 3, "Output", 2, 0.05f, 0.05f, 0.3f)};
  return net;
}

TEST(DsstneNetwork, DenseInputTwoSourcesPredictsHandComputedOutputs) {
  TempDir dir;
  const DsstneNetwork written = two_source_network();
  write_dsstne_network(dir.file("net.nc"), written);
  const std::vector<std::vector<float>> x = {
      {1.0f, 0.5f, -1.0f}, {0.0f, 2.0f, 0.25f}, {-0.5f, 0.0f, 3.0f}};
  std::vector<float> flat;
  for (const auto& row : x) flat.insert(flat.end(), row.begin(), row.end());

  std::vector<std::vector<float>> want_hidden, want_out;
  for (const auto& a : x) {
    std::vector<float> zh(2, 0.0f);
    add_source(a, written.weights[0], zh);
    const std::vector<float> h = map_values(zh, [](float z) { return std::tanh(z); });
    std::vector<float> zo(2, 0.0f);
    add_source(h, written.weights[1], zo);
    add_source(a, written.weights[2], zo);
    want_hidden.push_back(h);
    want_out.push_back(map_values(zo, sigmoid));
  }
  // One value worked out on paper, so the reference above is itself checked: example 0's hidden
  // unit 0 is tanh(1*(-0.3) + 0.5*(-0.1) + (-1)*0.1 + 0.1) = tanh(-0.35).
  ASSERT_NEAR(want_hidden[0][0], std::tanh(-0.35f), 1e-6f);

  const ExampleSet input = dense_set("in", 3, flat);
  expect_rows_near(predict(dir.file("net.nc"), input, "Output"), want_out);
  expect_rows_near(predict(dir.file("net.nc"), input, "Hidden"), want_hidden);
}

TEST(DsstneNetwork, SparseAnalogInputReluLinear) {
  TempDir dir;
  DsstneNetwork net;
  net.error_function = 1;  // L2
  DsstneLayer in = dsstne_fc_layer("Input", 0, 5, {}, 0, "in");
  in.attributes = 1;  // Sparse
  net.layers = {in, dsstne_fc_layer("Hidden", 1, 3, {"Input"}, 2),
                dsstne_fc_layer("Scores", 2, 4, {"Hidden"}, 3, "out")};
  net.weights = {dsstne_fc_weight("Input", 5, "Hidden", 3, -0.7f, 0.1f, -0.1f),
                 dsstne_fc_weight("Hidden", 3, "Scores", 4, 0.3f, -0.05f, 0.2f)};
  write_dsstne_network(dir.file("net.nc"), net);

  const std::vector<std::vector<uint32_t>> idx = {{0, 3}, {4}, {1, 2, 4}};
  const std::vector<std::vector<float>> val = {{2.0f, -1.0f}, {0.5f}, {1.0f, 1.5f, -2.0f}};
  std::vector<std::vector<float>> want;
  for (size_t r = 0; r < idx.size(); ++r) {
    std::vector<float> a(5, 0.0f);
    for (size_t k = 0; k < idx[r].size(); ++k) a[idx[r][k]] = val[r][k];
    std::vector<float> zh(3, 0.0f);
    add_source(a, net.weights[0], zh);
    const std::vector<float> h = map_values(zh, [](float z) { return z > 0.0f ? z : 0.0f; });
    std::vector<float> zo(4, 0.0f);
    add_source(h, net.weights[1], zo);
    want.push_back(zo);  // Linear
  }
  // The output layer need not be called "Output".
  expect_rows_near(predict(dir.file("net.nc"), sparse_set("in", 5, idx, val), "Scores"), want);
}

// DSSTNE writes weights in creation order. A file listing them otherwise must either still load
// them by their layer names or be refused with a message naming them; never load them swapped.
TEST(DsstneNetwork, WeightsOutOfCreationOrderAreNeverSwapped) {
  TempDir dir;
  const DsstneNetwork written = two_source_network();
  DsstneNetwork reordered = written;
  std::swap(reordered.weights[1], reordered.weights[2]);  // Output<-Input before Output<-Hidden
  write_dsstne_network(dir.file("net.nc"), reordered);
  write_dsstne_network(dir.file("ordered.nc"), written);
  const ExampleSet input =
      dense_set("in", 3, {1.0f, 0.5f, -1.0f, 0.0f, 2.0f, 0.25f, 3.0f, 1.0f, 0.0f});
  std::vector<std::vector<float>> got;
  try {
    got = predict(dir.file("net.nc"), input, "Output");
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'Input' -> 'Output'"), std::string::npos) << what;
    return;
  }
  expect_rows_near(got, predict(dir.file("ordered.nc"), input, "Output"));
}

}  // namespace
}  // namespace nn::test
