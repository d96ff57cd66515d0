// Minimal CUDA presence checks, usable from any build: without CUDA support (NN_HAVE_CUDA unset),
// without NVIDIA's driver or without the CUDA module (backend/cuda_module.h, which answers them)
// they report no device. Used by `auto` backend selection, tool diagnostics and GPU-only tests.
#pragma once

#include <string>

namespace nn {

// Number of usable CUDA devices; 0 on any CUDA error (no driver, no device, no CUDA build).
int cuda_device_count() noexcept;

// One line per device ("cuda:0 NVIDIA H100 ..., sm_90, 79.1 GiB, 132 SMs") or the reason there
// is none. For messages and logs.
std::string cuda_device_summary();

// Runs a trivial kernel on device 0 (fill + index write, copied back and checked). True when the
// toolchain, driver and device work end to end; false on any failure or without a device.
bool cuda_smoke_test() noexcept;

// Whether cuDNN (used for convolution, LRN and batch normalisation) can be loaded at run time;
// when not, *why (if given) says what was tried. Loads it on the first call (cudnn_support.h).
bool cudnn_loadable(std::string* why = nullptr) noexcept;

}  // namespace nn
