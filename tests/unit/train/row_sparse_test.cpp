// Row-sparse updates of sparse inputs' matrices (train/row_sparse.h) in whole training runs: the
// batch's distinct items, which matrices take the row-sparse path and why others do not, and the
// trained weights against the dense update (equal bit for bit for SGD and AdaGrad, to float
// rounding for the rules caught up in closed form, through a mid-epoch stop and a resume), and
// the lazy mode's documented semantics.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend/counting_backend.h"
#include "core/error.h"
#include "core/stop_request.h"
#include "data/batch.h"
#include "io/network_file.h"
#include "layers/input_layer.h"
#include "model/model_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

TEST(IndexTouched, DistinctIndicesAscendingAndEachEntrysPosition) {
  SparseBatch b;
  b.rows = 3;
  b.cols = 50;
  b.row_ptr = {0, 3, 5, 8};
  b.index = {40, 7, 40, 3, 7, 49, 0, 7};
  std::vector<uint32_t> mark;
  index_touched(b, mark);
  EXPECT_TRUE(b.indexed);
  EXPECT_EQ(b.touched, (std::vector<uint32_t>{0, 3, 7, 40, 49}));
  ASSERT_EQ(b.slot.size(), b.index.size());
  for (size_t e = 0; e < b.index.size(); ++e) EXPECT_EQ(b.touched[b.slot[e]], b.index[e]) << e;
  EXPECT_TRUE(std::all_of(mark.begin(), mark.end(), [](uint32_t m) { return m == 0; }))
      << "the scratch is left zero for the next batch";
  // The entries grouped by slot, entry order within a slot: [offsets | entries | rows].
  // Slots: 0 -> {6}, 3 -> {3}, 7 -> {1, 4, 7}, 40 -> {0, 2}, 49 -> {5}.
  EXPECT_EQ(b.slot_groups, (std::vector<uint32_t>{0, 1, 2, 5, 7, 8,           // offsets
                                                  6, 3, 1, 4, 7, 0, 2, 5,     // entries
                                                  2, 1, 0, 1, 2, 0, 0, 2}));  // their rows
  b.index.push_back(50);                                                      // outside the columns
  EXPECT_THROW(index_touched(b, mark), DataError);
}

// An autoencoder over a 300-item catalog whose examples use items 0..199 only, so most rows of
// the input matrix go untouched for many steps and some never are touched.
const char* kJson = R"({"ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "items", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 12, "Activation": "Tanh"},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "items",
     "Activation": "Sigmoid"}]})";

std::vector<ExampleSet> catalog() {
  auto rows = random_rows(11, 96, 200, 4);
  return {sparse_set("items", 300, rows)};
}

TrainOptions options(OptimizerKind kind, SparseUpdateMode mode, float lambda = 0.0f) {
  TrainOptions o;
  o.epochs = 3;
  o.minibatch = 8;
  o.optimizer.kind = kind;
  o.optimizer.alpha = kind == OptimizerKind::SGD || kind == OptimizerKind::Momentum ||
                              kind == OptimizerKind::Nesterov
                          ? 0.2f
                          : 0.01f;
  o.optimizer.lambda = lambda;
  o.optimizer.mu = 0.9f;
  o.seed = 5;
  o.progress_seconds = 0;
  o.sparse_update = mode;
  return o;
}

struct Trained {
  std::vector<float> input_weights, other_weights;
  std::vector<std::string> log;
};

// `backend`: the CPU backend when null.
Trained train(OptimizerKind kind, SparseUpdateMode mode, float lambda = 0.0f,
              std::unique_ptr<Backend> backend = nullptr) {
  Fixture f(kJson, catalog(), 7, std::move(backend));
  Trained r;
  {
    TrainingLoop t(*f.net, f.bound, options(kind, mode, lambda),
                   [&r](const std::string& line) { r.log.push_back(line); });
    t.run();
  }
  for (Parameter* p : f.net->parameters()) {
    const auto v = p->value.to_host();
    auto& into = p->name == "Hidden<-Input:weights" ? r.input_weights : r.other_weights;
    into.insert(into.end(), v.begin(), v.end());
    // The trainer gave the matrix its dense gradient back.
    EXPECT_EQ(p->grad.size(), p->size()) << p->name;
    EXPECT_FALSE(p->row_grad.enabled) << p->name;
  }
  return r;
}

