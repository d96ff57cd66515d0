// Default bodies of the convolution, pooling (DotProduct/Cosine included) and LRN kernels: a
// backend that does not implement them fails with a message naming the kernel and the backend
// when a network needs one, rather than failing to compile while it is being written.
#include <string>

#include "backend/backend.h"
#include "core/error.h"

namespace nn {
namespace {

[[noreturn]] void missing(const Backend& b, const char* kernel) {
  throw BackendError(std::string(__FILE__) + ": backend '" + b.name() + "' does not implement " +
                     kernel + " (needed by a Convolutional or Pooling layer of this network)");
}

}  // namespace

void check_pool_params(const PoolParams& p, const char* kernel) {
  const ConvGeometry& g = p.geometry;
  const std::string where = std::string(kernel) + ": " + to_string(p.function) + " pooling";
  NN_CHECK(p.function == PoolingFunction::Max || p.function == PoolingFunction::Average, where);
  NN_CHECK(g.dims >= 1 && g.dims <= 3 && g.in_channels == g.out_channels, where);
  for (int d = 0; d < 3; ++d)
    NN_CHECK(g.in[d] >= 1 && g.out[d] >= 1 && g.kernel[d] >= 1 && g.stride[d] >= 1, where);
}

void Backend::conv_forward(const ConvGeometry&, uint32_t, const float*, const float*, const float*,
                           bool, float*) {
  missing(*this, "conv_forward");
}

void Backend::conv_backward_data(const ConvGeometry&, uint32_t, const float*, const float*,
                                 float*) {
  missing(*this, "conv_backward_data");
}

void Backend::conv_backward_filter(const ConvGeometry&, uint32_t, const float*, const float*, float,
                                   float*, float*) {
  missing(*this, "conv_backward_filter");
}

void Backend::pool_forward(const PoolParams&, uint32_t, const float*, bool, float*) {
  missing(*this, "pool_forward");
}

void Backend::pool_backward(const PoolParams&, uint32_t, const float*, const float*, float*) {
  missing(*this, "pool_backward");
}

void Backend::lrn_forward(const LrnParams&, uint32_t, const float*, bool, float*) {
  missing(*this, "lrn_forward");
}

void Backend::lrn_backward(const LrnParams&, uint32_t, const float*, const float*, float*) {
  missing(*this, "lrn_backward");
}

void Backend::similarity_forward(PoolingFunction, uint32_t, uint32_t, const float*, const float*,
                                 float*, uint32_t) {
  missing(*this, "similarity_forward (DotProduct / Cosine pooling)");
}

void Backend::similarity_backward(PoolingFunction, uint32_t, uint32_t, const float*, const float*,
                                  const float*, uint32_t, float*, float*) {
  missing(*this, "similarity_backward (DotProduct / Cosine pooling)");
}

}  // namespace nn
