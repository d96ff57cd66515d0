// Two CUDA backends in one thread, their calls interleaved: on two devices when the machine has
// two (with the thread's current device deliberately left on the OTHER GPU before every call),
// else both on device 0. Every entry point must make its own device current
// (cuda/device_guard.h) and give the caller's back; each backend's results are compared with the
// CPU backend's. Skips without a device; with one GPU it checks the interleaving and results
// only (scripts/gpu-check.sh counts any skip as "no device", so one GPU must not skip). The
// host-side source scan CudaDeviceGuard.* checks every entry point starts with the guard.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_test_util.h"

namespace nn {
namespace {

using test::near;
using test::on;

int current_device() {
  int d = -1;
  EXPECT_EQ(cudaGetDevice(&d), cudaSuccess);
  return d;
}

TEST(CudaDevices, TwoBackendsInterleavedOnTwoDevices) {
  const int devices = cuda_device_count();
  if (devices == 0) GTEST_SKIP() << "no CUDA device: " << cuda_device_summary();
  // dev[d]: backend d's device; other[d]: the device made current before its calls.
  const int dev[2] = {0, devices > 1 ? 1 : 0};
  const int other[2] = {dev[1], dev[0]};
  if (devices < 2)
    std::printf("[   NOTE   ] one CUDA device: both backends on device 0 (no device switch)\n");
  std::unique_ptr<Backend> gpu[2] = {make_backend("cuda", 0, dev[0]),
                                     make_backend("cuda", 0, dev[1])};
  CpuBackend cpu(2);
  Rng rng(91);
  const uint32_t rows = 37, cols = 1025, k = 9;
  const std::vector<float> x = test::uniform(size_t(rows) * cols, rng, -1, 1);
  const std::vector<float> w = test::uniform(size_t(cols) * 65, rng, -1, 1);
  std::vector<float> z_cpu(size_t(rows) * 65), sums_cpu(cols, 0.5f), top_v(size_t(rows) * k);
  std::vector<uint32_t> top_i(size_t(rows) * k);
  cpu.gemm(false, false, int(rows), 65, int(cols), 1.0f, x.data(), int(cols), w.data(), 65, 0.0f,
           z_cpu.data(), 65);
  cpu.column_sums(x.data(), rows, cols, 0.5f, 1.0f, sums_cpu.data());
  cpu.top_k(x.data(), rows, cols, cols, k, top_v.data(), top_i.data());

  // Memory of each backend, allocated with the OTHER device current.
  std::vector<DeviceArray<float>> gx, gw, gz, gs, gv;
  std::vector<DeviceArray<uint32_t>> gi;
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(cudaSetDevice(other[d]), cudaSuccess);
    gx.push_back(on(*gpu[d], x));
    gw.push_back(on(*gpu[d], w));
    gz.emplace_back(*gpu[d], size_t(rows) * 65);
    gs.push_back(on(*gpu[d], std::vector<float>(cols, 0.5f)));
    gv.emplace_back(*gpu[d], size_t(rows) * k);
    gi.emplace_back(*gpu[d], size_t(rows) * k);
    EXPECT_EQ(current_device(), other[d]) << "the backend changed the caller's device";
    cudaPointerAttributes a{};
    ASSERT_EQ(cudaPointerGetAttributes(&a, gx.back().data()), cudaSuccess);
    EXPECT_EQ(a.device, dev[d]) << "memory of the backend on device " << dev[d] << " is on "
                                << a.device;
  }
  // Interleaved work, each call made with the other device current.
  for (int round = 0; round < 3; ++round)
    for (int d = 0; d < 2; ++d) {
      ASSERT_EQ(cudaSetDevice(other[d]), cudaSuccess);
      gpu[d]->gemm(false, false, int(rows), 65, int(cols), 1.0f, gx[size_t(d)].data(), int(cols),
                   gw[size_t(d)].data(), 65, 0.0f, gz[size_t(d)].data(), 65);
      if (round == 0)
        gpu[d]->column_sums(gx[size_t(d)].data(), rows, cols, 0.5f, 1.0f, gs[size_t(d)].data());
      gpu[d]->top_k(gx[size_t(d)].data(), rows, cols, cols, k, gv[size_t(d)].data(),
                    gi[size_t(d)].data());
      gpu[d]->sum_squares(gx[size_t(d)].data(), x.size());
      EXPECT_EQ(current_device(), other[d]);
    }
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(cudaSetDevice(other[d]), cudaSuccess);
    gpu[d]->synchronize();
    EXPECT_TRUE(near(gz[size_t(d)].to_host(), z_cpu, 1e-4, 1e-4)) << "device " << d;
    EXPECT_TRUE(near(gs[size_t(d)].to_host(), sums_cpu, 1e-6, 1e-6)) << "device " << d;
    EXPECT_TRUE(test::bitwise_equal(gv[size_t(d)].to_host(), top_v)) << "device " << d;
    EXPECT_EQ(gi[size_t(d)].to_host(), top_i) << "device " << d;
  }
  // Released with the other device current as well (DeviceArray's destructor calls release).
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(cudaSetDevice(other[d]), cudaSuccess);
    gx[size_t(d)] = DeviceArray<float>();
    EXPECT_EQ(current_device(), other[d]);
  }
}

// A backend (on the last device) used from a thread that never set a device (its current device
// is 0): the calls must still run on the backend's device and leave the thread's device alone.
TEST(CudaDevices, CallsFromAFreshThreadRunOnTheBackendsDevice) {
  const int devices = cuda_device_count();
  if (devices == 0) GTEST_SKIP() << "no CUDA device: " << cuda_device_summary();
  auto gpu = make_backend("cuda", 0, devices - 1);
  Rng rng(92);
  const std::vector<float> x = test::uniform(4099, rng, -1, 1);
  std::vector<float> got;
  int device_seen = -1;
  std::thread worker([&] {
    auto gx = on(*gpu, x);
    gpu->scale(gx.data(), x.size(), 2.0f);
    got = gx.to_host();
    cudaGetDevice(&device_seen);
  });
  worker.join();
  EXPECT_EQ(device_seen, 0) << "the thread's current device was changed";
  ASSERT_EQ(got.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], 2.0f * x[i]) << i;
}

}  // namespace
}  // namespace nn
