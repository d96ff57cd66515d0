// Backend selection by name, and the CUDA probe (skipped without a usable device).
#include <gtest/gtest.h>

#include <string>

#include "backend/backend.h"
#include "backend/backend_choice.h"
#include "backend/cuda/device_probe.h"
#include "core/error.h"

namespace nn {
namespace {

std::string config_error_of(const std::string& name, int threads = 0, int device = 0) {
  try {
    make_backend(name, threads, device);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(MakeBackend, CpuIsAlwaysTheCpuBackend) {
  EXPECT_EQ(make_backend("cpu", 1)->name(), "cpu");
  EXPECT_EQ(make_backend("cpu", 1, 7)->name(), "cpu");  // the device index is CUDA's only
}

TEST(MakeBackend, AutoChoosesCudaOnlyWithAUsableDevice) {
#ifdef NN_HAVE_CUDA
  const bool gpu = cuda_device_count() > 0;
#else
  const bool gpu = false;
#endif
  EXPECT_EQ(make_backend("auto")->name(), gpu ? "cuda" : "cpu");
  // A device index past the last device falls back to the CPU.
  EXPECT_EQ(make_backend("auto", 1, 1000)->name(), "cpu");
}

TEST(MakeBackend, CudaNeedsABuildWithCudaAndADevice) {
  const std::string msg = config_error_of("cuda");
#ifdef NN_HAVE_CUDA
  if (cuda_device_count() > 0) {
    EXPECT_EQ(msg, "");
    EXPECT_EQ(make_backend("cuda")->name(), "cuda");
    const std::string bad = config_error_of("cuda", 0, 1000);
    EXPECT_NE(bad.find("device 1000 does not exist"), std::string::npos) << bad;
  } else {
    EXPECT_EQ(msg.rfind("backend 'cuda': no usable CUDA device (", 0), 0u) << msg;
  }
#else
  EXPECT_EQ(msg, "backend 'cuda': this build has no CUDA support; use --backend cpu");
#endif
}

TEST(MakeBackend, NegativeDeviceIsAConfigError) {
  const std::string msg = config_error_of("auto", 0, -1);
  EXPECT_NE(msg.find("device = -1"), std::string::npos) << msg;
}

TEST(MakeBackend, UnknownNamesAndBadThreadCountsAreConfigErrors) {
  EXPECT_EQ(config_error_of("gpu"), "backend 'gpu': unknown; expected one of cpu, cuda, auto");
  const std::string msg = config_error_of("cpu", -2);
  EXPECT_NE(msg.find("threads = -2"), std::string::npos) << msg;
}

NetworkSpec fc_spec() {
  NetworkSpec s;
  LayerSpec in, hidden, out;
  in.name = "In";
  in.kind = LayerKind::Input;
  hidden.name = "H";
  hidden.kind = LayerKind::Hidden;
  out.name = "Out";
  out.kind = LayerKind::Output;
  s.layers = {in, hidden, out};
  return s;
}

// The backend "auto" picks on this machine for a network that needs no cuDNN.
std::string auto_choice() {
#ifdef NN_HAVE_CUDA
  return cuda_device_count() > 0 ? "cuda" : "cpu";
#else
  return "cpu";
#endif
}

TEST(BackendChoice, AutoRunsEveryFeatureWithoutCudnnOnCuda) {
  // Every kernel family has CUDA kernels (pure virtual in Backend): only a missing cuDNN keeps
  // "auto" off CUDA, so these networks get CUDA wherever a device is usable, without a note.
  NetworkSpec s = fc_spec();
  s.layers[2].type = LayerType::Pooling;
  for (PoolingFunction f :
       {PoolingFunction::DotProduct, PoolingFunction::Cosine, PoolingFunction::Max,
        PoolingFunction::Average, PoolingFunction::Maxout}) {
    s.layers[2].pooling = f;
    std::string note = "stale";
    EXPECT_EQ(make_backend_for(s, "auto", 1, 0, &note)->name(), auto_choice()) << to_string(f);
    EXPECT_EQ(note, "") << to_string(f);
  }
  s = fc_spec();
  s.layers[2].delta_norm = 1.0f;
  s.layers[1].weight_norm = 1.0f;
  s.layers[1].sparse = true;
  s.sparseness_penalty_beta = 0.5f;
  std::string note = "stale";
  EXPECT_EQ(make_backend_for(s, "auto", 1, 0, &note)->name(), auto_choice());
  EXPECT_EQ(note, "");
}

TEST(BackendChoice, FeaturesThatNeedCudnnAreNamed) {
  EXPECT_EQ(cudnn_feature(fc_spec()), "");
  NetworkSpec s = fc_spec();
  s.layers[1].type = LayerType::Convolutional;
  EXPECT_EQ(cudnn_feature(s), "Convolutional layer 'H'");
  s = fc_spec();
  s.layers[1].batch_normalization = true;
  EXPECT_EQ(cudnn_feature(s), "BatchNormalization on layer 'H'");
  s = fc_spec();
  s.layers[2].type = LayerType::Pooling;
  s.layers[2].pooling = PoolingFunction::LRN;
  EXPECT_EQ(cudnn_feature(s), "LRN Pooling layer 'Out'");
  s.layers[2].pooling = PoolingFunction::Max;  // own kernels
  EXPECT_EQ(cudnn_feature(s), "");
}

TEST(BackendChoice, AutoNeverPicksABackendThatCannotRunTheNetwork) {
  // Similarity pooling runs on CUDA now: "auto" picks CUDA for it when a device is usable (and
  // cuDNN is not needed), the CPU otherwise, without a note either way.
  NetworkSpec cosine = fc_spec();
  cosine.layers[2].type = LayerType::Pooling;
  cosine.layers[2].pooling = PoolingFunction::Cosine;
  std::string note = "stale";
  const std::string expected = auto_choice();
  EXPECT_EQ(make_backend_for(cosine, "auto", 1, 0, &note)->name(), expected);
  EXPECT_EQ(note, "");
  EXPECT_EQ(make_backend_for(fc_spec(), "cpu", 1, 0, &note)->name(), "cpu");
  EXPECT_EQ(note, "");
}

TEST(CudaProbe, SmokeKernelRunsOnADevice) {
  const std::string summary = cuda_device_summary();
  EXPECT_FALSE(summary.empty());
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device; probe: " << summary;
  EXPECT_TRUE(cuda_smoke_test()) << summary;
}

}  // namespace
}  // namespace nn
