// Shared by the CUDA parity tests: a CUDA and a CPU backend side by side (the test skips with a
// message where no CUDA device is usable), host vectors copied into either backend's memory,
// and float comparisons with tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/device_probe.h"
#include "backend/device_array.h"
#include "core/random.h"

namespace nn::test {

// A copy of `v` in b's memory.
template <typename T>
DeviceArray<T> on(Backend& b, const std::vector<T>& v) {
  return to_device(b, v);
}

// all_near with float expectations.
inline ::testing::AssertionResult near(const std::vector<float>& got,
                                       const std::vector<float>& want, double abs_tol,
                                       double rel_tol) {
  return all_near(got, std::vector<double>(want.begin(), want.end()), abs_tol, rel_tol);
}

// gpu_ (CUDA device 0) and cpu_ (2 threads) for tests that compare the two; rng_ seeded per
// suite. Without a usable device every test of the suite skips, saying why.
class CudaVsCpu : public ::testing::Test {
 protected:
  explicit CudaVsCpu(uint64_t seed) : rng_(seed) {}
  void SetUp() override {
    if (cuda_device_count() == 0)
      GTEST_SKIP() << "no CUDA device, CUDA parity not checked: " << cuda_device_summary();
    gpu_ = make_backend("cuda");
    cpu_ = std::make_unique<CpuBackend>(2);
  }
  std::unique_ptr<Backend> gpu_, cpu_;
  Rng rng_;
};

}  // namespace nn::test
