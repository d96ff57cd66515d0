// The argument check every backend's pooling kernels start with (conv_params.h): both backends'
// pool_forward / pool_backward call it, so a bad PoolParams fails with the same InternalError on
// either.
#include "backend/conv_params.h"

#include <string>

#include "core/error.h"

namespace nn {

void check_pool_params(const PoolParams& p, const char* kernel) {
  const ConvGeometry& g = p.geometry;
  const std::string where = std::string(kernel) + ": " + to_string(p.function) + " pooling";
  NN_CHECK(p.function == PoolingFunction::Max || p.function == PoolingFunction::Average, where);
  NN_CHECK(g.dims >= 1 && g.dims <= 3 && g.in_channels == g.out_channels, where);
  for (int d = 0; d < 3; ++d)
    NN_CHECK(g.in[d] >= 1 && g.out[d] >= 1 && g.kernel[d] >= 1 && g.stride[d] >= 1, where);
}

}  // namespace nn
