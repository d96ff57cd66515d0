// The Backend operations the CUDA backend does not implement yet. Each throws BackendError
// naming the operation (CudaBackend::not_implemented), so a network that needs one fails at its
// first use with a clear message instead of running a wrong kernel. To do: cuDNN convolution,
// pooling, LRN and batch normalisation; own kernels for similarity pooling.
#include "backend/cuda/cuda_backend.h"

namespace nn {

void CudaBackend::batch_norm_forward_training(const BatchNormParams&, const float*, float*,
                                              const float*, const float*, float*, float*, float*,
                                              float*) {
  not_implemented("batch_norm_forward_training");
}
void CudaBackend::batch_norm_forward_inference(const BatchNormParams&, const float*, float*,
                                               const float*, const float*, const float*,
                                               const float*) {
  not_implemented("batch_norm_forward_inference");
}
void CudaBackend::batch_norm_backward(const BatchNormParams&, const float*, const float*,
                                      const float*, const float*, const float*, float, float*,
                                      float*, float*) {
  not_implemented("batch_norm_backward");
}
void CudaBackend::batch_norm_backward_inference(const BatchNormParams&, const float*, const float*,
                                                const float*, const float*, const float*, float,
                                                float*, float*, float*) {
  not_implemented("batch_norm_backward_inference");
}
void CudaBackend::conv_forward(const ConvGeometry&, uint32_t, const float*, const float*,
                               const float*, bool, float*) {
  not_implemented("conv_forward");
}
void CudaBackend::conv_backward_data(const ConvGeometry&, uint32_t, const float*, const float*,
                                     float*) {
  not_implemented("conv_backward_data");
}
void CudaBackend::conv_backward_filter(const ConvGeometry&, uint32_t, const float*, const float*,
                                       float, float*, float*) {
  not_implemented("conv_backward_filter");
}
void CudaBackend::pool_forward(const PoolParams&, uint32_t, const float*, bool, float*) {
  not_implemented("pool_forward");
}
void CudaBackend::pool_backward(const PoolParams&, uint32_t, const float*, const float*, float*) {
  not_implemented("pool_backward");
}
void CudaBackend::lrn_forward(const LrnParams&, uint32_t, const float*, bool, float*) {
  not_implemented("lrn_forward");
}
void CudaBackend::lrn_backward(const LrnParams&, uint32_t, const float*, const float*, float*) {
  not_implemented("lrn_backward");
}
void CudaBackend::similarity_forward(PoolingFunction, uint32_t, uint32_t, const float*,
                                     const float*, float*, uint32_t) {
  not_implemented("similarity_forward (DotProduct/Cosine pooling)");
}
void CudaBackend::similarity_backward(PoolingFunction, uint32_t, uint32_t, const float*,
                                      const float*, const float*, uint32_t, float*, float*) {
  not_implemented("similarity_backward (DotProduct/Cosine pooling)");
}

}  // namespace nn
