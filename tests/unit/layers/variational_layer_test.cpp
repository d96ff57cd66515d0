// The Variational layer in whole networks: its weights (one [in][2N] matrix and 2N biases per
// source, means first), prediction = the mean and training = the reparameterised sample drawn per
// update, the KL term in the objective with its annealed weight, central-difference gradient
// checks (sampling and not, sparse and dense sources, two sources, beta 0), data-parallel rows
// drawing what one process draws, network-file round trips, and the errors of a network file
// that asks for what the JSON parser refuses.
#include "layers/variational_layer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "backend/math/variational_math.h"
#include "core/error.h"
#include "features_test_util.h"

namespace nn::test {
namespace {

constexpr uint32_t kRows = 6;

std::vector<ExampleSet> data(bool sparse_input = true) {
  auto rows = random_rows(23, kRows, 9, 3);
  std::vector<std::vector<float>> vals(kRows, std::vector<float>{0.5f, -1.0f, 2.0f});
  ExampleSet x = sparse_set("in", 9, rows, vals);
  if (!sparse_input) x = densify(x);
  return {x, sparse_set("out", 8, random_rows(24, kRows, 8, 2))};
}

// In -> [H (Tanh, 5)] -> Z (Variational, 3) -> D (Tanh, 4) -> Out (SoftMax).
std::string vae(const std::string& kl = R"("KL": {"Beta": 0.7})", bool hidden = true,
                const std::string& z_source = "") {
  std::string layers = R"({"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in",
                           "Sparse": true}, )";
  if (hidden) layers += R"({"Name": "H", "Kind": "Hidden", "N": 5, "Activation": "Tanh"}, )";
  layers += R"({"Name": "Z", "Kind": "Hidden", "Type": "Variational", "N": 3)" +
            (kl.empty() ? "" : ", " + kl) + z_source +
            R"(, "WeightInit": {"Scheme": "Gaussian", "Scale": 0.5, "Bias": 0.1}},
      {"Name": "D", "Kind": "Hidden", "N": 4, "Activation": "Tanh"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "SoftMax"})";
  return R"({"Name": "vae", "ErrorFunction": "CrossEntropy", "Layers": [)" + layers + "]}";
}

VariationalLayer& z_layer(Fixture& f) {
  return dynamic_cast<VariationalLayer&>(f.net->layer("Z"));
}

std::vector<float> activations_of(Fixture& f, const std::string& name, bool training,
                                  uint64_t step) {
  f.net->set_max_batch(kRows);
  FixedBatch batch(f.bound, kRows);
  load_inputs(*f.net, f.bound, batch.hb);
  LayerContext ctx{f.net->backend(), kRows, training, 1, step};
  f.net->forward(ctx);
  Layer& l = f.net->layer(name);
  std::vector<float> out(size_t(kRows) * l.units());
  f.net->backend().download(out.data(), l.activations(), out.size() * sizeof(float));
  return out;
}

TEST(VariationalLayer, WeightsProduceAMeanAndALogVariancePerUnit) {
  Fixture f(vae(), data());
  VariationalLayer& z = z_layer(f);
  ASSERT_EQ(z.connections().size(), 1u);
  EXPECT_EQ(z.connections()[0]->weights.size(), 5u * 6u);
  EXPECT_EQ(z.connections()[0]->bias.size(), 6u);
  EXPECT_EQ(z.units(), 3u);
  EXPECT_FALSE(z.can_shard(nullptr));
  // The moments are x W + b with the means in columns 0..2: check them against H's activations.
  const auto h = activations_of(f, "H", false, 1);
  const auto w = z.connections()[0]->weights.value.to_host();
  const auto b = z.connections()[0]->bias.value.to_host();
  std::vector<float> q(size_t(kRows) * 6);
  f.net->backend().download(q.data(), z.moments(), q.size() * sizeof(float));
  for (uint32_t r = 0; r < kRows; ++r)
    for (uint32_t c = 0; c < 6; ++c) {
      double want = b[c];
      for (uint32_t i = 0; i < 5; ++i) want += double(h[r * 5 + i]) * w[i * 6 + c];
      EXPECT_NEAR(q[r * 6 + c], want, 1e-5);
    }
}

