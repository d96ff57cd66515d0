// What the scaling cost model takes from measurements (train/scaling_plan.h, model/link_model.h,
// config/link_file.h): a link fitted to timed collectives and interpolated between them for its
// own ranks, the link file and its errors, compute scaled from a profiled run by each part's
// efficiency, and the data/model choice made by the predicted step times.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "config/link_file.h"
#include "core/error.h"
#include "model/link_model.h"
#include "model/parallel_plan.h"
#include "train/scaling_plan.h"

namespace nn {
namespace {

// Timings that follow the ring formulas exactly for `ranks` ranks.
std::vector<LinkSample> ring_samples(double latency, double bandwidth, int ranks) {
  std::vector<LinkSample> out;
  const double p = ranks;
  for (double bytes : {64.0, 4096.0, 262144.0, 4194304.0, 33554432.0}) {
    out.push_back(
        {"all_reduce", bytes, 2 * (p - 1) * latency + 2 * (p - 1) / p * bytes / bandwidth});
    out.push_back({"all_gather", bytes, (p - 1) * latency + (p - 1) / p * bytes / bandwidth});
    out.push_back({"reduce_scatter", bytes, (p - 1) * latency + (p - 1) / p * bytes / bandwidth});
  }
  return out;
}

TEST(LinkFit, RecoversTheLatencyAndBandwidthOfRingTimings) {
  for (int ranks : {2, 4}) {
    const LinkModel l = fit_link(ring_samples(50e-6, 1.15e9, ranks), ranks);
    // The smallest message carries a little bandwidth time too: within 1%.
    EXPECT_NEAR(l.latency_s, 50e-6, 0.5e-6) << ranks;
    EXPECT_NEAR(l.bytes_per_s, 1.15e9, 0.0115e9) << ranks;
    EXPECT_EQ(l.samples_ranks, ranks);
  }
  EXPECT_THROW(fit_link({{"all_reduce", 64, 1e-4}}, 2), ConfigError);  // one size
  EXPECT_THROW(fit_link(ring_samples(1e-5, 1e9, 2), 1), ConfigError);  // one rank
}

TEST(LinkFit, MeasuredTimingsAreInterpolatedForTheirOwnRanks) {
  LinkModel l{"measured", 1e-5, 1e9, "test"};
  l.samples = {
      {"all_reduce", 1000, 1e-3}, {"all_reduce", 1e6 + 1000, 3e-3}, {"reduce_scatter", 1000, 2e-3}};
  l.samples_ranks = 2;
  EXPECT_NEAR(all_reduce_seconds(l, 501000, 2), 2e-3, 1e-12);  // halfway
  EXPECT_NEAR(all_reduce_seconds(l, 10, 2), 1e-3, 1e-12);      // below: the smallest's time
  // Beyond the largest: at the last segment's bandwidth (2 ms per 1e6 bytes).
  EXPECT_NEAR(all_reduce_seconds(l, 2e6 + 1000, 2), 5e-3, 1e-12);
  // One sample: beyond it at the link's bandwidth.
  EXPECT_NEAR(reduce_scatter_seconds(l, 5e6, 2), 2e-3 + (5e6 - 1000) / 1e9, 1e-12);
  // Not measured (all_gather), or another number of ranks: the ring formulas.
  EXPECT_NEAR(all_gather_seconds(l, 1e6, 2), 1e-5 + 0.5e6 / 1e9, 1e-12);
  EXPECT_NEAR(all_reduce_seconds(l, 1e6, 4), 6e-5 + 1.5e6 / 1e9, 1e-12);
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "nn_link_" + std::to_string(::getpid()) + "_" + name;
}

TEST(LinkFile, RoundTripsThroughResolveLinkAndNamesWhatIsWrong) {
  LinkFile f;
  f.latency_s = 2e-4;
  f.bytes_per_s = 1.2e8;
  f.ranks = 2;
  f.source = "shaped veth";
  f.samples = ring_samples(2e-4, 1.2e8, 2);
  const std::string path = temp_path("ok.json");
  write_link_file(path, f);
  const LinkModel l = resolve_link(path);
  EXPECT_EQ(l.name, path);
  EXPECT_DOUBLE_EQ(l.latency_s, 2e-4);
  EXPECT_DOUBLE_EQ(l.bytes_per_s, 1.2e8);
  EXPECT_EQ(l.samples.size(), f.samples.size());
  EXPECT_EQ(l.samples_ranks, 2);
  EXPECT_EQ(l.source, "shaped veth");
  std::remove(path.c_str());

  const std::string bad = temp_path("bad.json");
  auto expect_error = [&](const std::string& text, const std::string& needle) {
    std::ofstream(bad) << text;
    try {
      resolve_link(bad);
      ADD_FAILURE() << "no error for " << text;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  };
  expect_error(R"({"format": "nn-link", "latency_s": 1e-5})", "bytes_per_s");
  expect_error(R"({"format": "nn-link", "latency_s": 1e-5, "bytes_per_s": -3})", "bytes_per_s");
  expect_error(R"({"format": "other", "latency_s": 1e-5, "bytes_per_s": 1e9})", "format");
  std::remove(bad.c_str());
  EXPECT_THROW(resolve_link(temp_path("missing.json")), IoError);
}

LayerCostInput fc(const std::string& name, uint64_t units, uint64_t in_units, bool from_input,
                  bool output) {
  LayerCostInput c;
  c.name = name;
  c.fully_connected = true;
  c.output = output;
  c.units = units;
  c.sources.push_back({in_units, from_input, !from_input});
  return c;
}

TEST(ParallelRule, PredictedTimesDecideAutoLayersAndKeysStillOverride) {
  std::vector<LayerCostInput> layers = {fc("H", 100, 100, true, false),
                                        fc("Out", 100, 100, false, true)};
  ParallelSettings s;
  s.ranks = 2;
  s.minibatch = 64;
  s.predicted = {{1e-3, 2e-3}, {3e-3, 1e-3}};  // H: data faster; Out: model faster
  s.predicted_basis = "over test";
  std::vector<LayerChoice> c = choose_parallel(layers, s);
  EXPECT_FALSE(c[0].model_parallel) << c[0].reason;
  EXPECT_TRUE(c[1].model_parallel) << c[1].reason;
  EXPECT_NE(c[1].reason.find("predicted 1.000 ms per step against 3.000 ms data parallel"),
            std::string::npos)
      << c[1].reason;
  EXPECT_NE(c[1].reason.find("over test"), std::string::npos) << c[1].reason;
  // The layer key wins over the prediction; without figures the bytes rule decides.
  layers[1].requested = ParallelMode::Data;
  EXPECT_FALSE(choose_parallel(layers, s)[1].model_parallel);
  s.predicted.clear();
  layers[1].requested = ParallelMode::Auto;
  EXPECT_NE(choose_parallel(layers, s)[1].reason.find("moves"), std::string::npos);
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

// Dense 1,000 -> Hidden 1,000 -> Output 1,000, batch 256, on 1 TFLOP/s and 100 GB/s.
ScalingInputs network(int ranks) {
  ScalingInputs in;
  in.shapes = {shape("In", LayerKind::Input, 1000), shape("H", LayerKind::Hidden, 1000, {"In"}),
               shape("Out", LayerKind::Output, 1000, {"H"})};
  in.layers = {fc("H", 1000, 1000, true, false), fc("Out", 1000, 1000, false, true)};
  in.layers[0].requested = ParallelMode::Data;
  in.layers[1].requested = ParallelMode::Data;
  in.settings.ranks = ranks;
  in.settings.minibatch = 256;
  in.settings.training = true;
  in.peaks = {1e12, 1e12, 100e9};
  in.examples = 2560;
  return in;
}

TEST(ScalingPlan, MeasuredComputeScalesEachPartByTheEfficiencyItReached) {
  ScalingInputs in = network(4);
  const LinkModel link{"test", 1e-9, 1e15, "fast"};
  const ScalingPlan floors = plan_scaling(in, link);
  // Every part measured at 3x its floor, and 0.5 ms of the step outside them.
  const StepCost one = step_cost(in.shapes, 256, OptimizerKind::SGD, false);
  double parts = 0;
  for (const PhaseCost& p : one.phases) {
    in.measured[{p.phase, p.layer}] += 3 * StepCost::floor_seconds(p, in.peaks);
    parts += 3 * StepCost::floor_seconds(p, in.peaks);
  }
  in.measured[{"data", "wait for batch"}] = 0.2e-3;  // not a modelled part: in the rest
  in.measured_step_s = parts + 0.5e-3;
  const ScalingPlan p = plan_scaling(in, link);
  EXPECT_DOUBLE_EQ(p.step_one_s, in.measured_step_s);
  EXPECT_NEAR(p.other_s, 0.5e-3, 1e-12);
  ASSERT_EQ(p.layers.size(), floors.layers.size());
  double compute = 0;
  for (size_t i = 0; i < p.layers.size(); ++i) {
    EXPECT_NEAR(p.layers[i].compute_s, 3 * floors.layers[i].compute_s, 1e-12) << i;
    compute += p.layers[i].compute_s;
  }
  EXPECT_NEAR(p.step_s, compute + p.other_s + p.exposed_comm_s, 1e-12);
  const std::vector<std::string> lines = format_scaling_plan(p, in);
  EXPECT_EQ(lines[1].rfind("compute measured: ", 0), 0u) << lines[1];
}

TEST(ScalingPlan, ADevicesMeasuredStepScalesEveryPartAlike) {
  ScalingInputs in = network(4);
  const LinkModel link{"test", 1e-6, 1e11, "fast"};
  const ScalingPlan floors = plan_scaling(in, link);
  in.compute_scale = 2.5;
  const ScalingPlan p = plan_scaling(in, link);
  EXPECT_NEAR(p.step_one_s, 2.5 * floors.step_one_s, 1e-15);
  for (size_t i = 0; i < p.layers.size(); ++i) {
    EXPECT_NEAR(p.layers[i].compute_s, 2.5 * floors.layers[i].compute_s, 1e-15) << i;
    EXPECT_NEAR(p.layers[i].comm_s, floors.layers[i].comm_s, 1e-15) << i;  // the link's alone
  }
  EXPECT_EQ(device_preset("H100-SXM").name, "h100-sxm");
  EXPECT_GT(device_preset("h200").peaks.bytes_per_s, device_preset("h100-sxm").peaks.bytes_per_s);
  try {
    device_preset("abacus");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("h100-sxm"), std::string::npos) << e.what();
  }
}

TEST(ScalingPlan, AutoLayersTakeTheModePredictedFaster) {
  for (const char* name : {"eth-1g", "nvlink-h100"}) {
    ScalingInputs in = network(4);
    in.layers[0].requested = ParallelMode::Auto;
    in.layers[1].requested = ParallelMode::Auto;
    const LinkModel link = link_preset(name);
    const ScalingPlan p = plan_scaling(in, link);
    const std::vector<ModeSeconds> modes = predict_modes(in, link);
    ASSERT_EQ(modes.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const bool model_faster =
          modes[i].model_compute + modes[i].model_comm < modes[i].data_compute + modes[i].data_comm;
      EXPECT_EQ(p.layers[i].model_parallel, model_faster) << name << " " << p.layers[i].reason;
      EXPECT_NE(p.layers[i].reason.find("predicted"), std::string::npos) << p.layers[i].reason;
    }
  }
}

}  // namespace
}  // namespace nn
