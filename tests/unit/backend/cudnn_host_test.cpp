// Host tests of the CUDA backend's cuDNN layer that need the cuDNN library but no GPU (they run
// in CI when the build has CUDA, and skip when cuDNN cannot be loaded): the run-time loading of
// cuDNN, and the convolution descriptors - for every geometry shape the layers produce (DSSTNE's
// even kernels at stride 1 included, through the explicit padding) the real cuDNN library must
// derive exactly the layer's output shape. What needs a device (the handle, algorithm choice and
// the computations) is checked by the CUDA parity tests on a GPU.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "backend/conv_test_geometry.h"
#include "backend/cuda/device_probe.h"

#ifdef NN_HAVE_CUDA
#include "backend/cuda/cudnn_support.h"
#include "backend/math/conv_math.h"
#endif

namespace nn {
namespace {

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
      {test::dsstne_geometry(2, {12, 10, 3}, {2, 3, 1}, {1, 1, 1}, 2, 4),
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
#endif

}  // namespace
}  // namespace nn
