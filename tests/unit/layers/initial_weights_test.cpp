// Spread of every weight-initialisation scheme's draws (initial_weights): the moments a scheme
// promises, measured over a large matrix, so a wrong scale (such as DSSTNE's 1/n_in for SELU,
// a documented deviation) fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "config/network_spec.h"
#include "layers/weighted_layer.h"

namespace nn {
namespace {

struct Moments {
  double mean = 0, stddev = 0, min = 0, max = 0;
};

Moments moments_of(const std::vector<float>& w) {
  Moments m;
  m.min = m.max = w.at(0);
  double sum = 0, sum_sq = 0;
  for (float v : w) {
    sum += v;
    sum_sq += double(v) * v;
    m.min = std::min(m.min, double(v));
    m.max = std::max(m.max, double(v));
  }
  m.mean = sum / double(w.size());
  m.stddev = std::sqrt(sum_sq / double(w.size()) - m.mean * m.mean);
  return m;
}

Moments draw(WeightInit scheme, size_t n_in, size_t n_out, double scale = 1.0) {
  LayerSpec spec;
  spec.weight_init = scheme;
  spec.weight_init_scale = float(scale);
  return moments_of(initial_weights(spec, n_in, n_out, 2024, weight_stream(1, 0)));
}

TEST(InitialWeights, SeluIsNormalWithVarianceOneOverFanIn) {
  for (size_t n_in : {64u, 1024u}) {
    const Moments m = draw(WeightInit::SELU, n_in, 256);
    const double expected = 1.0 / std::sqrt(double(n_in));
    EXPECT_NEAR(m.stddev, expected, 0.02 * expected) << "n_in " << n_in;
    EXPECT_NEAR(m.mean, 0.0, 0.02 * expected) << "n_in " << n_in;
  }
}

TEST(InitialWeights, GaussianStddevIsTheScale) {
  const Moments m = draw(WeightInit::Gaussian, 512, 256, 0.05);
  EXPECT_NEAR(m.stddev, 0.05, 0.001);
  EXPECT_NEAR(m.mean, 0.0, 0.001);
}

TEST(InitialWeights, UniformAndUnitBallStayInTheirRanges) {
  const Moments u = draw(WeightInit::Uniform, 256, 256, 0.1);
  EXPECT_GE(u.min, -0.1);
  EXPECT_LE(u.max, 0.1);
  EXPECT_NEAR(u.stddev, 0.1 / std::sqrt(3.0), 0.002);
  const Moments b = draw(WeightInit::UnitBall, 256, 256, 0.1);
  EXPECT_GE(b.min, 0.0);
  EXPECT_LE(b.max, 0.1);
  EXPECT_NEAR(b.mean, 0.05, 0.002);
}

TEST(InitialWeights, ConstantIsTheScale) {
  const Moments m = draw(WeightInit::Constant, 8, 8, 0.25);
  EXPECT_EQ(m.min, 0.25);
  EXPECT_EQ(m.max, 0.25);
}

}  // namespace
}  // namespace nn
