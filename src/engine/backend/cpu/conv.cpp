// CpuBackend's convolution entry points: shape checks, then oneDNN or im2col + sgemm
// (cpu/conv.h explains both).
#include "backend/cpu/conv.h"

#include <string>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace nn {
namespace {

std::string axes(const std::array<uint32_t, 3>& v) {
  return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
}

// Geometries come from layers, not from users, so a bad one is an engine bug.
void check(const ConvGeometry& g, const char* kernel) {
  const std::string where = std::string(kernel) + ": in " + axes(g.in) + ", out " + axes(g.out) +
                            ", kernel " + axes(g.kernel) + ", stride " + axes(g.stride) + ", pad " +
                            axes(g.pad);
  NN_CHECK(g.dims >= 1 && g.dims <= 3, where);
  NN_CHECK(g.in_channels >= 1 && g.out_channels >= 1, where);
  for (uint32_t d = 0; d < 3; ++d) {
    NN_CHECK(g.in[d] >= 1 && g.out[d] >= 1 && g.kernel[d] >= 1 && g.stride[d] >= 1, where);
    if (d >= g.dims)
      NN_CHECK(
          g.in[d] == 1 && g.out[d] == 1 && g.kernel[d] == 1 && g.stride[d] == 1 && g.pad[d] == 0,
          where);
  }
}

}  // namespace

bool CpuBackend::has_dnnl() {
#ifdef NN_HAVE_DNNL
  return true;
#else
  return false;
#endif
}

void CpuBackend::set_conv_library(ConvLibrary library) {
  if (library == ConvLibrary::Dnnl && !has_dnnl())
    throw ConfigError("cpu backend: this build has no oneDNN; convolutions use im2col + sgemm");
  conv_library_ = library;
}

void CpuBackend::set_batch_invariant(bool on) {
  if (on && precision_ == Precision::BF16)
    throw ConfigError("cpu backend: batch-invariant products need FP32 precision, not BF16");
  batch_invariant_ = on;
  // oneDNN may pick its algorithm by the batch's size; im2col + sgemm runs each example alone,
  // with OpenBLAS shapes (channels x kernel volume x positions) that do not depend on the batch.
  if (on) conv_library_ = ConvLibrary::Gemm;
}

void CpuBackend::conv_forward(const ConvGeometry& g, uint32_t rows, const float* x, const float* w,
                              const float* bias, bool accumulate, float* y) {
  check(g, "conv_forward");
  if (rows == 0) return;
  if (conv_library_ == ConvLibrary::Dnnl) {
    cpu::conv_forward_dnnl(*dnnl_, *pool_, g, rows, x, w, bias, accumulate, y);
  } else {
    cpu::conv_forward_gemm(*pool_, g, rows, x, w, bias, accumulate, y);
  }
}

void CpuBackend::conv_backward_data(const ConvGeometry& g, uint32_t rows, const float* dy,
                                    const float* w, float* dx) {
  check(g, "conv_backward_data");
  if (rows == 0) return;
  if (conv_library_ == ConvLibrary::Dnnl) {
    cpu::conv_backward_data_dnnl(*dnnl_, *pool_, g, rows, dy, w, dx);
  } else {
    cpu::conv_backward_data_gemm(*pool_, g, rows, dy, w, dx);
  }
}

void CpuBackend::conv_backward_filter(const ConvGeometry& g, uint32_t rows, const float* x,
                                      const float* dy, float alpha, float* dw, float* dbias) {
  check(g, "conv_backward_filter");
  if (conv_library_ == ConvLibrary::Dnnl && rows > 0) {
    cpu::conv_backward_filter_dnnl(*dnnl_, *pool_, g, rows, x, dy, alpha, dw, dbias);
  } else {
    cpu::conv_backward_filter_gemm(*pool_, g, rows, x, dy, alpha, dw, dbias);
  }
}

}  // namespace nn
