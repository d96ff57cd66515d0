// The scaling cost model (model/link_model.h, train/scaling_plan.h): ring collectives by hand,
// the presets, and plans of small networks: compute divided as each mode divides it, a
// data-parallel all-reduce hidden behind the backward pass or not, a split layer's
// collectives, memory per rank, the epoch line.
#include "train/scaling_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace nn {
namespace {

LinkModel link(double latency, double bandwidth) {
  return {"test", latency, bandwidth, "by hand"};
}

TEST(LinkModel, RingCollectivesByHand) {
  const LinkModel l = link(1e-5, 1e9);
  // 4 ranks, 8 MB: all-reduce 6 hops of 2 MB, all-gather 3 hops of 2 MB.
  EXPECT_NEAR(all_reduce_seconds(l, 8e6, 4), 6 * 1e-5 + 6 * 2e6 / 1e9, 1e-12);
  EXPECT_NEAR(all_gather_seconds(l, 8e6, 4), 3 * 1e-5 + 3 * 2e6 / 1e9, 1e-12);
  EXPECT_EQ(all_reduce_seconds(l, 8e6, 1), 0.0);
  EXPECT_EQ(all_gather_seconds(l, 0.0, 4), 0.0);
}

TEST(LinkModel, PresetsByNameAndUnknownNamesListTheChoices) {
  EXPECT_EQ(link_preset("NVLink-H100").name, "nvlink-h100");
  EXPECT_GT(link_preset("nvlink-h100").bytes_per_s, link_preset("ib-ndr").bytes_per_s);
  EXPECT_GT(link_preset("eth-10g").bytes_per_s, link_preset("eth-1g").bytes_per_s);
  for (const LinkModel& l : link_presets()) {
    EXPECT_GT(l.bytes_per_s, 0.0) << l.name;
    EXPECT_GT(l.latency_s, 0.0) << l.name;
    EXPECT_FALSE(l.source.empty()) << l.name;
  }
  try {
    link_preset("carrier-pigeon");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("eth-10g"), std::string::npos) << e.what();
  }
}

LayerShape shape(const std::string& name, LayerKind kind, uint32_t units,
                 std::vector<std::string> sources = {}) {
  LayerShape l;
  l.name = name;
  l.kind = kind;
  l.units = units;
  l.sources = std::move(sources);
  return l;
}

LayerCostInput cost_input(const std::string& name, uint64_t units, uint64_t in_units,
                          bool from_input, bool output, ParallelMode mode) {
  LayerCostInput c;
  c.name = name;
  c.fully_connected = true;
  c.output = output;
  c.units = units;
  c.sources.push_back({in_units, from_input, !from_input});
  c.requested = mode;
  return c;
}

// Dense input 1,000 -> Hidden 1,000 -> Output 1,000, batch 256, SGD, on a machine of 1 TFLOP/s
// and 100 GB/s.
ScalingInputs three_layers(int ranks, ParallelMode hidden, ParallelMode output) {
  ScalingInputs in;
  in.shapes = {shape("In", LayerKind::Input, 1000), shape("H", LayerKind::Hidden, 1000, {"In"}),
               shape("Out", LayerKind::Output, 1000, {"H"})};
  in.layers = {cost_input("H", 1000, 1000, true, false, hidden),
               cost_input("Out", 1000, 1000, false, true, output)};
  in.settings.ranks = ranks;
  in.settings.minibatch = 256;
  in.settings.training = true;
  in.optimizer = OptimizerKind::SGD;
  in.peaks = {1e12, 1e12, 100e9};
  in.peaks_source = "by hand";
  in.examples = 2560;
  return in;
}

