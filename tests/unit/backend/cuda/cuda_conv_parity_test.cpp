// CUDA parity tests (CTest label `cuda`) of convolution (cuDNN), pooling (own kernels), LRN
// (cuDNN, own kernels outside cuDNN's parameter limits) and batch normalisation (cuDNN): each
// operation on both backends with the same inputs, on shapes with awkward sizes, odd and even
// kernels (even ones at stride 1 with DSSTNE's output extents, which the CUDA backend gets by
// explicit padding), strides 1 and 2, padding, windows in the padding only, accumulate on and
// off, aliased in-place batch norm, compared with tolerances. Every test skips with a message
// when no CUDA device is usable; scripts/gpu-check.sh runs them on a GPU.
#include <gtest/gtest.h>

#include <array>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_test_util.h"
#include "backend/conv_test_geometry.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cudnn_support.h"
#include "backend/cuda/device_probe.h"
#include "backend/device_array.h"
#include "core/random.h"
#include "cuda_test_util.h"

namespace nn {
namespace {

using test::near;
using test::on;

class CudaConvParity : public test::CudaVsCpu {
 protected:
  CudaConvParity() : CudaVsCpu(4242) {}
};

// DSSTNE's output extent and padding rules, or cuDNN's when `cudnn`.
ConvGeometry geometry(uint32_t dims, std::array<uint32_t, 3> in, std::array<uint32_t, 3> kernel,
                      std::array<uint32_t, 3> stride, uint32_t cin, uint32_t cout, bool cudnn,
                      std::array<uint32_t, 3> pad = {0, 0, 0}) {
  return cudnn ? test::conv_geometry(dims, in, kernel, stride, pad, cin, cout)
               : test::dsstne_geometry(dims, in, kernel, stride, cin, cout);
}

TEST_F(CudaConvParity, ConvolutionForwardAndBackward) {
  const std::vector<ConvGeometry> shapes = {
      geometry(2, {28, 28, 1}, {5, 5, 1}, {1, 1, 1}, 1, 8, false),   // odd, stride 1
      geometry(2, {13, 11, 1}, {2, 2, 1}, {1, 1, 1}, 3, 5, false),   // even, stride 1: padded
      geometry(2, {17, 9, 1}, {4, 3, 1}, {1, 1, 1}, 2, 3, false),    // even x odd
      geometry(2, {33, 31, 1}, {3, 3, 1}, {2, 2, 1}, 4, 7, false),   // stride 2
      geometry(2, {30, 30, 1}, {2, 2, 1}, {2, 2, 1}, 3, 4, false),   // even, stride 2
      geometry(1, {77, 1, 1}, {4, 1, 1}, {1, 1, 1}, 2, 3, false),    // 1-D even
      geometry(1, {77, 1, 1}, {5, 1, 1}, {2, 1, 1}, 3, 2, false),    // 1-D stride 2
      geometry(3, {9, 7, 5}, {3, 2, 3}, {1, 1, 1}, 2, 3, false),     // 3-D
      geometry(2, {3, 4, 1}, {5, 5, 1}, {1, 1, 1}, 2, 2, false),     // kernel > input
      geometry(2, {12, 10, 1}, {1, 1, 1}, {1, 1, 1}, 16, 9, false),  // 1x1
      geometry(3, {12, 10, 3}, {2, 3, 1}, {1, 1, 1}, 2, 4, false),   // 2-D kernel over 3 z slices
      geometry(2, {15, 14, 1}, {3, 3, 1}, {2, 2, 1}, 3, 4, true, {1, 1, 0}),  // cuDNN's rule
  };
  for (const ConvGeometry& g : shapes) {
    for (uint32_t rows : {1u, 5u, 17u}) {
      SCOPED_TRACE(test::describe(g) + " rows " + std::to_string(rows));
      const std::vector<float> x = test::uniform(rows * g.in_size(), rng_, -1, 1),
                               w = test::uniform(g.weight_size(), rng_, -0.5, 0.5),
                               bias = test::uniform(g.out_channels, rng_, -1, 1),
                               y0 = test::uniform(rows * g.out_size(), rng_, -1, 1),
                               dy = test::uniform(rows * g.out_size(), rng_, -1, 1),
                               dx0 = test::uniform(rows * g.in_size(), rng_, -1, 1);
      auto gx = on(*gpu_, x), gw = on(*gpu_, w), gb = on(*gpu_, bias), gdy = on(*gpu_, dy);
      for (bool accumulate : {false, true}) {
        for (bool with_bias : {false, true}) {
          auto gy = on(*gpu_, y0);
          std::vector<float> cy = y0;
          gpu_->conv_forward(g, rows, gx.data(), gw.data(), with_bias ? gb.data() : nullptr,
                             accumulate, gy.data());
          cpu_->conv_forward(g, rows, x.data(), w.data(), with_bias ? bias.data() : nullptr,
                             accumulate, cy.data());
          EXPECT_TRUE(near(gy.to_host(), cy, 1e-4, 1e-4)) << accumulate << with_bias;
        }
      }
      auto gdx = on(*gpu_, dx0);
      std::vector<float> cdx = dx0;
      gpu_->conv_backward_data(g, rows, gdy.data(), gw.data(), gdx.data());
      cpu_->conv_backward_data(g, rows, dy.data(), w.data(), cdx.data());
      EXPECT_TRUE(near(gdx.to_host(), cdx, 1e-4, 1e-4)) << "backward data adds into dx";

      auto gdw = on(*gpu_, test::uniform(g.weight_size(), rng_, -9, 9));  // overwritten
      auto gdb = on(*gpu_, test::uniform(g.out_channels, rng_, -9, 9));
      std::vector<float> cdw(g.weight_size()), cdb(g.out_channels);
      gpu_->conv_backward_filter(g, rows, gx.data(), gdy.data(), 0.25f, gdw.data(), gdb.data());
      cpu_->conv_backward_filter(g, rows, x.data(), dy.data(), 0.25f, cdw.data(), cdb.data());
      EXPECT_TRUE(near(gdw.to_host(), cdw, 1e-4, 1e-4)) << "dw";
      EXPECT_TRUE(near(gdb.to_host(), cdb, 1e-4, 1e-4)) << "dbias";
      gpu_->conv_backward_filter(g, rows, gx.data(), gdy.data(), 0.25f, gdw.data(), nullptr);
      EXPECT_TRUE(near(gdw.to_host(), cdw, 1e-4, 1e-4)) << "dw without dbias";
    }
  }
  // No rows: the filter gradients are zero, the forward leaves y alone.
  const ConvGeometry g = shapes[1];
  auto gdw = on(*gpu_, std::vector<float>(g.weight_size(), 3.0f));
  auto gdb = on(*gpu_, std::vector<float>(g.out_channels, 3.0f));
  gpu_->conv_backward_filter(g, 0, nullptr, nullptr, 1.0f, gdw.data(), gdb.data());
  EXPECT_EQ(gdw.to_host(), std::vector<float>(g.weight_size(), 0.0f));
  EXPECT_EQ(gdb.to_host(), std::vector<float>(g.out_channels, 0.0f));
}

// The default setting never takes an FFT or Winograd algorithm (their rounding reaches 1e-3
// relative; cudnn_choice.h), on shapes where cuDNN's heuristics rank them first. Prints the
// algorithms chosen, for the GPU check's log.
TEST_F(CudaConvParity, DefaultAlgorithmsAreDirectOrGemm) {
  auto* cuda_backend = dynamic_cast<CudaBackend*>(gpu_.get());
  ASSERT_NE(cuda_backend, nullptr);
  const std::vector<ConvGeometry> shapes = {
      test::conv_geometry(2, {9, 7, 1}, {5, 5, 1}, {1, 1, 1}, {2, 2, 0}, 1, 4),
      test::conv_geometry(2, {28, 28, 1}, {5, 5, 1}, {1, 1, 1}, {2, 2, 0}, 16, 32),
      test::conv_geometry(2, {32, 32, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, 64, 64),
  };
  for (const ConvGeometry& g : shapes)
    for (uint32_t rows : {3u, 19u, 128u}) {
      const cuda::ConvPlan& plan = cuda_backend->cudnn().conv_plan(g, rows, 0);
      std::cout << test::describe(g) << " rows " << rows << ": " << plan.algorithms() << "\n";
      EXPECT_FALSE(cuda::transform_algorithm(plan.forward) ||
                   cuda::transform_algorithm(plan.backward_data) ||
                   cuda::transform_algorithm(plan.backward_filter))
          << test::describe(g) << " rows " << rows << ": " << plan.algorithms();
    }
}

PoolParams pool(std::array<uint32_t, 3> in, std::array<uint32_t, 3> kernel,
                std::array<uint32_t, 3> stride, std::array<uint32_t, 3> pad, uint32_t dims,
                uint32_t channels, std::array<uint32_t, 3> out = {0, 0, 0}) {
  PoolParams p;
  ConvGeometry& g = p.geometry;
  g.dims = dims;
  g.in_channels = g.out_channels = channels;
  g.in = in;
  g.kernel = kernel;
  g.stride = stride;
  g.pad = pad;
  for (int d = 0; d < 3; ++d) {
    const int64_t span = int64_t(in[d]) + 2 * pad[d] - kernel[d];
    g.out[d] = out[d] ? out[d] : uint32_t(span < 0 ? 1 : span / stride[d] + 1);
  }
  return p;
}

TEST_F(CudaConvParity, PoolingMaxAndAverage) {
  std::vector<PoolParams> shapes = {
      pool({28, 28, 1}, {2, 2, 1}, {2, 2, 1}, {0, 0, 0}, 2, 8),               // the common 2x2 / 2
      pool({31, 33, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}, 2, 3),               // overlapping, padded
      pool({13, 11, 1}, {2, 2, 1}, {1, 1, 1}, {1, 1, 0}, 2, 2, {13, 11, 1}),  // DSSTNE even
      pool({9, 8, 5}, {2, 3, 2}, {2, 1, 1}, {0, 1, 1}, 3, 2),                 // 3-D
      pool({1025, 1, 1}, {4, 1, 1}, {3, 1, 1}, {2, 0, 0}, 1, 3),              // 1-D, awkward width
      pool({3, 3, 1}, {2, 2, 1}, {1, 1, 1}, {2, 2, 0}, 2, 1),  // windows in the padding
  };
  for (PoolParams p : shapes) {
    for (PoolingFunction f : {PoolingFunction::Max, PoolingFunction::Average}) {
      for (bool ties : {false, true}) {
        p.function = f;
        const ConvGeometry& g = p.geometry;
        const uint32_t rows = 7;
        SCOPED_TRACE(test::describe(g) + " " + to_string(f) + (ties ? " ties" : ""));
        std::vector<float> x = test::uniform(rows * g.in_size(), rng_, -2, 2);
        if (ties)
          for (float& v : x) v = float(1 + int(3.0f * (v + 2.0f) / 4.0f));
        const std::vector<float> y0 = test::uniform(rows * g.out_size(), rng_, -1, 1),
                                 dy = test::uniform(rows * g.out_size(), rng_, -1, 1),
                                 dx0 = test::uniform(rows * g.in_size(), rng_, -1, 1);
        auto gx = on(*gpu_, x), gdy = on(*gpu_, dy);
        for (bool accumulate : {false, true}) {
          auto gy = on(*gpu_, y0);
          std::vector<float> cy = y0;
          gpu_->pool_forward(p, rows, gx.data(), accumulate, gy.data());
          cpu_->pool_forward(p, rows, x.data(), accumulate, cy.data());
          EXPECT_TRUE(near(gy.to_host(), cy, 1e-6, 1e-6)) << accumulate;
        }
        auto gdx = on(*gpu_, dx0);
        std::vector<float> cdx = dx0;
        gpu_->pool_backward(p, rows, gx.data(), gdy.data(), gdx.data());
        cpu_->pool_backward(p, rows, x.data(), dy.data(), cdx.data());
        // Max: the same first largest input gets each window's gradient (ties included).
        EXPECT_TRUE(near(gdx.to_host(), cdx, 1e-6, 1e-6));
      }
    }
  }
}

TEST_F(CudaConvParity, LocalResponseNormalisation) {
  struct Params {
    uint32_t n;
    float k, beta;
  };
  // cuDNN's range, then beyond it (the backend's own kernels): n > 16, k < 1e-5, beta < 0.01.
  const Params params[] = {{1, 1.5f, 0.75f},  {2, 1.5f, 0.75f},  {5, 1.5f, 0.75f},
                           {16, 1.5f, 0.75f}, {17, 1.5f, 0.75f}, {40, 2.0f, 0.75f},
                           {5, 1e-6f, 0.75f}, {4, 2.0f, 0.005f}};
  for (uint32_t channels : {1u, 3u, 16u, 37u}) {
    for (const Params& q : params) {
      for (uint64_t plane : {uint64_t(1), uint64_t(31), uint64_t(784)}) {
        LrnParams p;
        p.channels = channels;
        p.plane = plane;
        p.n = q.n;
        p.k = q.k;
        p.alpha = 0.3f;  // large enough that the normalisation matters
        p.beta = q.beta;
        const uint32_t rows = 3;
        SCOPED_TRACE(std::to_string(channels) + " channels, n " + std::to_string(q.n) + ", k " +
                     std::to_string(q.k) + ", beta " + std::to_string(q.beta) + ", plane " +
                     std::to_string(plane));
        const size_t size = size_t(rows) * channels * plane;
        const std::vector<float> x = test::uniform(size, rng_, 0.1, 2),  // k ~ 0 needs x != 0
            y0 = test::uniform(size, rng_, -1, 1), dy = test::uniform(size, rng_, -1, 1),
                                 dx0 = test::uniform(size, rng_, -1, 1);
        auto gx = on(*gpu_, x), gdy = on(*gpu_, dy);
        for (bool accumulate : {false, true}) {
          auto gy = on(*gpu_, y0);
          std::vector<float> cy = y0;
          gpu_->lrn_forward(p, rows, gx.data(), accumulate, gy.data());
          cpu_->lrn_forward(p, rows, x.data(), accumulate, cy.data());
          EXPECT_TRUE(near(gy.to_host(), cy, 1e-5, 1e-4)) << accumulate;
        }
        auto gdx = on(*gpu_, dx0);
        std::vector<float> cdx = dx0;
        gpu_->lrn_backward(p, rows, gx.data(), gdy.data(), gdx.data());
        cpu_->lrn_backward(p, rows, x.data(), dy.data(), cdx.data());
        EXPECT_TRUE(near(gdx.to_host(), cdx, 1e-5, 1e-4)) << "backward adds into dx";
      }
    }
  }
}

TEST_F(CudaConvParity, BatchNormalisationAllOperations) {
  for (uint32_t spatial : {1u, 49u}) {
    for (uint32_t channels : {1u, 5u, 33u}) {
      for (uint32_t rows : {1u, 2u, 16u, 37u}) {  // 1 x 1: one value per channel
        BatchNormParams p;
        p.rows = rows;
        p.channels = channels;
        p.spatial = spatial;
        p.epsilon = 1e-5f;
        p.momentum = 0.1f;
        SCOPED_TRACE(std::to_string(rows) + " rows, " + std::to_string(channels) + " channels x " +
                     std::to_string(spatial));
        const size_t size = size_t(rows) * channels * spatial;
        const std::vector<float> x = test::uniform(size, rng_, -1, 3),
                                 dy = test::uniform(size, rng_, -1, 1),
                                 scale = test::uniform(channels, rng_, 0.5, 1.5),
                                 bias = test::uniform(channels, rng_, -1, 1),
                                 rmean = test::uniform(channels, rng_, -0.5, 0.5),
                                 rvar = test::uniform(channels, rng_, 0.5, 2.0);
        auto gx = on(*gpu_, x), gdy = on(*gpu_, dy), gs = on(*gpu_, scale), gb = on(*gpu_, bias);
        for (bool in_place : {false, true}) {
          // Training forward: y, saved statistics and the running update.
          auto grm = on(*gpu_, rmean), grv = on(*gpu_, rvar);
          DeviceArray<float> gsm(*gpu_, channels), gsi(*gpu_, channels);
          auto gy = on(*gpu_, x);
          std::vector<float> cy(size), crm = rmean, crv = rvar, csm(channels), csi(channels);
          gpu_->batch_norm_forward_training(p, in_place ? gy.data() : gx.data(), gy.data(),
                                            gs.data(), gb.data(), grm.data(), grv.data(),
                                            gsm.data(), gsi.data());
          cpu_->batch_norm_forward_training(p, x.data(), cy.data(), scale.data(), bias.data(),
                                            crm.data(), crv.data(), csm.data(), csi.data());
          EXPECT_TRUE(near(gy.to_host(), cy, 1e-4, 1e-4)) << "y, in place " << in_place;
          EXPECT_TRUE(near(gsm.to_host(), csm, 1e-5, 1e-5)) << "saved mean";
          EXPECT_TRUE(near(gsi.to_host(), csi, 1e-5, 1e-4)) << "saved inv std";
          EXPECT_TRUE(near(grm.to_host(), crm, 1e-5, 1e-5)) << "running mean";
          EXPECT_TRUE(near(grv.to_host(), crv, 1e-5, 1e-4)) << "running var (unbiased)";

          // Training backward from the saved statistics (the CPU's, so only backward differs).
          auto gsm2 = on(*gpu_, csm), gsi2 = on(*gpu_, csi);
          auto gdx = on(*gpu_, dy);
          DeviceArray<float> gds(*gpu_, channels), gdb(*gpu_, channels);
          std::vector<float> cdx(size), cds(channels), cdb(channels);
          gpu_->batch_norm_backward(p, gx.data(), in_place ? gdx.data() : gdy.data(), gs.data(),
                                    gsm2.data(), gsi2.data(), 0.5f, gdx.data(), gds.data(),
                                    gdb.data());
          cpu_->batch_norm_backward(p, x.data(), dy.data(), scale.data(), csm.data(), csi.data(),
                                    0.5f, cdx.data(), cds.data(), cdb.data());
          EXPECT_TRUE(near(gdx.to_host(), cdx, 1e-4, 1e-4)) << "dx";
          EXPECT_TRUE(near(gds.to_host(), cds, 1e-4, 1e-4)) << "dscale";
          EXPECT_TRUE(near(gdb.to_host(), cdb, 1e-4, 1e-4)) << "dbias";

          // Inference forward and its backward.
          auto gy2 = on(*gpu_, x);
          std::vector<float> cy2(size);
          gpu_->batch_norm_forward_inference(p, in_place ? gy2.data() : gx.data(), gy2.data(),
                                             gs.data(), gb.data(), grm.data(), grv.data());
          cpu_->batch_norm_forward_inference(p, x.data(), cy2.data(), scale.data(), bias.data(),
                                             crm.data(), crv.data());
          EXPECT_TRUE(near(gy2.to_host(), cy2, 1e-4, 1e-4)) << "inference y";
          auto grm2 = on(*gpu_, crm), grv2 = on(*gpu_, crv);
          auto gdx2 = on(*gpu_, dy);
          std::vector<float> cdx2(size);
          gpu_->batch_norm_backward_inference(p, gx.data(), in_place ? gdx2.data() : gdy.data(),
                                              gs.data(), grm2.data(), grv2.data(), 0.5f,
                                              gdx2.data(), gds.data(), gdb.data());
          cpu_->batch_norm_backward_inference(p, x.data(), dy.data(), scale.data(), crm.data(),
                                              crv.data(), 0.5f, cdx2.data(), cds.data(),
                                              cdb.data());
          EXPECT_TRUE(near(gdx2.to_host(), cdx2, 1e-6, 1e-6)) << "inference dx";
          EXPECT_TRUE(near(gds.to_host(), cds, 1e-4, 1e-4)) << "inference dscale";
          EXPECT_TRUE(near(gdb.to_host(), cdb, 1e-4, 1e-4)) << "inference dbias";
        }
      }
    }
  }
}

}  // namespace
}  // namespace nn
