// CUDA device probe and a one-kernel smoke test: proves the CUDA toolchain, runtime and driver
// work before the CUDA backend exists. Host logic is tiny, so it lives beside its kernel here.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "backend/cuda/cuda_factory.h"
#include "backend/cuda/device_guard.h"

namespace nn {
namespace {

__global__ void smoke_kernel(float* x, unsigned n, float value) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value + 0.5f * float(i);
}

}  // namespace

int cuda::device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return n;
}

std::string cuda::device_summary() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(err);
  }
  if (n == 0) return "no CUDA device";
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::string out = "CUDA runtime " + std::to_string(runtime / 1000) + "." +
                    std::to_string(runtime % 1000 / 10) + ", driver " +
                    std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      cudaGetLastError();
      out += "\ncuda:" + std::to_string(d) + " (properties unavailable)";
      continue;
    }
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB", double(prop.totalGlobalMem) / (1 << 30));
    out += "\ncuda:" + std::to_string(d) + " " + prop.name + ", sm_" + std::to_string(prop.major) +
           std::to_string(prop.minor) + ", " + mem + ", " +
           std::to_string(prop.multiProcessorCount) + " SMs";
  }
  return out;
}

bool cuda::smoke_test() noexcept {
  if (cuda::device_count() == 0) return false;
  constexpr unsigned kN = 1u << 16;
  float* dev = nullptr;
  // On device 0, giving the caller its current device back (a probe must not move later CUDA
  // work of this thread to another GPU).
  const cuda::DeviceGuard guard(0, std::nothrow);
  if (cudaMalloc(&dev, kN * sizeof(float)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  smoke_kernel<<<(kN + 255) / 256, 256>>>(dev, kN, 3.0f);
  bool ok = cudaGetLastError() == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess;
  std::vector<float> host;
  try {
    host.resize(kN);
  } catch (...) {
    ok = false;
  }
  if (ok)
    ok = cudaMemcpy(host.data(), dev, kN * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(dev);
  for (unsigned i = 0; ok && i < kN; ++i) ok = host[i] == 3.0f + 0.5f * float(i);
  cudaGetLastError();
  return ok;
}

}  // namespace nn