TEST(ScalingPlan, OneRankIsTheFloorOfTheStep) {
  const ScalingInputs in = three_layers(1, ParallelMode::Auto, ParallelMode::Auto);
  const ScalingPlan p = plan_scaling(in, link(1e-5, 1e9));
  const double floor = step_cost(in.shapes, 256, OptimizerKind::SGD, false).floor_seconds(in.peaks);
  EXPECT_DOUBLE_EQ(p.step_one_s, floor);
  EXPECT_DOUBLE_EQ(p.step_s, floor);
  EXPECT_DOUBLE_EQ(p.epoch_s, 10 * floor);  // 2,560 examples in minibatches of 256
}

TEST(ScalingPlan, DataParallelDividesTheRowsNotTheUpdateAndPaysTheAllReduce) {
  const ScalingInputs in = three_layers(4, ParallelMode::Data, ParallelMode::Data);
  const LinkModel slow = link(1e-5, 1e8);
  const ScalingPlan p = plan_scaling(in, slow);
  ASSERT_EQ(p.layers.size(), 2u);
  const StepCost quarter = step_cost(in.shapes, 64, OptimizerKind::SGD, false);
  const StepCost whole = step_cost(in.shapes, 256, OptimizerKind::SGD, false);
  for (const LayerScaling& l : p.layers) {
    EXPECT_FALSE(l.model_parallel);
    double rows = 0, update = 0;
    for (const PhaseCost& c : quarter.phases)
      if (c.layer == l.layer && c.phase != "update") rows += StepCost::floor_seconds(c, in.peaks);
    for (const PhaseCost& c : whole.phases)
      if (c.layer == l.layer && c.phase == "update") update += StepCost::floor_seconds(c, in.peaks);
    EXPECT_NEAR(l.compute_s, rows + update, 1e-15) << l.layer;
    // 1,001 x 1,000 weights and biases, 4 bytes each.
    EXPECT_NEAR(l.comm_s, all_reduce_seconds(slow, 1001.0 * 1000 * 4, 4), 1e-15) << l.layer;
    EXPECT_NEAR(l.memory_bytes, 1001.0 * 1000 * 4 * 2 + 2.0 * 64 * 1000 * 4, 1.0) << l.layer;
  }
  // On so slow a link the all-reduces cannot hide behind the backward pass: the step is compute
  // plus what sticks out past it.
  EXPECT_GT(p.exposed_comm_s, 0.0);
  EXPECT_NEAR(p.step_s, p.layers[0].compute_s + p.layers[1].compute_s + p.exposed_comm_s, 1e-15);
  EXPECT_GT(p.step_s, p.step_one_s) << "a slow link makes 4 ranks slower than one";
  EXPECT_NE(p.limit.find("all-reduce"), std::string::npos) << p.limit;
  // A fast link hides them: 4 ranks beat one.
  const ScalingPlan fast = plan_scaling(in, link(1e-7, 1e12));
  EXPECT_LT(fast.exposed_comm_s, p.exposed_comm_s);
  EXPECT_LT(fast.step_s, fast.step_one_s);
}

TEST(ScalingPlan, ModelParallelDividesTheUnitsAndBlocksOnItsCollectives) {
  const ScalingInputs in = three_layers(4, ParallelMode::Data, ParallelMode::Model);
  const LinkModel l = link(1e-5, 1e9);
  const ScalingPlan p = plan_scaling(in, l);
  ASSERT_EQ(p.layers.size(), 2u);
  const LayerScaling& out = p.layers[1];
  EXPECT_TRUE(out.model_parallel);
  // Every row through a quarter of its units; its source keeps all of its 1,000.
  std::vector<LayerShape> split = in.shapes;
  split[2].units = 250;
  double quarter = 0;
  for (const PhaseCost& c : step_cost(split, 256, OptimizerKind::SGD, false).phases)
    if (c.layer == "Out") quarter += StepCost::floor_seconds(c, in.peaks);
  EXPECT_NEAR(out.compute_s, quarter, 1e-15);
  // The Hidden layer's activations gathered and its delta scattered back: 256 x 1,000 floats
  // each; an Output layer exchanges nothing more (Sigmoid: no row sums).
  EXPECT_NEAR(out.comm_s, 2 * all_gather_seconds(l, 256.0 * 1000 * 4, 4), 1e-15);
  // A quarter of the units, every row: weights, gradient (SGD: no state) and activations.
  EXPECT_NEAR(out.memory_bytes, 1001.0 * 1000 * 4 * 2 / 4 + 2.0 * (256 * 250 + 256 * 1000) * 4,
              1.0);
  // With a split layer the data-parallel all-reduce waits for the end of the backward pass.
  const double hidden_all_reduce = all_reduce_seconds(l, 1001.0 * 1000 * 4, 4);
  EXPECT_NEAR(p.exposed_comm_s, out.comm_s + hidden_all_reduce, 1e-15);
  // Split, the hidden layer would hand its activations to the ranks' rows and take their deltas
  // back (its source, an input, costs nothing: every rank reads the whole minibatch).
  EXPECT_NEAR(p.layers[0].other_comm_s, 2 * all_gather_seconds(l, 256.0 * 1000 * 4, 4), 1e-15);
}

