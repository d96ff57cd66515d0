// Model-parallel building blocks: the data/model rule and its cost model, position-keyed
// initial weights (a slice of the columns is exactly what the whole matrix holds there), the
// unit split, row slices of a host batch, and the merge of per-slice top-k candidates.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "core/error.h"
#include "layers/layer.h"
#include "layers/weighted_layer.h"
#include "model/batch_loader.h"
#include "model/parallel_plan.h"
#include "predict/predictor.h"

namespace nn::test {
namespace {

// Input (sparse, `in` units) -> one fully connected layer of `units`.
LayerCostInput fc(const std::string& name, uint64_t units, uint64_t in, bool from_input,
                  bool output) {
  LayerCostInput l;
  l.name = name;
  l.fully_connected = true;
  l.output = output;
  l.units = units;
  l.sources.push_back({in, from_input, !from_input});
  return l;
}

ParallelSettings settings(int ranks, uint32_t minibatch, uint64_t budget = 0) {
  ParallelSettings s;
  s.ranks = ranks;
  s.minibatch = minibatch;
  s.optimizer_states = 2;
  s.memory_budget = budget;
  return s;
}

TEST(ParallelPlan, OneProcessSplitsNothing) {
  const auto plan = choose_parallel({fc("Out", 1000000, 1024, false, true)}, settings(1, 1024));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_FALSE(plan[0].model_parallel);
  EXPECT_EQ(plan[0].reason, "one process");
}

TEST(ParallelPlan, CostModelCountsBytesPerStep) {
  // 2 ranks (f = 1/2), minibatch 100, a Hidden layer of 10 units over a hidden source of 20.
  const auto plan = choose_parallel({fc("H", 10, 20, false, false)}, settings(2, 100));
  // Data: all-reduce of (20 + 1) x 10 parameters: 2 f 4 210 = 840 bytes.
  EXPECT_EQ(plan[0].data_bytes, 840u);
  // Model: gather 0.5*4*100*20 = 4000, scatter dE/dx 4000, activations out and deltas back
  // 2 * 0.5*4*100*10 = 4000: 12000 bytes.
  EXPECT_EQ(plan[0].model_bytes, 12000u);
  EXPECT_FALSE(plan[0].model_parallel);  // data parallel moves fewer bytes
  // Replicated: 210 parameters x 4 bytes x (value, gradient, 2 Adam states).
  EXPECT_EQ(plan[0].replicated_bytes, 210u * 4 * 4);
}

TEST(ParallelPlan, WideOutputOverASmallMinibatchIsSplitForFewerBytes) {
  // 1,000,000 outputs over 128 hidden units, minibatch 256: model parallel moves activations
  // of 128 columns, data parallel 129 million gradients.
  const auto plan = choose_parallel({fc("Out", 1000000, 128, false, true)}, settings(2, 256));
  EXPECT_TRUE(plan[0].model_parallel) << plan[0].reason;
  EXPECT_LT(plan[0].model_bytes, plan[0].data_bytes);
  EXPECT_NE(plan[0].reason.find("model parallel: moves"), std::string::npos) << plan[0].reason;
}

TEST(ParallelPlan, WeightsBeyondTheMemoryBudgetAreSplit) {
  // Huge minibatch: model parallel would move more bytes, but 4 copies of 4 MB of weights
  // exceed a quarter of a 32 MiB budget.
  auto l = fc("Out", 1000, 1000, false, true);
  const auto by_bytes = choose_parallel({l}, settings(2, 100000));
  EXPECT_FALSE(by_bytes[0].model_parallel);
  const auto by_memory = choose_parallel({l}, settings(2, 100000, 32ull << 20));
  EXPECT_TRUE(by_memory[0].model_parallel);
  EXPECT_NE(by_memory[0].reason.find("memory budget"), std::string::npos) << by_memory[0].reason;
}

TEST(ParallelPlan, TheLayerKeyOverridesTheRule) {
  auto wide = fc("Out", 1000000, 128, false, true);
  wide.requested = ParallelMode::Data;
  EXPECT_FALSE(choose_parallel({wide}, settings(2, 256))[0].model_parallel);
  auto small = fc("H", 10, 20, false, false);
  small.requested = ParallelMode::Model;
  const auto plan = choose_parallel({small}, settings(2, 100));
  EXPECT_TRUE(plan[0].model_parallel);
  EXPECT_NE(plan[0].reason.find("\"Parallel\": \"Model\""), std::string::npos);
}

TEST(ParallelPlan, LayersThatCannotBeSplitStayDataParallelOrFailWhenForced) {
  auto l = fc("Out", 1000000, 128, false, true);
  l.cannot_split = "batch-normalised layers are not split";
  const auto plan = choose_parallel({l}, settings(2, 256));
  EXPECT_FALSE(plan[0].model_parallel);
  EXPECT_EQ(plan[0].reason, "data parallel: batch-normalised layers are not split");
  l.requested = ParallelMode::Model;
  try {
    choose_parallel({l}, settings(2, 256));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'Out'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch-normalised"), std::string::npos) << e.what();
  }
  LayerCostInput conv = l;
  conv.fully_connected = false;
  conv.requested = ParallelMode::Auto;
  EXPECT_EQ(choose_parallel({conv}, settings(2, 256))[0].reason,
            "data parallel: only fully connected layers are split");
}

TEST(ParallelPlan, KeepWholeLeavesAutoLayersDataParallel) {
  ParallelSettings s = settings(2, 256);
  s.keep_whole = "a validation set is used";
  auto l = fc("Out", 1000000, 128, false, true);
  EXPECT_EQ(choose_parallel({l}, s)[0].reason, "data parallel: a validation set is used");
  l.requested = ParallelMode::Model;
  EXPECT_TRUE(choose_parallel({l}, s)[0].model_parallel);
}

TEST(ParallelPlan, CommandFileDefaultAppliesToLayersWithoutTheirOwnKey) {
  ParallelSettings s = settings(2, 100);
  s.default_mode = ParallelMode::Model;
  auto small = fc("H", 10, 20, false, false);  // data parallel by bytes
  EXPECT_TRUE(choose_parallel({small}, s)[0].model_parallel);
  small.requested = ParallelMode::Data;  // the layer's own key wins
  EXPECT_FALSE(choose_parallel({small}, s)[0].model_parallel);
  auto bn = fc("B", 10, 20, false, false);
  bn.cannot_split = "batch-normalised layers are not split";
  EXPECT_FALSE(choose_parallel({bn}, s)[0].model_parallel);  // Model splits what can be split
  s.default_mode = ParallelMode::Data;
  EXPECT_FALSE(choose_parallel({fc("Out", 1000000, 128, false, true)}, s)[0].model_parallel);
}

TEST(ParallelPlan, PredictionSplitsOnlyForMemory) {
  ParallelSettings s = settings(2, 256);
  s.training = false;
  const auto plan = choose_parallel({fc("Out", 1000000, 128, false, true)}, s);
  EXPECT_EQ(plan[0].data_bytes, 0u);  // no gradients to reduce
  EXPECT_FALSE(plan[0].model_parallel);
}

TEST(ModelParallel, UnitRangesCoverTheLayerUnevenly) {
  for (uint32_t units : {1u, 7u, 131u, 1000000u})
    for (int ranks = 1; ranks <= 4; ++ranks) {
      uint32_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const auto [first, count] = unit_range(units, r, ranks);
        EXPECT_EQ(first, next);
        EXPECT_LE(count, (units + ranks - 1) / ranks);
        next += count;
      }
      EXPECT_EQ(next, units);
    }
}

TEST(ModelParallel, InitialWeightsOfASliceAreThoseOfTheWholeMatrix) {
  for (WeightInit init : {WeightInit::Xavier, WeightInit::Gaussian, WeightInit::SELU}) {
    LayerSpec l;
    l.weight_init = init;
    const size_t n_in = 5, n_out = 13;
    const auto whole = initial_weights(l, n_in, n_out, 42, weight_stream(2, 0));
    for (int ranks = 2; ranks <= 3; ++ranks)
      for (int r = 0; r < ranks; ++r) {
        const auto [first, count] = unit_range(uint32_t(n_out), r, ranks);
        const auto part = initial_weights(l, n_in, n_out, 42, weight_stream(2, 0), first, count);
        ASSERT_EQ(part.size(), n_in * count);
        for (size_t i = 0; i < n_in; ++i)
          for (size_t j = 0; j < count; ++j)
            ASSERT_EQ(part[i * count + j], whole[i * n_out + first + j]) << to_string(init);
      }
    // Different seeds, layers and connections draw different weights.
    EXPECT_NE(whole, initial_weights(l, n_in, n_out, 43, weight_stream(2, 0)));
    EXPECT_NE(whole, initial_weights(l, n_in, n_out, 42, weight_stream(3, 0)));
    EXPECT_NE(whole, initial_weights(l, n_in, n_out, 42, weight_stream(2, 1)));
  }
}

TEST(ModelParallel, SliceRowsOfAHostBatch) {
  HostBatch whole;
  whole.rows = 3;
  whole.sparse.resize(2);
  whole.dense.resize(2);
  whole.weights.resize(2);
  SparseBatch& s = whole.sparse[0];
  s.rows = 3;
  s.cols = 10;
  s.row_ptr = {0, 2, 2, 5};
  s.index = {1, 4, 0, 7, 9};
  s.value = {1, 2, 3, 4, 5};
  whole.dense[1] = {0, 1, 10, 11, 20, 21};
  whole.weights[1] = {0.5f, 1.5f, 2.5f};
  const HostBatch part = slice_rows(whole, 1, 2);
  EXPECT_EQ(part.rows, 2u);
  EXPECT_EQ(part.sparse[0].row_ptr, (std::vector<uint32_t>{0, 0, 3}));
  EXPECT_EQ(part.sparse[0].index, (std::vector<uint32_t>{0, 7, 9}));
  EXPECT_EQ(part.sparse[0].value, (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(part.dense[1], (std::vector<float>{10, 11, 20, 21}));
  EXPECT_EQ(part.weights[1], (std::vector<float>{1.5f, 2.5f}));
}

TEST(ModelParallel, MergedTopKOfOneRankIsItsOwn) {
  LocalCommunicator comm;
  TopK mine, merged;
  const uint32_t none = std::numeric_limits<uint32_t>::max();
  mine.index = {7, 3, none, 2, 9, 4};
  mine.score = {0.9f, 0.5f, -INFINITY, 0.7f, 0.7f, 0.1f};
  merge_top_k(comm, mine, 2, 3, merged);
  EXPECT_EQ(merged.index, mine.index);
  EXPECT_EQ(merged.score, mine.score);
}

}  // namespace
}  // namespace nn::test
