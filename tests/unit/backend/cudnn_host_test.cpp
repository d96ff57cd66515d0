// Host tests of the CUDA backend's cuDNN layer that need the cuDNN library but no GPU (they run
// in CI when the build has CUDA, and skip when cuDNN cannot be loaded): the run-time loading of
// cuDNN, and the convolution descriptors - for every geometry shape the layers produce (DSSTNE's
// even kernels at stride 1 included, through the explicit padding) the real cuDNN library must
// derive exactly the layer's output shape; shapes past cuDNN's int32 descriptors are refused
// with a clear error. The algorithm choice (cudnn_choice.h: settings, workspace budget,
// deterministic filter) runs here on fake cuDNN perf results. What needs a device (the handle,
// cuDNN's real rankings and the computations) is checked by the CUDA parity tests on a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/conv_test_geometry.h"
#include "backend/cuda/device_probe.h"

#ifdef NN_HAVE_CUDA
#include "backend/cuda/cuda_factory.h"
#include "backend/cuda/cudnn_choice.h"
#include "backend/cuda/cudnn_support.h"
#include "backend/math/conv_math.h"
#include "core/error.h"
#endif

namespace nn {
namespace {

// The CUDA module's own answer (this binary links the module, so the cuDNN host tests run without
// a driver; the engine's cudnn_loadable() says no before loading the module where there is none).
#ifdef NN_HAVE_CUDA
bool cudnn_loadable(std::string* why) {
  return cuda::cudnn_loadable(why);
}
#endif

TEST(CudnnHost, LoadsOrSaysWhy) {
  std::string why = "stale";
  const bool loaded = cudnn_loadable(&why);
#ifdef NN_HAVE_CUDA
  if (loaded)
    EXPECT_EQ(why, "");
  else
    EXPECT_NE(why.find("NN_CUDNN_LIBRARY"), std::string::npos) << why;
#else
  EXPECT_FALSE(loaded);
  EXPECT_EQ(why, "this build has no CUDA support");
#endif
}

#ifdef NN_HAVE_CUDA
TEST(CudnnHost, ConvolutionDescriptorsGiveTheLayersOutputShape) {
  std::string why;
  if (!cudnn_loadable(&why)) GTEST_SKIP() << why;
  const cuda::CudnnApi& api = cuda::cudnn_api();
  struct Case {
    ConvGeometry g;
    bool explicit_pad;
  };
  const Case cases[] = {
      {test::dsstne_geometry(2, {28, 28, 1}, {5, 5, 1}, {1, 1, 1}, 1, 8), false},
      {test::dsstne_geometry(2, {13, 11, 1}, {2, 2, 1}, {1, 1, 1}, 3, 5), true},
      {test::dsstne_geometry(2, {17, 9, 1}, {4, 3, 1}, {1, 1, 1}, 2, 3), true},
      {test::dsstne_geometry(2, {33, 31, 1}, {3, 3, 1}, {2, 2, 1}, 4, 7), false},
      {test::dsstne_geometry(2, {30, 30, 1}, {2, 2, 1}, {2, 2, 1}, 3, 4), false},
      {test::dsstne_geometry(1, {77, 1, 1}, {4, 1, 1}, {1, 1, 1}, 2, 3), true},
      {test::dsstne_geometry(1, {77, 1, 1}, {5, 1, 1}, {2, 1, 1}, 3, 2), false},
      {test::dsstne_geometry(3, {9, 7, 5}, {3, 2, 3}, {1, 1, 1}, 2, 3), true},
      {test::dsstne_geometry(2, {3, 4, 1}, {5, 5, 1}, {1, 1, 1}, 2, 2),
       true},  // y: 4 + 2 - 5 + 1 = 2 != 1
      {test::dsstne_geometry(2, {12, 10, 1}, {1, 1, 1}, {1, 1, 1}, 16, 9), false},
      {test::dsstne_geometry(3, {12, 10, 3}, {2, 3, 1}, {1, 1, 1}, 2, 4),
       true},  // z extent 3, kernel 1 on z
      {test::dsstne_geometry(1, {20, 4, 1}, {3, 1, 1}, {2, 1, 1}, 2, 2),
       false},  // 1-D over 4 rows of y
  };
  try {  // descriptors that needed a device would fail here rather than wrongly succeed
    cuda::ConvPlan probe;
    cuda::describe_convolution(api, test::dsstne_geometry(2, {4, 4, 1}, {1, 1, 1}, {1, 1, 1}, 1, 1),
                               1, false, probe);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "cuDNN descriptors unavailable here: " << e.what();
  }
  for (const Case& c : cases) {
    for (uint32_t rows : {1u, 17u}) {
      cuda::ConvPlan plan;
      // Throws BackendError when cuDNN's output shape is not the layer's.
      EXPECT_NO_THROW(cuda::describe_convolution(api, c.g, rows, false, plan));
      EXPECT_EQ(plan.explicit_pad, c.explicit_pad)
          << c.g.in[0] << "x" << c.g.in[1] << " kernel " << c.g.kernel[0] << "x" << c.g.kernel[1];
    }
  }
}

// cuda/lrn.cu checks cuDNN's LRN limits itself (parameters outside them run its own kernels);
// the library must accept every value inside them and refuse the first outside.
TEST(CudnnHost, LrnDescriptorLimitsAreCudnns) {
  std::string why;
  if (!cudnn_loadable(&why)) GTEST_SKIP() << why;
  const cuda::CudnnApi& api = cuda::cudnn_api();
  cuda::LrnDesc lrn;
  for (unsigned n = CUDNN_LRN_MIN_N; n <= CUDNN_LRN_MAX_N; ++n)
    EXPECT_EQ(api.cudnnSetLRNDescriptor(lrn.get(), n, 1e-4, 0.75, 2.0), CUDNN_STATUS_SUCCESS) << n;
  EXPECT_EQ(api.cudnnSetLRNDescriptor(lrn.get(), 5, 1e-4, 0.01, 1e-5), CUDNN_STATUS_SUCCESS);
  EXPECT_NE(api.cudnnSetLRNDescriptor(lrn.get(), CUDNN_LRN_MAX_N + 1, 1e-4, 0.75, 2.0),
            CUDNN_STATUS_SUCCESS);
  EXPECT_NE(api.cudnnSetLRNDescriptor(lrn.get(), 5, 1e-4, 0.75, 1e-6), CUDNN_STATUS_SUCCESS);
  // The [rows][channels][plane][1] view of an LRN or batch-norm batch is a valid tensor.
  cuda::TensorDesc x;
  EXPECT_NO_THROW(x.set({3, 37, 784, 1}));
}
// NN_CUDNN_ALGO / NN_CUDNN_WORKSPACE_MB: defaults, both modes, sizes, and refusals naming the
// variable.
TEST(CudnnHost, AlgorithmSettingsParse) {
  const cuda::CudnnSettings d = cuda::parse_cudnn_settings(nullptr, nullptr);
  EXPECT_FALSE(d.fastest);
  EXPECT_EQ(d.workspace_limit, size_t(1024) << 20);
  EXPECT_FALSE(cuda::parse_cudnn_settings("", "").fastest);
  EXPECT_FALSE(cuda::parse_cudnn_settings("deterministic", nullptr).fastest);
  EXPECT_TRUE(cuda::parse_cudnn_settings("fastest", nullptr).fastest);
  EXPECT_EQ(cuda::parse_cudnn_settings(nullptr, "0").workspace_limit, 0u);
  EXPECT_EQ(cuda::parse_cudnn_settings(nullptr, "256").workspace_limit, size_t(256) << 20);
  for (const char* bad : {"fast", "Fastest", "1"}) {
    try {
      cuda::parse_cudnn_settings(bad, nullptr);
      ADD_FAILURE() << bad << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("NN_CUDNN_ALGO"), std::string::npos) << e.what();
    }
  }
  for (const char* bad : {"-1", "12x", "1e3", " 5", "99999999999999999999999", "17592186044416"}) {
    try {
      cuda::parse_cudnn_settings(nullptr, bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("NN_CUDNN_WORKSPACE_MB"), std::string::npos) << e.what();
    }
  }
}

TEST(CudnnHost, WorkspaceBudgetStaysWithinTheSettingAndTheFreeMemory) {
  const size_t MiB = size_t(1) << 20, GiB = size_t(1) << 30;
  // The setting caps it when memory is plentiful.
  EXPECT_EQ(cuda::workspace_budget(GiB, 70 * GiB, 0), GiB);
  // Little free memory: what a scratch slot growing by 50% can allocate from 15/16 of it.
  const size_t free_bytes = 96 * MiB;
  const size_t budget = cuda::workspace_budget(GiB, free_bytes, 0);
  EXPECT_EQ(budget, (free_bytes - free_bytes / 16) / 3 * 2);
  EXPECT_LE(budget + budget / 2, free_bytes);  // its allocation fits
  // The slot's current buffer is freed before it grows: it counts as available.
  EXPECT_EQ(cuda::workspace_budget(GiB, 48 * MiB, 48 * MiB), budget);
  // A workspace the slot already holds always fits (within the setting).
  EXPECT_EQ(cuda::workspace_budget(GiB, 0, 300 * MiB), 300 * MiB);
  EXPECT_EQ(cuda::workspace_budget(100 * MiB, 0, 300 * MiB), 100 * MiB);
  EXPECT_EQ(cuda::workspace_budget(0, 70 * GiB, 0), 0u);
  EXPECT_EQ(cuda::workspace_budget(GiB, 0, 0), 0u);  // nothing free: only zero-workspace
  EXPECT_EQ(cuda::workspace_budget(SIZE_MAX, SIZE_MAX, SIZE_MAX) > 0, true);  // no overflow
}

// The choice over fake perf results of cuDNN's own types (through algo_candidates, as the plan
// converts them), ranked fastest first as cuDNN lists them.
TEST(CudnnHost, AlgorithmChoiceOverFakePerfResults) {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  const size_t MiB = size_t(1) << 20;
  auto perf = [](cudnnConvolutionBwdFilterAlgo_t algo, cudnnStatus_t status, size_t memory,
                 cudnnDeterminism_t det, cudnnMathType_t math) {
    Perf p{};
    p.algo = algo;
    p.status = status;
    p.memory = memory;
    p.determinism = det;
    p.mathType = math;
    return p;
  };
  const Perf ranked[] = {
      // fastest: fails for this shape
      perf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_STATUS_NOT_SUPPORTED, 0,
           CUDNN_DETERMINISTIC, CUDNN_FMA_MATH),
      // tensor-op math
      perf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_STATUS_SUCCESS, MiB, CUDNN_DETERMINISTIC,
           CUDNN_TENSOR_OP_MATH),
      // fast but not deterministic (atomics)
      perf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_STATUS_SUCCESS, 0, CUDNN_NON_DETERMINISTIC,
           CUDNN_FMA_MATH),
      // deterministic, but a big workspace
      perf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, CUDNN_STATUS_SUCCESS, 900 * MiB,
           CUDNN_DETERMINISTIC, CUDNN_FMA_MATH),
      // deterministic; the size query says more than the perf result
      perf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, CUDNN_STATUS_SUCCESS, MiB, CUDNN_DETERMINISTIC,
           CUDNN_DEFAULT_MATH),
      // deterministic and small: the last resort
      perf(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_STATUS_SUCCESS, 4 * MiB, CUDNN_DETERMINISTIC,
           CUDNN_FMA_MATH),
  };
  const auto query = [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* bytes) {
    *bytes = a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3 ? 200 * MiB : 0;
    return CUDNN_STATUS_SUCCESS;
  };
  const std::vector<cuda::AlgoCandidate> c = cuda::algo_candidates(ranked, 6, query);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_FALSE(c[0].supported);
  EXPECT_TRUE(c[1].tensor_ops);
  EXPECT_FALSE(c[2].deterministic);
  EXPECT_EQ(c[4].workspace, 200 * MiB);  // the larger of the two
  EXPECT_EQ(c[5].workspace, 4 * MiB);
  EXPECT_TRUE(c[3].transform);
  EXPECT_FALSE(c[4].transform || c[5].transform);
  // Deterministic and direct or GEMM (the default): never ALGO_FFT_TILING; ALGO_3 with 1 GiB or
  // 300 MiB, the last one with 100 MiB.
  EXPECT_EQ(cuda::choose_algorithm(c, false, false, 1024 * MiB).index, 4);
  EXPECT_EQ(cuda::choose_algorithm(c, false, false, 300 * MiB).index, 4);
  EXPECT_EQ(cuda::choose_algorithm(c, false, false, 100 * MiB).index, 5);
  // TF32 allows the tensor-op one.
  EXPECT_EQ(cuda::choose_algorithm(c, false, true, 100 * MiB).index, 1);
  // Fastest: the non-deterministic one that needs no workspace; without it, FFT tiling.
  EXPECT_EQ(cuda::choose_algorithm(c, true, false, 0).index, 2);
  std::vector<cuda::AlgoCandidate> no_atomics = c;
  no_atomics[2].supported = false;
  EXPECT_EQ(cuda::choose_algorithm(no_atomics, true, false, 1024 * MiB).index, 3);
  // Nothing fits: every refusal named.
  const cuda::AlgoChoice none = cuda::choose_algorithm(c, false, false, MiB);
  EXPECT_EQ(none.index, -1);
  for (const char* why : {"not supported", "tensor-op math", "not deterministic",
                          "algorithm 6: FFT or Winograd", "needs 200.0 MiB", "needs 4.0 MiB"})
    EXPECT_NE(none.refused.find(why), std::string::npos) << why << " in: " << none.refused;
  const std::string message = cuda::no_algorithm_message(
      "backward filter", cuda::CudnnSettings{}, MiB, 3 * MiB, "7 rows, 3 -> 8 channels", none);
  for (const char* part : {"no deterministic direct or GEMM backward filter", "budget of 1.0 MiB",
                           "7 rows, 3 -> 8 channels", "NN_CUDNN_WORKSPACE_MB", "3.0 MiB",
                           "NN_CUDNN_ALGO=fastest", "FFT or Winograd"})
    EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  // A failed size query makes the candidate unusable.
  const auto failing = [](cudnnConvolutionBwdFilterAlgo_t, size_t*) {
    return CUDNN_STATUS_NOT_SUPPORTED;
  };
  const std::vector<cuda::AlgoCandidate> f = cuda::algo_candidates(ranked, 6, failing);
  EXPECT_EQ(cuda::choose_algorithm(f, true, true, SIZE_MAX).index, -1);
  EXPECT_EQ(cuda::choose_algorithm({}, true, true, SIZE_MAX).index, -1);
}