TEST(VariationalLayer, PredictionIsTheMeanAndTrainingDrawsASamplePerUpdate) {
  Fixture f(vae(), data());
  const auto predicted = activations_of(f, "Z", false, 1);
  std::vector<float> q(size_t(kRows) * 6);
  f.net->backend().download(q.data(), z_layer(f).moments(), q.size() * sizeof(float));
  for (uint32_t r = 0; r < kRows; ++r)
    for (uint32_t j = 0; j < 3; ++j) EXPECT_EQ(predicted[r * 3 + j], q[r * 6 + j]);
  EXPECT_EQ(activations_of(f, "Z", false, 9), predicted);  // no noise in prediction

  const auto step1 = activations_of(f, "Z", true, 1);
  EXPECT_EQ(activations_of(f, "Z", true, 1), step1);  // the same update draws the same noise
  const auto step2 = activations_of(f, "Z", true, 2);
  int moved = 0, other = 0;
  for (size_t i = 0; i < step1.size(); ++i) {
    moved += step1[i] != predicted[i];
    other += step1[i] != step2[i];
  }
  EXPECT_EQ(moved, int(step1.size()));
  EXPECT_EQ(other, int(step1.size()));
  // Sample minus mean, over the standard deviation, is a standard normal draw: over many units
  // of many updates its mean and variance are 0 and 1.
  double sum = 0, sq = 0;
  int n = 0;
  for (uint64_t step = 1; step <= 300; ++step) {
    const auto a = activations_of(f, "Z", true, step);
    for (uint32_t r = 0; r < kRows; ++r)
      for (uint32_t j = 0; j < 3; ++j) {
        const double e = (a[r * 3 + j] - q[r * 6 + j]) / std::exp(0.5 * q[r * 6 + 3 + j]);
        sum += e;
        sq += e * e;
        ++n;
      }
  }
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(sq / n, 1.0, 0.06);
}

TEST(VariationalLayer, KlTermJoinsTheObjectiveWithItsAnnealedWeight) {
  Fixture f(vae(R"("KL": {"Beta": 0.4, "AnnealSteps": 10})"), data());
  VariationalLayer& z = z_layer(f);
  EXPECT_EQ(z.beta(1), 0.0f);  // the first update: none done yet
  EXPECT_FLOAT_EQ(z.beta(6), 0.2f);
  EXPECT_FLOAT_EQ(z.beta(11), 0.4f);
  EXPECT_FLOAT_EQ(z.beta(1000), 0.4f);
  Fixture constant(vae(R"("KL": {"Beta": 0.4})"), data());
  EXPECT_FLOAT_EQ(z_layer(constant).beta(1), 0.4f);

  activations_of(f, "Z", true, 6);
  std::vector<float> q(size_t(kRows) * 6);
  f.net->backend().download(q.data(), z.moments(), q.size() * sizeof(float));
  double kl = 0;
  for (uint32_t r = 0; r < kRows; ++r)
    for (uint32_t j = 0; j < 3; ++j) {
      const double m = q[r * 6 + j], lv = q[r * 6 + 3 + j];
      kl += 0.5 * (m * m + std::exp(lv) - lv - 1);
    }
  EXPECT_NEAR(f.net->penalties(LayerContext{f.net->backend(), kRows, true, 1, 6}), 0.2 * kl,
              1e-5 * kl);
  EXPECT_EQ(f.net->penalties(LayerContext{f.net->backend(), kRows, true, 1, 1}), 0.0);
}

TEST(VariationalLayer, GradientsWhileSampling) {
  Fixture f(vae(), data(), 3);
  EXPECT_GT(check_all_gradients(f, kRows, /*training=*/true), 100);
}

TEST(VariationalLayer, GradientsOfTheMeanPathWithoutSampling) {
  Fixture f(vae(), data(), 4);
  EXPECT_GT(check_all_gradients(f, kRows, /*training=*/false), 100);
}

