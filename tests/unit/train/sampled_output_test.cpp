// Sampled output training (train/sampled_output.h, train/negative_sampler.h): the sampled
// gradient is the full gradient restricted to the sampled columns (with the correction),
// accidental hits are removed, the column set is deterministic, unsampled columns and their
// optimizer state are untouched (lazy updates), a million-unit output trains in little memory,
// and the layers Sampling cannot run on are refused by name.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "backend/counting_backend.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "model/model_test_util.h"
#include "train/negative_sampler.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

std::string network(const char* activation, const char* sampling, uint32_t outputs = 40,
                    const char* hidden = R"("N": 6, "Activation": "Tanh")") {
  return std::string(R"({"ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Hidden", "Kind": "Hidden", )") +
         hidden + R"(},
      {"Name": "Output", "Kind": "Output", "N": )" +
         std::to_string(outputs) + R"(, "DataSet": "output", "Activation": ")" + activation + "\"" +
         (sampling[0] ? std::string(", \"Sampling\": ") + sampling : "") + "}]}";
}

TrainOptions one_step(uint32_t examples, OptimizerKind kind = OptimizerKind::SGD) {
  TrainOptions o;
  o.epochs = 1;
  o.minibatch = examples;  // one minibatch: one update
  o.optimizer.kind = kind;
  o.optimizer.alpha = 0.5f;
  o.optimizer.lambda = 0.0f;
  o.shuffle = false;
  o.seed = 11;
  o.progress_seconds = 0;
  return o;
}

SparseBatch batch_of(const std::vector<std::vector<uint32_t>>& rows, uint32_t cols) {
  SparseBatch b;
  b.rows = uint32_t(rows.size());
  b.cols = cols;
  b.row_ptr.push_back(0);
  for (const auto& r : rows) {
    b.index.insert(b.index.end(), r.begin(), r.end());
    b.row_ptr.push_back(uint32_t(b.index.size()));
  }
  return b;
}