// cuDNN's descriptors hold sizes and strides as int: a batch whose tensor reaches 2^31 elements
// is refused, naming the tensor and the shape, before any descriptor is set.
TEST(CudnnHost, ConvolutionTensorsBeyondInt32AreRefused) {
  const ConvGeometry g = test::dsstne_geometry(2, {128, 128, 1}, {3, 3, 1}, {1, 1, 1}, 64, 64);
  EXPECT_NO_THROW(cuda::check_int32_tensor("input", uint64_t(INT32_MAX), g, 1));
  try {
    cuda::check_int32_tensor("input", uint64_t(INT32_MAX) + 1, g, 2048);
    ADD_FAILURE() << "2^31 elements accepted";
  } catch (const BackendError& e) {
    const std::string what = e.what();
    for (const char* part : {"input tensor", "2048 rows", "64 -> 64 channels", "2^31", "smaller"})
      EXPECT_NE(what.find(part), std::string::npos) << part << " in: " << what;
  }
  std::string why;
  if (!cudnn_loadable(&why)) GTEST_SKIP() << why;
  const cuda::CudnnApi& api = cuda::cudnn_api();
  // 2048 x 64 x 128 x 128 = 2^31 elements: one too many (the old code wrapped the int stride).
  cuda::ConvPlan too_big;
  try {
    cuda::describe_convolution(api, g, 2048, false, too_big);
    ADD_FAILURE() << "a 2^31-element input was described";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("2^31"), std::string::npos) << e.what();
  }
  // One row less fits.
  cuda::ConvPlan fits;
  EXPECT_NO_THROW(cuda::describe_convolution(api, g, 2047, false, fits));
  // The filter alone: 40000 x 40000 x 3 x 3 weights.
  const ConvGeometry wide = test::dsstne_geometry(2, {4, 4, 1}, {3, 3, 1}, {1, 1, 1}, 40000, 40000);
  cuda::ConvPlan filter;
  try {
    cuda::describe_convolution(api, wide, 1, false, filter);
    ADD_FAILURE() << "a 2^31-element filter was described";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("filter tensor"), std::string::npos) << e.what();
  }
}
#endif

}  // namespace
}  // namespace nn
