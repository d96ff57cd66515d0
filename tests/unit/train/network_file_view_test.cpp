// Network::to_file_view and TrainingLoop::snapshot_view: on a host-memory backend the weights and
// their optimizer state are written from the network's own arrays (no second copy of a large
// network when it is saved), the file being the same as one written from copies; on a device
// backend they are copied as before; a non-finite value is still refused before anything is
// written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "backend/counting_backend.h"
#include "core/error.h"
#include "io/network_file.h"
#include "model/model_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

namespace fs = std::filesystem;

const char* kAutoencoder = R"({
  "Name": "ae", "ErrorFunction": "CrossEntropy",
  "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid"},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"}
  ]})";

std::vector<std::vector<uint32_t>> rows_of(size_t n) {
  std::vector<std::vector<uint32_t>> rows(n);
  for (size_t i = 0; i < n; ++i) rows[i] = {uint32_t(i % 20), uint32_t((i * 7 + 3) % 20)};
  return rows;
}

// A network trained one epoch with Adam: every weight has two state arrays.
struct Trained {
  Fixture f;
  std::unique_ptr<TrainingLoop> loop;
  explicit Trained(std::unique_ptr<Backend> backend = nullptr)
      : f(kAutoencoder,
          {sparse_set("input", 20, rows_of(64)), sparse_set("output", 20, rows_of(64))}, 7,
          std::move(backend)) {
    TrainOptions o;
    o.epochs = 1;
    o.minibatch = 16;
    o.optimizer.kind = OptimizerKind::Adam;
    o.optimizer.alpha = 0.01f;
    o.optimizer.mu = 0.9f;
    o.optimizer.mu1 = 0.999f;
    o.progress_seconds = 0;
    loop = std::make_unique<TrainingLoop>(*f.net, f.bound, o, null_log());
    loop->run();
  }
};

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()) + ".nc")).string();
}

// A CPU backend that pads no rows, whatever NN_CPU_ROW_ALIGN says.
std::unique_ptr<Backend> unpadded_cpu() {
  auto be = make_backend("cpu", 2);
  be->set_row_alignment(1);
  return be;
}

TEST(NetworkFileView, AHostBackendsWeightsAreWrittenInPlaceAndTheFileIsTheSame) {
  Trained t(unpadded_cpu());
  const NetworkFile copy = t.loop->snapshot();
  const NetworkFile view = t.loop->snapshot_view();
  ASSERT_EQ(copy.weights.size(), 2u);
  ASSERT_EQ(view.weights.size(), 2u);
  std::vector<const float*> params;
  for (Parameter* p : t.f.net->parameters()) params.push_back(p->value.data());
  for (size_t i = 0; i < view.weights.size(); ++i) {
    const WeightArrays& v = view.weights[i];
    EXPECT_TRUE(v.weights.empty()) << "weights copied: " << i;
    EXPECT_TRUE(v.weight_state.empty()) << "state copied: " << i;
    ASSERT_EQ(v.weight_state_runs.size(), 2u);
    // The run is the parameter's own memory.
    EXPECT_NE(std::find(params.begin(), params.end(), v.weights_run.data), params.end()) << i;
    const FloatRun w = weights_of(v);
    ASSERT_EQ(w.size, copy.weights[i].weights.size());
    EXPECT_TRUE(std::equal(w.data, w.data + w.size, copy.weights[i].weights.begin())) << i;
  }
  const std::string a = temp_path("nn_view_copy"), b = temp_path("nn_view_in_place");
  write_network_file(a, copy);
  write_network_file(b, view);
  const NetworkFile ra = read_network_file(a), rb = read_network_file(b);
  ASSERT_EQ(ra.weights.size(), rb.weights.size());
  for (size_t i = 0; i < ra.weights.size(); ++i) {
    EXPECT_EQ(ra.weights[i].weights, rb.weights[i].weights) << i;
    EXPECT_EQ(ra.weights[i].bias, rb.weights[i].bias) << i;
    EXPECT_EQ(ra.weights[i].weight_state, rb.weights[i].weight_state) << i;
    EXPECT_EQ(ra.weights[i].weight_state.size(), 2u);
  }
  EXPECT_EQ(ra.training.step, rb.training.step);
  fs::remove(a);
  fs::remove(b);
}

// Padded rows (Parameter::padding) are not the file's layout: the view copies a padded matrix
// and its state without their padding, as the copy does, and points at the others.
TEST(NetworkFileView, APaddedMatrixIsCopiedWithoutItsPadding) {
  auto be = make_backend("cpu", 2);
  be->set_row_alignment(8);  // the 20 outputs held in rows of 24
  Trained t(std::move(be));
  ASSERT_TRUE(t.f.net->layer("Output").padded());
  const NetworkFile copy = t.loop->snapshot();
  const NetworkFile view = t.loop->snapshot_view();
  ASSERT_EQ(view.weights.size(), 2u);
  EXPECT_TRUE(view.weights[0].weights.empty());  // Input -> Hidden: unpadded, in place
  const WeightArrays& out = view.weights[1];     // Hidden -> Output: copied, unpadded
  EXPECT_EQ(out.weights.size(), size_t(8) * 20);
  EXPECT_EQ(out.weights, copy.weights[1].weights);
  EXPECT_EQ(out.weight_state, copy.weights[1].weight_state);
  EXPECT_EQ(out.bias.size(), 20u);
}

TEST(NetworkFileView, ADeviceBackendsWeightsAreCopied) {
  Trained t(std::make_unique<CountingBackend>(/*host_memory=*/false));
  const NetworkFile view = t.loop->snapshot_view();
  for (const WeightArrays& w : view.weights) {
    EXPECT_EQ(w.weights_run.data, nullptr);
    EXPECT_FALSE(w.weights.empty());
    EXPECT_EQ(w.weight_state.size(), 2u);
  }
}

TEST(NetworkFileView, ANonFiniteWeightReadInPlaceIsRefusedAndNothingIsWritten) {
  Trained t;
  Parameter* p = t.f.net->parameters().front();
  p->value.data()[3] = std::nanf("");
  const std::string path = temp_path("nn_view_nan");
  try {
    write_network_file(path, t.loop->snapshot_view());
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("NaN"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path));
}

}  // namespace
}  // namespace nn::test
