// Backend selection by name, and the CUDA probe (skipped without a usable device).
#include <gtest/gtest.h>

#include <string>

#include "backend/backend.h"
#include "backend/cuda/device_probe.h"
#include "core/error.h"

namespace nn {
namespace {

std::string config_error_of(const std::string& name, int threads = 0) {
  try {
    make_backend(name, threads);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(MakeBackend, CpuAndAutoGiveTheCpuBackend) {
  EXPECT_EQ(make_backend("cpu", 1)->name(), "cpu");
  EXPECT_EQ(make_backend("auto")->name(), "cpu");
}

TEST(MakeBackend, CudaIsNotAvailableYet) {
  const std::string msg = config_error_of("cuda");
#ifdef NN_HAVE_CUDA
  EXPECT_EQ(msg, "backend 'cuda': not implemented yet; use --backend cpu");
#else
  EXPECT_EQ(msg, "backend 'cuda': this build has no CUDA support; use --backend cpu");
#endif
}

TEST(MakeBackend, UnknownNamesAndBadThreadCountsAreConfigErrors) {
  EXPECT_EQ(config_error_of("gpu"), "backend 'gpu': unknown; expected one of cpu, cuda, auto");
  const std::string msg = config_error_of("cpu", -2);
  EXPECT_NE(msg.find("threads = -2"), std::string::npos) << msg;
}

TEST(CudaProbe, SmokeKernelRunsOnADevice) {
  const std::string summary = cuda_device_summary();
  EXPECT_FALSE(summary.empty());
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device; probe: " << summary;
  EXPECT_TRUE(cuda_smoke_test()) << summary;
}

}  // namespace
}  // namespace nn