bool logged(const Trained& r, const std::string& text) {
  for (const auto& line : r.log)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - b[i]) / (1e-3 + std::fabs(double(b[i]))));
  return worst;
}

TEST(RowSparseTraining, SgdAndAdaGradEqualTheDenseUpdateBitForBit) {
  for (const OptimizerKind kind : {OptimizerKind::SGD, OptimizerKind::AdaGrad}) {
    SCOPED_TRACE(to_string(kind));
    const Trained dense = train(kind, SparseUpdateMode::Dense);
    const Trained rows = train(kind, SparseUpdateMode::Exact);
    EXPECT_TRUE(logged(rows, "row-sparse update of Hidden<-Input:weights (Exact: equal to the"));
    EXPECT_FALSE(logged(dense, "row-sparse"));
    EXPECT_EQ(rows.input_weights, dense.input_weights);
    EXPECT_EQ(rows.other_weights, dense.other_weights);
  }
}

// On CUDA the row kernels are opt-in (backend/cuda_paths.h: slower than dense updates on an
// H200): Exact is carried out as Dense (the same values) unless NN_CUDA_ROW_SPARSE=1; Lazy, asked
// by name, stays.
TEST(RowSparseTraining, OnCudaExactRunsDenseUntilTheRowKernelsAreTurnedOn) {
  auto posed_cuda = [] {
    auto b = std::make_unique<CountingBackend>();
    b->posed_name = "cuda";
    return b;
  };
  unsetenv("NN_CUDA_ROW_SPARSE");
  const Trained dense = train(OptimizerKind::SGD, SparseUpdateMode::Dense);
  const Trained off = train(OptimizerKind::SGD, SparseUpdateMode::Exact, 0.0f, posed_cuda());
  EXPECT_TRUE(logged(off,
                     "dense updates of the sparse inputs' matrices: the CUDA backend's "
                     "row-sparse kernels are off by default (slower than dense updates on a "
                     "GPU; NN_CUDA_ROW_SPARSE=1 turns them on)"));
  EXPECT_FALSE(logged(off, "row-sparse update of"));
  EXPECT_EQ(off.input_weights, dense.input_weights);
  const Trained lazy = train(OptimizerKind::SGD, SparseUpdateMode::Lazy, 0.0f, posed_cuda());
  EXPECT_TRUE(logged(lazy, "row-sparse update of Hidden<-Input:weights (Lazy"));
  setenv("NN_CUDA_ROW_SPARSE", "1", 1);
  const Trained on = train(OptimizerKind::SGD, SparseUpdateMode::Exact, 0.0f, posed_cuda());
  unsetenv("NN_CUDA_ROW_SPARSE");
  EXPECT_TRUE(logged(on, "row-sparse update of Hidden<-Input:weights (Exact"));
  EXPECT_EQ(on.input_weights, dense.input_weights);
}

TEST(RowSparseTraining, DecayingRulesCaughtUpEqualTheDenseUpdateToRounding) {
  for (const OptimizerKind kind : {OptimizerKind::Momentum, OptimizerKind::Nesterov,
                                   OptimizerKind::RMSProp, OptimizerKind::AdaDelta}) {
    SCOPED_TRACE(to_string(kind));
    const Trained dense = train(kind, SparseUpdateMode::Dense);
    const Trained rows = train(kind, SparseUpdateMode::Exact);
    EXPECT_TRUE(logged(rows, "skipped steps caught up in closed form"));
    EXPECT_LT(max_relative_difference(rows.input_weights, dense.input_weights), 1e-4);
    EXPECT_LT(max_relative_difference(rows.other_weights, dense.other_weights), 1e-4);
    EXPECT_NE(rows.input_weights, std::vector<float>(rows.input_weights.size(), 0.0f));
  }
}