TEST(VariationalLayer, GradientsFromSparseAndDenseInputsAndTwoSources) {
  {
    Fixture f(vae(R"("KL": {"Beta": 1.5})", /*hidden=*/false), data(true), 5);
    EXPECT_GT(check_all_gradients(f, kRows), 60);
  }
  {
    Fixture f(vae(R"("KL": {"Beta": 1.5})", /*hidden=*/false), data(false), 6);
    EXPECT_GT(check_all_gradients(f, kRows), 60);
  }
  {
    Fixture f(vae("", true, R"(, "Source": ["In", "H"])"), data(), 7);  // Beta 1 by default
    EXPECT_GT(check_all_gradients(f, kRows), 100);
  }
  {
    Fixture f(vae(R"("KL": {"Beta": 0})"), data(), 8);  // no KL term at all
    EXPECT_GT(check_all_gradients(f, kRows), 100);
  }
}

TEST(VariationalLayer, ARanksRowsDrawWhatTheWholeBatchDraws) {
  // Data parallelism: a process holding rows [2, 6) of the batch (row_offset 2) draws the noise
  // the whole batch draws there.
  Fixture f(vae(), data());
  const auto whole = activations_of(f, "Z", true, 3);
  Fixture part(vae(), data());
  part.net->set_max_batch(kRows);
  FixedBatch batch(part.bound, kRows);
  const HostBatch rows = slice_rows(batch.hb, 2, 4);
  load_inputs(*part.net, part.bound, rows);
  LayerContext ctx{part.net->backend(), 4, true, 1, 3};
  ctx.row_offset = 2;
  part.net->forward(ctx);
  std::vector<float> got(4 * 3);
  part.net->backend().download(got.data(), part.net->layer("Z").activations(),
                               got.size() * sizeof(float));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], whole[2 * 3 + i]) << i;
}

TEST(VariationalLayer, NetworkFileRoundTrip) {
  Fixture f(vae(R"("KL": {"Beta": 0.2, "AnnealSteps": 40000})"), data());
  const NetworkFile back = file_round_trip(*f.net, "variational");
  const LayerSpec& z = *back.spec.find_layer("Z");
  EXPECT_EQ(z.type, LayerType::Variational);
  EXPECT_EQ(z.kl_beta, 0.2f);
  EXPECT_EQ(z.kl_anneal_steps, 40000u);
  EXPECT_EQ(back.spec, f.net->spec());
  Network loaded(*f.backend, back.spec, f.bound.sparse_inputs());
  loaded.load_arrays(back);
  EXPECT_EQ(parameter_values(loaded), parameter_values(*f.net));
  Fixture g(vae(R"("KL": {"Beta": 0.2, "AnnealSteps": 40000})"), data());
  g.net->load_arrays(back);
  EXPECT_EQ(activations_of(g, "Out", false, 1), activations_of(f, "Out", false, 1));
}

TEST(VariationalLayer, ANetworkFileCannotAskForWhatTheParserRefuses) {
  // Specs as a network file could hold them: the layer refuses them when it is built.
  const auto build = [](const std::function<void(LayerSpec&)>& edit) {
    auto sets = data();
    NetworkSpec spec = parse_network_json(vae(), "test.json");
    resolve_auto_sizes(spec, sets);
    const auto sparse = bind_datasets(spec, sets, true, "d").sparse_inputs();
    for (LayerSpec& l : spec.layers)
      if (l.name == "Z") edit(l);
    auto backend = make_backend("cpu", 1);
    Network net(*backend, spec, sparse);
  };
  EXPECT_NO_THROW(build([](LayerSpec&) {}));
  EXPECT_THROW(build([](LayerSpec& l) { l.activation = Activation::Sigmoid; }), ConfigError);
  EXPECT_THROW(build([](LayerSpec& l) { l.p_dropout = 0.5f; }), ConfigError);
  EXPECT_THROW(build([](LayerSpec& l) { l.batch_normalization = true; }), ConfigError);
  EXPECT_THROW(build([](LayerSpec& l) { l.kl_beta = -1.0f; }), ConfigError);
  EXPECT_THROW(build([](LayerSpec& l) { l.kind = LayerKind::Output; }), ConfigError);
}

}  // namespace
}  // namespace nn::test
