// The Backend operations the CUDA backend does not implement yet. Each throws BackendError
// naming the operation (CudaBackend::not_implemented), so a network that needs one fails at its
// first use with a clear message instead of running a wrong kernel. To do: own kernels for
// similarity pooling.
#include "backend/cuda/cuda_backend.h"

namespace nn {

void CudaBackend::similarity_forward(PoolingFunction, uint32_t, uint32_t, const float*,
                                     const float*, float*, uint32_t) {
  not_implemented("similarity_forward (DotProduct/Cosine pooling)");
}
void CudaBackend::similarity_backward(PoolingFunction, uint32_t, uint32_t, const float*,
                                      const float*, const float*, uint32_t, float*, float*) {
  not_implemented("similarity_backward (DotProduct/Cosine pooling)");
}

}  // namespace nn