std::vector<float> values(Network& net, const std::string& name) {
  for (Parameter* p : net.parameters())
    if (p->name.find(name) != std::string::npos) return p->value.to_host();
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

Parameter* parameter(Network& net, const std::string& name) {
  for (Parameter* p : net.parameters())
    if (p->name.find(name) != std::string::npos) return p;
  return nullptr;
}

struct GradientCase {
  const char* activation;
  const char* distribution;
};

class SampledGradient : public ::testing::TestWithParam<GradientCase> {};

// One SGD step of the sampled layer against one step of the full layer from the same weights:
// on the sampled columns the weight changes (-alpha x gradient) agree, with the correction:
// Sigmoid, a sampled negative's gradient is the full one times 1 / pi; SoftMax, the full layer
// gets the log-Q correction in its bias and -1e4 (nothing) on the columns not sampled, so its
// softmax is the sampled one. The columns not sampled do not move at all.
TEST_P(SampledGradient, IsTheFullGradientOnTheSampledColumns) {
  const GradientCase c = GetParam();
  const bool softmax = std::string(c.activation) == "SoftMax";
  // Two minibatches of 6: the first one's update is compared (the second never starts), and
  // the items only the second one targets are what Popularity draws as negatives.
  const uint32_t units = 40, examples = 12, batch = 6;
  const auto in_rows = random_rows(3, examples, 20, 4);
  const auto out_rows = random_rows(4, examples, 24, 2);
  const std::vector<std::vector<uint32_t>> first_rows(out_rows.begin(), out_rows.begin() + batch);
  const std::string sampling =
      std::string(R"({"Negatives": 15, "Distribution": ")") + c.distribution + "\"}";
  Fixture sampled(network(c.activation, sampling.c_str(), units),
                  {sparse_set("input", 20, in_rows), sparse_set("output", units, out_rows)});
  Fixture full(network(c.activation, "", units),
               {sparse_set("input", 20, in_rows), sparse_set("output", units, out_rows)});
  const std::vector<float> w0 = values(*sampled.net, "Output<-Hidden:weights");
  const std::vector<float> b0 = values(*sampled.net, "Output<-Hidden:bias");
  ASSERT_EQ(w0, values(*full.net, "Output<-Hidden:weights"));

  // The columns the sampled step uses (step 1 of layer 2; the sampler's distribution as the
  // trainer builds it).
  const NegativeSampler sampler =
      NegativeSampler::for_spec(sampled.spec.layers[2].sampling, sampled.sets[1], units);
  const SampledColumns s = sample_columns(batch_of(first_rows, units), sampler, 15, 11, 1, 2);
  ASSERT_GT(s.columns.size(), s.positives);
  if (softmax) {
    std::vector<float> b = b0;
    std::vector<bool> in_s(units, false);
    for (size_t k = 0; k < s.columns.size(); ++k) {
      in_s[s.columns[k]] = true;
      if (k >= s.positives) b[s.columns[k]] += float(-std::log(s.inclusion[k]));
    }
    for (uint32_t j = 0; j < units; ++j)
      if (!in_s[j]) b[j] = -1e4f;
    parameter(*full.net, "Output<-Hidden:bias")->value.upload(b);
  }
  const float alpha = 0.5f;
  struct Stop {};
  for (Fixture* f : {&sampled, &full}) {
    TrainOptions o = one_step(examples);
    o.minibatch = batch;
    TrainingLoop t(*f->net, f->bound, o, nullptr);
    t.on_step = [](uint64_t step) {
      if (step == 2) throw Stop{};
    };
    EXPECT_THROW(t.run(), Stop);
  }
  const std::vector<float> ws = values(*sampled.net, "Output<-Hidden:weights");
  const std::vector<float> wf = values(*full.net, "Output<-Hidden:weights");
  const std::vector<float> bs = values(*sampled.net, "Output<-Hidden:bias");
  const std::vector<float> bf = values(*full.net, "Output<-Hidden:bias");
  std::vector<bool> in_s(units, false);
  for (size_t k = 0; k < s.columns.size(); ++k) {
    const uint32_t j = s.columns[k];
    in_s[j] = true;
    const double weight = (softmax || k < s.positives) ? 1.0 : 1.0 / s.inclusion[k];
    for (uint32_t i = 0; i < 6; ++i) {
      const size_t at = size_t(i) * units + j;
      const double g_sampled = (w0[at] - ws[at]) / alpha, g_full = (w0[at] - wf[at]) / alpha;
      EXPECT_NEAR(g_sampled, weight * g_full, 2e-5 + 1e-4 * std::fabs(g_sampled))
          << c.activation << " column " << j << " (k " << k << ") row " << i;
    }
    const double gb_full =
        ((softmax ? bf[j] - (k >= s.positives ? -std::log(s.inclusion[k]) : 0) : bf[j]) - b0[j]) /
        -alpha;
    EXPECT_NEAR((b0[j] - bs[j]) / alpha, weight * gb_full, 2e-5 + 1e-4 * std::fabs(gb_full))
        << "bias of column " << j;
  }
  for (uint32_t j = 0; j < units; ++j) {
    if (in_s[j]) continue;
    EXPECT_EQ(bs[j], b0[j]) << "column " << j << " was not sampled";
    for (uint32_t i = 0; i < 6; ++i)
      EXPECT_EQ(ws[size_t(i) * units + j], w0[size_t(i) * units + j]) << "column " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Pairings, SampledGradient,
    ::testing::Values(GradientCase{"Sigmoid", "Uniform"}, GradientCase{"Sigmoid", "Popularity"},
                      GradientCase{"SoftMax", "Uniform"}, GradientCase{"SoftMax", "Popularity"}),
    [](const auto& info) { return std::string(info.param.activation) + info.param.distribution; });

TEST(SampledColumns, AccidentalHitsAreRemovedAndTheSetIsDeterministic) {
  // Targets cover half of 20 items; 200 draws hit them often.
  const auto rows = random_rows(9, 8, 10, 3);
  const SparseBatch b = batch_of(rows, 20);
  const NegativeSampler uniform(20);
  const SampledColumns s = sample_columns(b, uniform, 200, 5, 3, 2);
  std::set<uint32_t> targets(b.index.begin(), b.index.end());
  ASSERT_EQ(s.positives, targets.size());
  EXPECT_TRUE(std::equal(targets.begin(), targets.end(), s.columns.begin()));
  EXPECT_EQ(s.columns.size(), 20u) << "200 draws of 20 items reach every item";
  for (size_t k = s.positives; k < s.columns.size(); ++k) {
    EXPECT_EQ(targets.count(s.columns[k]), 0u) << "accidental hit " << s.columns[k] << " kept";
    if (k > s.positives) EXPECT_LT(s.columns[k - 1], s.columns[k]);
    EXPECT_NEAR(s.inclusion[k], 1.0 - std::pow(1.0 - 1.0 / 20, 200), 1e-12);
  }
  // The same (seed, step, layer): the same set; another step or seed: another.
  EXPECT_EQ(sample_columns(b, uniform, 200, 5, 3, 2).columns, s.columns);
  const SampledColumns few = sample_columns(b, uniform, 4, 5, 3, 2);
  EXPECT_EQ(sample_columns(b, uniform, 4, 5, 3, 2).columns, few.columns);
  bool differs = false;
  for (uint64_t step = 4; step < 12; ++step)
    differs |= sample_columns(b, uniform, 4, 5, step, 2).columns != few.columns;
  EXPECT_TRUE(differs);
}

TEST(SampledColumns, PopularityDrawsInProportionToTheCounts) {
  std::vector<uint64_t> counts = {0, 1, 2, 3, 0, 10, 4};
  const NegativeSampler p(counts);
  Rng rng(3);
  std::vector<double> seen(counts.size(), 0.0);
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double u1 = rng.uniform();
    ++seen[p.draw(u1, rng.uniform())];
  }
  for (size_t j = 0; j < counts.size(); ++j) {
    EXPECT_NEAR(p.probability(uint32_t(j)), double(counts[j]) / 20.0, 1e-12);
    EXPECT_NEAR(seen[j] / n, double(counts[j]) / 20.0, 0.005) << "item " << j;
  }
  EXPECT_EQ(seen[0], 0.0);
  EXPECT_EQ(seen[4], 0.0);
  EXPECT_THROW(NegativeSampler(std::vector<uint64_t>(5, 0)), ConfigError);
}

// Adam keeps two moments per weight: after a step, the columns that were not sampled still hold
// their old values and zero moments; the sampled ones moved.
TEST(SampledOutput, LazyUpdatesLeaveUnsampledColumnsAndTheirStateAlone) {
  const uint32_t units = 50, examples = 8;
  const auto in_rows = random_rows(5, examples, 20, 3);
  const auto out_rows = random_rows(6, examples, 10, 2);
  Fixture f(network("Sigmoid", R"({"Negatives": 5})", units),
            {sparse_set("input", 20, in_rows), sparse_set("output", units, out_rows)});
  const std::vector<float> w0 = values(*f.net, "Output<-Hidden:weights");
  TrainingLoop(*f.net, f.bound, one_step(examples, OptimizerKind::Adam), nullptr).run();
  const NegativeSampler uniform(units);
  const SampledColumns s = sample_columns(batch_of(out_rows, units), uniform, 5, 11, 1, 2);
  std::set<uint32_t> sampled(s.columns.begin(), s.columns.end());
  Parameter* w = parameter(*f.net, "Output<-Hidden:weights");
  ASSERT_EQ(w->state.size(), 2u);
  const std::vector<float> w1 = w->value.to_host(), m = w->state[0].to_host(),
                           v = w->state[1].to_host();
  size_t moved = 0;
  for (uint32_t j = 0; j < units; ++j)
    for (uint32_t i = 0; i < 6; ++i) {
      const size_t at = size_t(i) * units + j;
      if (sampled.count(j)) {
        moved += w1[at] != w0[at];
        continue;
      }
      EXPECT_EQ(w1[at], w0[at]) << "column " << j;
      EXPECT_EQ(m[at], 0.0f) << "column " << j;
      EXPECT_EQ(v[at], 0.0f) << "column " << j;
    }
  EXPECT_GT(moved, sampled.size()) << "the sampled columns were updated";
}

// Sigmoid with an adaptive optimizer: the update of a drawn (negative) column is multiplied by
// its step weight min(1 / pi, SampledOutput::kMaxStepWeight). One Adam step from zero state
// moves every weight by alpha (m / sqrt(v) = g / |g|), so a drawn column moves by w x alpha and
// a target's column by alpha; with SoftMax (log-Q corrected) nothing is weighted. 5 negatives
// of 50 units give 1 / pi = 10.4 (capped at 5), 20 give 3.0. (SGD steps are not weighted: the
// gradient carries 1 / pi already, which SampledGradient's SGD steps check.)
TEST(SampledOutput, AdaptiveOptimizersWeightTheStepsOfDrawnSigmoidColumns) {
  const uint32_t units = 50, examples = 8, hidden = 6;
  const auto in_rows = random_rows(5, examples, 20, 3);
  const auto out_rows = random_rows(6, examples, 10, 2);
  for (const std::string activation : {"Sigmoid", "SoftMax"})
    for (uint32_t negatives : {5u, 20u}) {
      SCOPED_TRACE(activation + ", " + std::to_string(negatives) + " negatives");
      const std::string sampling = "{\"Negatives\": " + std::to_string(negatives) + "}";
      Fixture f(network(activation.c_str(), sampling.c_str(), units),
                {sparse_set("input", 20, in_rows), sparse_set("output", units, out_rows)});
      const std::vector<float> w0 = values(*f.net, "Output<-Hidden:weights");
      TrainingLoop(*f.net, f.bound, one_step(examples, OptimizerKind::Adam), nullptr).run();
      const std::vector<float> w1 = values(*f.net, "Output<-Hidden:weights");
      const SampledColumns s =
          sample_columns(batch_of(out_rows, units), NegativeSampler(units), negatives, 11, 1, 2);
      const bool weighted = activation == "Sigmoid";
      double largest = 0.0;
      size_t checked = 0;
      for (size_t k = 0; k < s.columns.size(); ++k) {
        const double w = weighted && k >= s.positives ? std::min(1.0 / s.inclusion[k], 5.0) : 1.0;
        largest = std::max(largest, w);
        for (uint32_t i = 0; i < hidden; ++i) {
          const size_t at = size_t(i) * units + s.columns[k];
          const double moved = std::fabs(double(w1[at]) - double(w0[at]));
          if (moved == 0.0) continue;  // a zero gradient (a hidden unit at 0)
          EXPECT_NEAR(moved / 0.5, w, 1e-3 * w) << "column " << s.columns[k] << " row " << i;
          ++checked;
        }
      }
      EXPECT_GT(checked, s.columns.size() * hidden / 2);
      if (weighted) EXPECT_GT(largest, 2.9) << "no drawn column was weighted";
    }
}

TEST(SampledOutput, TrainingIsDeterministicForASeedWhateverTheThreads) {
  const auto in_rows = random_rows(7, 64, 30, 4);
  const auto out_rows = random_rows(8, 64, 200, 3);
  const std::string json =
      network("SoftMax", R"({"Negatives": 32, "Distribution": "Popularity"})", 200);
  std::vector<std::vector<float>> result;
  for (int threads : {1, 2, 2}) {
    Fixture f(json, {sparse_set("input", 30, in_rows), sparse_set("output", 200, out_rows)}, 7,
              make_backend("cpu", threads));
    TrainOptions o = one_step(64, OptimizerKind::Adam);
    o.minibatch = 16;
    o.epochs = 3;
    o.optimizer.alpha = 0.01f;
    TrainingLoop t(*f.net, f.bound, o, nullptr);
    const auto reports = t.run();
    ASSERT_EQ(reports.size(), 3u);
    EXPECT_TRUE(std::isfinite(reports.back().loss));
    result.push_back(values(*f.net, "Output<-Hidden:weights"));
  }
  EXPECT_EQ(result[1], result[2]) << "the same seed gives the same weights";
  EXPECT_EQ(result[0], result[1]) << "1 thread or 2: the same bits";
}

// On a device backend (posed by CountingBackend) the sampled step with row-sparse input updates
// waits for the stream nowhere: no synchronisation, no value returned, and no read-back but the
// epochs' loss sums.
TEST(SampledOutput, AStepOnADeviceBackendDoesNotWaitForTheStream) {
  const auto in_rows = random_rows(7, 64, 30, 4);
  const auto out_rows = random_rows(8, 64, 200, 3);
  const std::string json =
      network("SoftMax", R"({"Negatives": 32, "Distribution": "Popularity"})", 200);
  auto counting = std::make_unique<CountingBackend>(/*host_memory=*/false);
  CountingBackend* be = counting.get();
  Fixture f(json, {sparse_set("input", 30, in_rows), sparse_set("output", 200, out_rows)}, 7,
            std::move(counting));
  TrainOptions o = one_step(64, OptimizerKind::Adam);
  o.minibatch = 16;
  o.epochs = 3;
  o.optimizer.alpha = 0.01f;
  o.sparse_update = SparseUpdateMode::Lazy;
  TrainingLoop t(*f.net, f.bound, o, nullptr);
  be->clear();
  const auto reports = t.run();
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(be->synchronizations, 0u) << "the loop waited for the stream";
  EXPECT_EQ(be->value_returns, 0u) << "a loss or reduction returned a value (a GPU sync)";
  // 4 steps an epoch; per epoch at most the loss sums and the regularisation sums.
  EXPECT_LE(be->downloads, 2u * 3u) << be->downloads << " downloads in 12 steps";
}

// The sampled layer holds W and its state transposed between its steps: whatever reads the
// network between epochs (snapshot() for checkpoints, a callback after sync_weights(), the end of
// run()) sees them in the network's layout, and putting them back mid-run changes no bit of the
// training that follows.
TEST(SampledOutput, OthersReadTheNetworksLayoutAndTheRoundTripChangesNothing) {
  const auto in_rows = random_rows(7, 64, 30, 4);
  const auto out_rows = random_rows(8, 64, 200, 3);
  const std::string json =
      network("SoftMax", R"({"Negatives": 32, "Distribution": "Popularity"})", 200);
  auto train = [&](uint64_t epochs, const std::function<void(TrainingLoop&, Network&)>& at_epoch,
                   std::vector<float>* moment = nullptr) {
    Fixture f(json, {sparse_set("input", 30, in_rows), sparse_set("output", 200, out_rows)}, 7);
    TrainOptions o = one_step(64, OptimizerKind::Adam);
    o.minibatch = 16;
    o.epochs = epochs;
    o.optimizer.alpha = 0.01f;
    TrainingLoop t(*f.net, f.bound, o, nullptr);
    if (at_epoch) t.on_epoch = [&](const EpochReport&) { at_epoch(t, *f.net); };
    t.run();
    if (moment) *moment = parameter(*f.net, "Output<-Hidden:weights")->state[0].to_host();
    return values(*f.net, "Output<-Hidden:weights");
  };
  std::vector<float> moment_one;
  const std::vector<float> one_epoch = train(1, nullptr, &moment_one);
  std::vector<float> two_epochs_moment;
  const std::vector<float> two_epochs = train(2, nullptr, &two_epochs_moment);
  ASSERT_NE(one_epoch, two_epochs);

  // A callback that syncs first reads epoch 1's weights as a 1-epoch run leaves them.
  std::vector<float> seen;
  const std::vector<float> synced_run = train(2, [&](TrainingLoop& t, Network& net) {
    if (t.epoch() != 1) return;
    t.sync_weights();
    seen = values(net, "Output<-Hidden:weights");
    EXPECT_EQ(parameter(net, "Output<-Hidden:weights")->state[0].to_host(), moment_one);
  });
  EXPECT_EQ(seen, one_epoch) << "sync_weights() did not restore the network's layout";
  EXPECT_EQ(synced_run, two_epochs) << "restoring the layout mid-run changed the training";

  // snapshot() (a checkpoint) restores it by itself; so does the end of run().
  std::vector<float> in_snapshot;
  train(2, [&](TrainingLoop& t, Network& net) {
    if (t.epoch() != 1) return;
    t.snapshot();
    in_snapshot = values(net, "Output<-Hidden:weights");
  });
  EXPECT_EQ(in_snapshot, one_epoch) << "snapshot() wrote the training layout";
  std::vector<float> moment_two;
  train(2, nullptr, &moment_two);
  EXPECT_EQ(moment_two, two_epochs_moment);
}

// Learning: on items that follow their inputs, sampled training lowers the full layer's loss.
TEST(SampledOutput, SampledTrainingLowersTheFullLoss) {
  std::vector<std::vector<uint32_t>> in_rows, out_rows;
  Rng rng(2);
  for (int e = 0; e < 256; ++e) {
    const uint32_t g = uint32_t(rng.below(8));
    in_rows.push_back({g, 8 + uint32_t(rng.below(4))});
    out_rows.push_back({g * 25 + uint32_t(rng.below(3))});
  }
  Fixture f(network("SoftMax", R"({"Negatives": 20})", 200, R"("N": 16, "Activation": "Relu")"),
            {sparse_set("input", 12, in_rows), sparse_set("output", 200, out_rows)});
  Fixture full(network("SoftMax", "", 200, R"("N": 16, "Activation": "Relu")"),
               {sparse_set("input", 12, in_rows), sparse_set("output", 200, out_rows)});
  auto full_loss = [&] {
    full.net->load_arrays(f.net->to_file());
    TrainOptions o = one_step(256);
    o.optimizer.alpha = 0.0f;  // a pass that changes nothing: its loss is the full layer's
    return TrainingLoop(*full.net, full.bound, o, nullptr).run().back().data_loss;
  };
  const double before = full_loss();
  TrainOptions o = one_step(256, OptimizerKind::Adam);
  o.minibatch = 32;
  o.epochs = 20;
  o.optimizer.alpha = 0.01f;
  TrainingLoop(*f.net, f.bound, o, nullptr).run();
  const double after = full_loss();
  EXPECT_LT(after, 0.5 * before) << "full SoftMax loss " << before << " -> " << after;
}

// A million-unit output layer: with Sampling the training step never forms the rows x 1,000,000
// activations (nor their deltas), so a few steps run within a memory budget that the full
// layer's minibatch alone would exceed.
TEST(SampledOutput, AMillionUnitOutputTrainsAFewStepsInLittleMemory) {
  const uint32_t units = 1000000, examples = 64;
  const auto in_rows = random_rows(1, examples, 100, 5);
  const auto out_rows = random_rows(2, examples, units, 3);
  const uint64_t saved = memory_budget();
  // Weights 8 x 1M floats with gradient and state: 4 copies checked, 128 MB. A minibatch of 32
  // rows of the full layer would add 32 x 1M x 12 bytes = 384 MB.
  set_memory_budget(uint64_t(200) << 20);
  struct rusage before {};
  getrusage(RUSAGE_SELF, &before);
  {
    Fixture f(
        network("SoftMax", R"({"Negatives": 1024})", units, R"("N": 8, "Activation": "Tanh")"),
        {sparse_set("input", 100, in_rows), sparse_set("output", units, out_rows)});
    TrainOptions o = one_step(examples);
    o.minibatch = 32;
    o.optimizer.alpha = 0.05f;
    TrainingLoop t(*f.net, f.bound, o, nullptr);
    const auto reports = t.run();
    EXPECT_EQ(t.step(), 2u);
    EXPECT_TRUE(std::isfinite(reports.back().loss));
    // Without Sampling the same minibatch does not fit the budget.
    Fixture full(network("SoftMax", "", units, R"("N": 8, "Activation": "Tanh")"),
                 {sparse_set("input", 100, in_rows), sparse_set("output", units, out_rows)});
    EXPECT_THROW(TrainingLoop(*full.net, full.bound, o, nullptr), ConfigError);
  }
  struct rusage after {};
  getrusage(RUSAGE_SELF, &after);
  set_memory_budget(saved);
  // Peak resident memory grew by the two networks' weights (2 x 64 MB with gradients) at most,
  // well below one full minibatch of activations.
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 300L * 1024) << "KB";
}

TEST(SampledOutput, RefusesLayersItCannotSample) {
  const auto rows = random_rows(1, 8, 10, 2);
  auto refused = [&](const std::string& json) {
    Fixture f(json, {sparse_set("input", 10, rows), sparse_set("output", 40, rows)});
    try {
      TrainingLoop t(*f.net, f.bound, one_step(8), nullptr);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::string l2 = network("Sigmoid", R"({"Negatives": 4})");
  l2.replace(l2.find("CrossEntropy"), 12, "L2");
  EXPECT_NE(refused(l2).find("needs ErrorFunction CrossEntropy, not L2"), std::string::npos)
      << refused(l2);
  const std::string no_hidden = R"({"ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Output", "Kind": "Output", "N": 40, "DataSet": "output", "Activation": "Sigmoid",
       "Sampling": {"Negatives": 4}}]})";
  const std::string why = refused(no_hidden);
  EXPECT_NE(why.find("layer 'Output': Sampling needs a dense source"), std::string::npos) << why;
}

}  // namespace
}  // namespace nn::test