TEST(ScalingPlan, ARowSparseInputExchangesOnlyTheTouchedRowsAfterTheBackwardPass) {
  // Sparse input of 100,000 items (20 non-zeros a row) -> Hidden 100 -> Output 100, 2 ranks.
  ScalingInputs in = three_layers(2, ParallelMode::Data, ParallelMode::Data);
  in.shapes[0].units = 100000;
  in.shapes[0].sparse_input = true;
  in.shapes[0].nnz_per_row = 20;
  in.shapes[0].touched_rows = 3000;
  in.shapes[1].units = 100;
  in.shapes[2].units = 100;
  in.layers = {cost_input("H", 100, 100000, true, false, ParallelMode::Data),
               cost_input("Out", 100, 100, false, true, ParallelMode::Data)};
  const LinkModel l = link(1e-4, 1e8);
  const ScalingPlan dense = plan_scaling(in, l);
  // Updated densely: the whole 100,001 x 100 matrix in the all-reduce.
  EXPECT_NEAR(dense.layers[0].comm_s, all_reduce_seconds(l, 100001.0 * 100 * 4, 2), 1e-15);

  in.shapes[0].row_sparse_update = true;
  const ScalingPlan rows = plan_scaling(in, l);
  // Row by row: the ranks agree on the rows (a count, then each rank's indices: 128 rows x 20
  // non-zeros, at most the 3,000 touched) and sum the 3,000 touched rows; the bias stays dense.
  const double agree = all_gather_seconds(l, 8.0 * 2, 2) + all_gather_seconds(l, 2560.0 * 2 * 4, 2);
  const double touched = all_reduce_seconds(l, 3000.0 * 100 * 4, 2);
  const double bias = all_reduce_seconds(l, 100.0 * 4, 2);
  EXPECT_NEAR(rows.layers[0].comm_s, agree + touched + bias, 1e-15);
  EXPECT_LT(rows.layers[0].comm_s, dense.layers[0].comm_s / 10);
  // That exchange follows the backward pass: it is exposed whatever the backward pass takes.
  EXPECT_GE(rows.exposed_comm_s, agree + touched - 1e-15);
  EXPECT_LT(rows.step_s, dense.step_s);
}

TEST(ScalingPlan, TheReportEndsWithThePredictedEpoch) {
  const ScalingInputs in = three_layers(2, ParallelMode::Auto, ParallelMode::Auto);
  const ScalingPlan p = plan_scaling(in, link_preset("eth-10g"));
  const std::vector<std::string> lines = format_scaling_plan(p, in);
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[0].rfind("plan for 2 ranks over eth-10g", 0), 0u) << lines[0];
  const std::string& last = lines.back();
  EXPECT_EQ(last.rfind("predicted epoch: ", 0), 0u) << last;
  EXPECT_NE(last.find(" s on 2 ranks (1 rank: "), std::string::npos) << last;
}

}  // namespace
}  // namespace nn
