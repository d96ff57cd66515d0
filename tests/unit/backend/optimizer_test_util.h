// Shared by the optimizer tests on every backend (optimizer_rows_test, optimizer_multi_test):
// the list of rules and reproducible random arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "config/enums.h"
#include "core/random.h"

namespace nn::test {

inline constexpr OptimizerKind kAllOptimizers[] = {OptimizerKind::SGD,      OptimizerKind::Momentum,
                                                   OptimizerKind::Nesterov, OptimizerKind::AdaGrad,
                                                   OptimizerKind::RMSProp,  OptimizerKind::AdaDelta,
                                                   OptimizerKind::Adam};

// n values uniform in [lo, hi), the same for the same seed.
inline std::vector<float> random_values(uint64_t seed, size_t n, float lo, float hi) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = lo + (hi - lo) * float(rng.uniform());
  return v;
}

}  // namespace nn::test
