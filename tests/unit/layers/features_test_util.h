// Helpers for the layer-feature tests: one fixed minibatch through a network, the objective that
// backward() differentiates (data loss + sparseness penalty, per example), central-difference
// gradient checks over every parameter, and file round trips.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "io/network_file.h"
#include "model/batch_loader.h"
#include "model/model_test_util.h"
#include "train/step.h"
#include "train/training_loop.h"

namespace nn::test {

// The first `rows` examples of a fixture's data, assembled once.
struct FixedBatch {
  HostBatch hb;
  FixedBatch(const BoundData& bound, uint32_t rows) {
    BatchLoader loader(bound, {}, 1);
    std::vector<uint32_t> ids(rows);
    std::iota(ids.begin(), ids.end(), 0u);
    loader.assemble(ids.data(), rows, 1, false, hb);
  }
};

// Forward (training mode unless told otherwise; dropout masks are fixed for a given step) and
// the batch-mean objective: summed output losses + the layers' penalty terms, over rows.
inline double objective(Network& net, const BoundData& bound, OutputLosses& losses,
                        const HostBatch& hb, bool training = true) {
  load_inputs(net, bound, hb);
  LayerContext ctx{net.backend(), hb.rows, training, 1, 1};
  net.forward(ctx);
  return (losses.evaluate(hb, false) + net.penalties(ctx)) / hb.rows;
}

// Forward + backward at the current parameters: every Parameter's grad holds the analytic
// gradient of objective().
inline void analytic_gradients(Network& net, const BoundData& bound, OutputLosses& losses,
                               const HostBatch& hb, bool training = true) {
  load_inputs(net, bound, hb);
  LayerContext ctx{net.backend(), hb.rows, training, 1, 1};
  net.forward(ctx);
  losses.evaluate(hb, true);
  net.backward(ctx);
}

// Central differences of objective() against backward()'s gradients for every entry of every
// parameter; returns the number of entries checked.
inline int check_all_gradients(Fixture& f, uint32_t rows, bool training = true,
                               double abs_tol = 2e-3, double rel_tol = 2e-2) {
  Network& net = *f.net;
  net.set_max_batch(rows);
  FixedBatch batch(f.bound, rows);
  const HostBatch& hb = batch.hb;
  OutputLosses losses(net, f.bound);
  analytic_gradients(net, f.bound, losses, hb, training);
  const double eps = 1e-3;
  int checked = 0;
  for (Parameter* p : net.parameters()) {
    const std::vector<float> grad = p->grad.to_host();
    std::vector<float> value = p->value.to_host();
    for (size_t i = 0; i < value.size(); ++i) {
      const float orig = value[i];
      value[i] = orig + float(eps);
      p->value.upload(value);
      const double up = objective(net, f.bound, losses, hb, training);
      value[i] = orig - float(eps);
      p->value.upload(value);
      const double down = objective(net, f.bound, losses, hb, training);
      value[i] = orig;
      p->value.upload(value);
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(grad[i], numeric, abs_tol + rel_tol * std::fabs(numeric))
          << p->name << "[" << i << "]";
      ++checked;
    }
  }
  return checked;
}

// Activations of `layer` after an inference forward of the first `rows` examples.
inline std::vector<float> predict(Fixture& f, const std::string& layer, uint32_t rows) {
  f.net->set_max_batch(rows);
  FixedBatch batch(f.bound, rows);
  load_inputs(*f.net, f.bound, batch.hb);
  LayerContext ctx{f.net->backend(), rows, false, 1, 1};
  f.net->forward(ctx);
  std::vector<float> out(size_t(rows) * f.net->layer(layer).units());
  f.net->backend().download(out.data(), f.net->layer(layer).activations(),
                            out.size() * sizeof(float));
  return out;
}

// Writes the network to a .nc file and reads it back.
inline NetworkFile file_round_trip(const Network& net, const std::string& stem) {
  const auto path =
      std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + ".nc");
  write_network_file(path.string(), net.to_file());
  NetworkFile back = read_network_file(path.string());
  std::filesystem::remove(path);
  return back;
}

// |actual - expected| <= tol element by element, naming the first failing position.
inline ::testing::AssertionResult all_near_d(const std::vector<float>& actual,
                                             const std::vector<double>& expected, double tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " vs " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i)
    if (!(std::fabs(actual[i] - expected[i]) <= tol))
      return ::testing::AssertionFailure()
             << "at " << i << ": got " << actual[i] << ", expected " << expected[i];
  return ::testing::AssertionSuccess();
}

inline std::vector<std::vector<float>> parameter_values(Network& net) {
  std::vector<std::vector<float>> out;
  for (Parameter* p : net.parameters()) out.push_back(p->value.to_host());
  return out;
}

// Plain SGD over the examples in order, one update per epoch when minibatch = the example count.
inline TrainOptions sgd_options(uint32_t epochs, float alpha, uint32_t minibatch) {
  TrainOptions o;
  o.epochs = epochs;
  o.minibatch = minibatch;
  o.optimizer.kind = OptimizerKind::SGD;
  o.optimizer.alpha = alpha;
  o.shuffle = false;
  o.progress_seconds = 0;
  return o;
}

// After one SGD step of rate alpha, w's values are `before` - alpha * w.grad, and they moved.
inline void expect_one_sgd_step(const std::vector<float>& before, const Parameter& w, float alpha) {
  const std::vector<float> after = w.value.to_host(), grad = w.grad.to_host();
  double moved = 0.0;
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_NEAR(after[i], before[i] - alpha * grad[i], 1e-6f) << i;
    moved += std::fabs(after[i] - before[i]);
  }
  EXPECT_GT(moved, 1e-3);
}

}  // namespace nn::test
