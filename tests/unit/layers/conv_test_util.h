// Helpers for the convolution/pooling model tests: dense image datasets and a finite-difference
// gradient check through a whole network.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "model/batch_loader.h"
#include "model/model_test_util.h"
#include "train/step.h"

namespace nn::test {

// Dense float "images": width x height x length per example (x fastest), `dims` dimensions.
inline ExampleSet image_set(const std::string& name, uint32_t width, uint32_t height,
                            uint32_t length, int dims, const std::vector<float>& v) {
  ExampleSet ds;
  ds.name = name;
  ds.type = DataType::Float;
  ds.kind = DataKind::Image;
  ds.width = width;
  ds.height = height;
  ds.length = length;
  ds.dimensions = dims;
  ds.examples = ds.unique_examples = v.size() / ds.features();
  ds.dense = v;
  return ds;
}

inline std::vector<float> random_values(size_t n, uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = lo + (hi - lo) * float(rng.uniform());
  return v;
}

// Random 0/1 targets, at least one 1 per example.
inline std::vector<float> random_targets(size_t examples, uint32_t width, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(examples * width, 0.0f);
  for (size_t e = 0; e < examples; ++e) {
    v[e * width + rng.below(width)] = 1.0f;
    for (uint32_t j = 0; j < width; ++j)
      if (rng.uniform() < 0.3) v[e * width + j] = 1.0f;
  }
  return v;
}

// Central differences of the batch-mean loss against backward()'s gradients for every
// parameter. `training` runs both in training mode (batch normalisation statistics; the
// networks checked have no dropout). Returns the number of values checked.
inline int check_network_gradients(const std::string& json, std::vector<ExampleSet> data,
                                   bool training = false, double eps = 1e-3) {
  Fixture f(json, std::move(data), 3);
  Network& net = *f.net;
  const uint32_t n = uint32_t(f.bound.examples);
  net.set_max_batch(n);
  BatchLoader loader(f.bound, {}, 1);
  HostBatch hb;
  std::vector<uint32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0u);
  loader.assemble(ids.data(), n, 1, false, hb);
  OutputLosses losses(net, f.bound);
  LayerContext ctx{net.backend(), n, training, 1, 1};
  auto loss = [&]() {
    load_inputs(net, f.bound, hb);
    net.forward(ctx);
    return losses.evaluate(hb, false) / n;
  };

  load_inputs(net, f.bound, hb);
  net.forward(ctx);
  losses.evaluate(hb, true);
  net.backward(ctx);

  int checked = 0;
  for (Parameter* p : net.parameters()) {
    std::vector<float> grad = p->grad.to_host();
    std::vector<float> value = p->value.to_host();
    for (size_t i = 0; i < value.size(); ++i) {
      const float orig = value[i];
      value[i] = orig + float(eps);
      p->value.upload(value);
      const double up = loss();
      value[i] = orig - float(eps);
      p->value.upload(value);
      const double down = loss();
      value[i] = orig;
      p->value.upload(value);
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(grad[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << p->name << "[" << i << "]";
      ++checked;
    }
  }
  return checked;
}

}  // namespace nn::test
