// cuDNN's convolution algorithms as the CUDA backend chooses them (cuda/cudnn_choice.h) on a GPU:
// the default (deterministic) choice gives the same bits run to run for every pass, the backward
// filter and data passes included; NN_CUDNN_ALGO=fastest's choice agrees with the CPU within
// the parity tolerance; a zero workspace budget either finds algorithms that need none (and
// matches the CPU) or refuses with the budget and the shape named. Skips without a device (and,
// like CudaConvParity, fails without a loadable cuDNN).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/conv_test_geometry.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_test_util.h"
#include "core/error.h"

namespace nn {
namespace {

using test::near;
using test::on;

class CudaCudnnChoice : public test::CudaVsCpu {
 protected:
  CudaCudnnChoice() : CudaVsCpu(81) {}
  struct Outputs {
    std::vector<float> y, dx, dw, db;
  };
  // Forward, backward data and backward filter of g over `rows` examples on `be`.
  Outputs run(Backend& be, const ConvGeometry& g, uint32_t rows, const std::vector<float>& x,
              const std::vector<float>& w, const std::vector<float>& dy) {
    auto gx = on(be, x), gw = on(be, w), gdy = on(be, dy);
    DeviceArray<float> gy(be, rows * g.out_size()), gdw(be, g.weight_size()),
        gdb(be, g.out_channels);
    auto gdx = on(be, std::vector<float>(rows * g.in_size(), 0.0f));
    be.conv_forward(g, rows, gx.data(), gw.data(), nullptr, false, gy.data());
    be.conv_backward_data(g, rows, gdy.data(), gw.data(), gdx.data());
    be.conv_backward_filter(g, rows, gx.data(), gdy.data(), 1.0f, gdw.data(), gdb.data());
    return {gy.to_host(), gdx.to_host(), gdw.to_host(), gdb.to_host()};
  }
};

TEST_F(CudaCudnnChoice, DefaultChoiceIsDeterministicAndFastestAgreesWithTheCpu) {
  const uint32_t rows = 64;
  for (const ConvGeometry& g :
       {test::dsstne_geometry(2, {32, 32, 1}, {3, 3, 1}, {1, 1, 1}, 16, 32),
        test::dsstne_geometry(2, {28, 28, 1}, {4, 4, 1}, {1, 1, 1}, 8, 8),
        test::dsstne_geometry(3, {12, 10, 8}, {3, 3, 3}, {1, 1, 1}, 4, 8)}) {
    SCOPED_TRACE(test::describe(g));
    const std::vector<float> x = test::uniform(rows * g.in_size(), rng_, -1, 1),
                             w = test::uniform(g.weight_size(), rng_, -0.5, 0.5),
                             dy = test::uniform(rows * g.out_size(), rng_, -1, 1);
    const Outputs a = run(*gpu_, g, rows, x, w, dy), b = run(*gpu_, g, rows, x, w, dy);
    EXPECT_TRUE(test::bitwise_equal(a.y, b.y));
    EXPECT_TRUE(test::bitwise_equal(a.dx, b.dx)) << "backward data not deterministic";
    EXPECT_TRUE(test::bitwise_equal(a.dw, b.dw)) << "backward filter not deterministic";
    EXPECT_TRUE(test::bitwise_equal(a.db, b.db));
    cuda::CudnnSettings fastest;
    fastest.fastest = true;
    CudaBackend fast(0, false, fastest);
    const Outputs f = run(fast, g, rows, x, w, dy);
    Outputs c;
    c.y.resize(a.y.size());
    c.dx.assign(a.dx.size(), 0.0f);
    c.dw.resize(a.dw.size());
    c.db.resize(a.db.size());
    cpu_->conv_forward(g, rows, x.data(), w.data(), nullptr, false, c.y.data());
    cpu_->conv_backward_data(g, rows, dy.data(), w.data(), c.dx.data());
    cpu_->conv_backward_filter(g, rows, x.data(), dy.data(), 1.0f, c.dw.data(), c.db.data());
    for (const Outputs* o : {&a, &f}) {
      EXPECT_TRUE(near(o->y, c.y, 1e-4, 1e-4));
      EXPECT_TRUE(near(o->dx, c.dx, 1e-4, 1e-4));
      EXPECT_TRUE(near(o->dw, c.dw, 1e-3, 1e-4));
      EXPECT_TRUE(near(o->db, c.db, 1e-3, 1e-4));
    }
  }
}

TEST_F(CudaCudnnChoice, ZeroWorkspaceBudgetRunsOrSaysWhy) {
  cuda::CudnnSettings none;
  none.workspace_limit = 0;
  CudaBackend tight(0, false, none);
  const ConvGeometry g = test::dsstne_geometry(2, {20, 20, 1}, {5, 5, 1}, {1, 1, 1}, 3, 6);
  const uint32_t rows = 16;
  const std::vector<float> x = test::uniform(rows * g.in_size(), rng_, -1, 1),
                           w = test::uniform(g.weight_size(), rng_, -0.5, 0.5),
                           dy = test::uniform(rows * g.out_size(), rng_, -1, 1);
  try {
    const Outputs t = run(tight, g, rows, x, w, dy);
    std::vector<float> y(t.y.size());
    cpu_->conv_forward(g, rows, x.data(), w.data(), nullptr, false, y.data());
    EXPECT_TRUE(near(t.y, y, 1e-4, 1e-4));
  } catch (const BackendError& e) {
    const std::string what = e.what();
    for (const char* part :
         {"workspace budget of 0 bytes", "16 rows, 3 -> 6 channels", "NN_CUDNN_WORKSPACE_MB"})
      EXPECT_NE(what.find(part), std::string::npos) << part << " in: " << what;
  }
}

}  // namespace
}  // namespace nn