TEST(RowSparseTraining, AdamAndDecayKeepTheDenseUpdateUnlessLazy) {
  const Trained dense = train(OptimizerKind::Adam, SparseUpdateMode::Dense);
  const Trained exact = train(OptimizerKind::Adam, SparseUpdateMode::Exact);
  EXPECT_TRUE(logged(exact,
                     "dense update of Hidden<-Input:weights: Adam's skipped steps have no "
                     "closed form"));
  EXPECT_EQ(exact.input_weights, dense.input_weights);
  const Trained decay = train(OptimizerKind::SGD, SparseUpdateMode::Exact, 0.01f);
  EXPECT_TRUE(logged(decay, "L1/L2 decay moves every row"));
  EXPECT_EQ(decay.input_weights,
            train(OptimizerKind::SGD, SparseUpdateMode::Dense, 0.01f).input_weights);
}

TEST(RowSparseTraining, LazyAdamLeavesUntouchedRowsAsTheyWere) {
  const Fixture start(kJson, catalog(), 7);
  const auto initial = start.net->parameters()[0]->value.to_host();
  const Trained lazy = train(OptimizerKind::Adam, SparseUpdateMode::Lazy);
  const Trained dense = train(OptimizerKind::Adam, SparseUpdateMode::Dense);
  EXPECT_TRUE(logged(lazy, "(Lazy: untouched rows' optimizer state is not decayed)"));
  ASSERT_EQ(lazy.input_weights.size(), size_t(300) * 12);
  ASSERT_EQ(initial.size(), lazy.input_weights.size());
  // Items 200..299 appear in no example: lazily never updated; the dense Adam moved them while
  // their first moment decayed (its starting value is 0, so here they stay too).
  for (size_t e = size_t(200) * 12; e < lazy.input_weights.size(); ++e)
    ASSERT_EQ(lazy.input_weights[e], initial[e]) << e;
  // Touched rows differ from the dense run (their state did not decay between uses) but not by
  // much: the same optimizer on the same data.
  EXPECT_NE(lazy.input_weights, dense.input_weights);
  EXPECT_LT(max_relative_difference(lazy.other_weights, dense.other_weights), 1.0);
}

TEST(RowSparseTraining, MatricesThatCannotBeRowSparseSayWhy) {
  // A shared (transposed) matrix and WeightNorm keep the dense update.
  const char* json = R"({"ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "items", "Sparse": true},
      {"Name": "Hidden", "Kind": "Hidden", "N": 12, "Activation": "Tanh", "WeightNorm": 2.0},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "items",
       "Activation": "Sigmoid"}]})";
  Fixture f(json, catalog(), 7);
  std::vector<std::string> log;
  TrainingLoop t(*f.net, f.bound, options(OptimizerKind::SGD, SparseUpdateMode::Exact),
                 [&log](const std::string& line) { log.push_back(line); });
  t.run();
  bool said = false;
  for (const auto& line : log)
    said |= line.find("WeightNorm constrains whole columns") != std::string::npos;
  EXPECT_TRUE(said);
}

// A run stopped mid-epoch (its checkpoint written with every row caught up) and resumed ends
// where the uninterrupted run ends.
TEST(RowSparseTraining, StopAndResumeMidEpochMatchesOneRun) {
  const std::string dir = ::testing::TempDir();
  const std::string name = dir + "/row_sparse_stop";
  const Trained whole = train(OptimizerKind::RMSProp, SparseUpdateMode::Exact);

  Fixture f(kJson, catalog(), 7);
  TrainOptions o = options(OptimizerKind::RMSProp, SparseUpdateMode::Exact);
  o.stop_checkpoint_name = name;
  std::string checkpoint;
  {
    TrainingLoop t(*f.net, f.bound, o, [](const std::string&) {});
    t.on_step = [](uint64_t step) {
      if (step == 17) request_stop(15);  // mid-epoch 2 (12 batches an epoch)
    };
    t.run();
    ASSERT_NE(t.stopped(), 0);
    checkpoint = t.stop_checkpoint();
  }
  clear_stop_request();
  ASSERT_FALSE(checkpoint.empty());
  const NetworkFile file = read_network_file(checkpoint);
  Fixture g(kJson, catalog(), 99);
  g.net->load_arrays(file);
  TrainingLoop t(*g.net, g.bound, o, [](const std::string&) {});
  t.restore(file.training, checkpoint);
  t.run();
  for (Parameter* p : g.net->parameters()) {
    if (p->name != "Hidden<-Input:weights") continue;
    EXPECT_LT(max_relative_difference(p->value.to_host(), whole.input_weights), 1e-4);
  }
}

}  // namespace
}  // namespace nn::test
