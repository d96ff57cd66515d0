// Internal to the CPU backend: the two convolution implementations behind CpuBackend's conv
// kernels. cpu/conv_gemm.cpp: im2col + single-threaded OpenBLAS sgemm per example, spread over
// the pool (always built). cpu/conv_dnnl.cpp: oneDNN's convolution primitives (when the build
// finds oneDNN). Both split the batch into fixed slices of examples, never by thread count, and
// sum weight gradients slice by slice in slice order, so results do not depend on the number of
// threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/conv_params.h"
#include "backend/cpu/thread_pool.h"

namespace nn::cpu {

// Examples per weight-gradient slice (each slice's gradient is summed separately, then the
// slices in order).
constexpr uint32_t kConvSliceRows = 8;

void conv_forward_gemm(ThreadPool& pool, const ConvGeometry& g, uint32_t rows, const float* x,
                       const float* w, const float* bias, bool accumulate, float* y);
void conv_backward_data_gemm(ThreadPool& pool, const ConvGeometry& g, uint32_t rows,
                             const float* dy, const float* w, float* dx);
void conv_backward_filter_gemm(ThreadPool& pool, const ConvGeometry& g, uint32_t rows,
                               const float* x, const float* dy, float alpha, float* dw,
                               float* dbias);

// oneDNN primitives for the shapes seen so far (cpu/conv_dnnl.cpp; make_dnnl_conv() and
// destroy_dnnl_conv() are declared in cpu_backend.h). Without oneDNN in the build these throw
// InternalError (CpuBackend never calls them then).
class DnnlConv;
void conv_forward_dnnl(DnnlConv& conv, ThreadPool& pool, const ConvGeometry& g, uint32_t rows,
                       const float* x, const float* w, const float* bias, bool accumulate,
                       float* y);
void conv_backward_data_dnnl(DnnlConv& conv, ThreadPool& pool, const ConvGeometry& g, uint32_t rows,
                             const float* dy, const float* w, float* dx);
void conv_backward_filter_dnnl(DnnlConv& conv, ThreadPool& pool, const ConvGeometry& g,
                               uint32_t rows, const float* x, const float* dy, float alpha,
                               float* dw, float* dbias);

}  // namespace nn::cpu
