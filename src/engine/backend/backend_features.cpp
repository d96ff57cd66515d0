// Default bodies of the layer-feature kernels (norm clipping, sparseness penalty, batch norm,
// transposed sparse weights): a backend that does not implement one fails with a message that
// names the kernel and the backend, rather than failing to compile while it is being written.
#include <string>

#include "backend/backend.h"
#include "core/error.h"

namespace nn {
namespace {

[[noreturn]] void missing(const Backend& b, const char* kernel) {
  throw BackendError(std::string(__FILE__) + ": backend '" + b.name() + "' does not implement " +
                     kernel + " (needed by a layer feature of this network)");
}

}  // namespace

void Backend::clip_row_norms(float*, uint32_t, uint32_t, float) {
  missing(*this, "clip_row_norms (DeltaNorm)");
}

void Backend::clip_column_norms(float*, uint32_t, uint32_t, float) {
  missing(*this, "clip_column_norms (WeightNorm)");
}

double Backend::sparseness_penalty(const float*, uint32_t, uint32_t, float, float, float*) {
  missing(*this, "sparseness_penalty (SparsenessPenalty)");
}

void Backend::sparseness_penalty_accumulate(const float*, uint32_t, uint32_t, float, float, float*,
                                            double*) {
  missing(*this, "sparseness_penalty_accumulate (SparsenessPenalty)");
}

void Backend::batch_norm_forward_training(const BatchNormParams&, const float*, float*,
                                          const float*, const float*, float*, float*, float*,
                                          float*) {
  missing(*this, "batch_norm_forward_training (BatchNormalization)");
}

void Backend::batch_norm_forward_inference(const BatchNormParams&, const float*, float*,
                                           const float*, const float*, const float*, const float*) {
  missing(*this, "batch_norm_forward_inference (BatchNormalization)");
}

void Backend::batch_norm_backward(const BatchNormParams&, const float*, const float*, const float*,
                                  const float*, const float*, float, float*, float*, float*) {
  missing(*this, "batch_norm_backward (BatchNormalization)");
}

void Backend::batch_norm_backward_inference(const BatchNormParams&, const float*, const float*,
                                            const float*, const float*, const float*, float, float*,
                                            float*, float*) {
  missing(*this, "batch_norm_backward_inference (BatchNormalization)");
}

void Backend::sparse_matmul_transposed(const SparseView&, const float*, uint32_t, float*) {
  missing(*this, "sparse_matmul_transposed (transposed SharedWeights on a sparse input)");
}

void Backend::sparse_weight_gradient_transposed(const SparseView&, const float*, uint32_t, float,
                                                float*) {
  missing(*this, "sparse_weight_gradient_transposed (transposed SharedWeights on a sparse input)");
}

}  // namespace nn
