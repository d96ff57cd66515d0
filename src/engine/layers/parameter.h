// A trainable array (weights or biases) with its gradient and optimizer state, in backend memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/device_array.h"

namespace nn {

struct Parameter {
  std::string name;  // e.g. "Hidden1<-Input0:weights" (for messages)
  DeviceArray<float> value;
  DeviceArray<float> grad;                // gradient of the batch-mean loss
  std::vector<DeviceArray<float>> state;  // optimizer state (0..2 arrays)
  bool regularize = true;                 // weights get L1/L2 decay; biases do not
  bool locked = false;                    // never updated
  // WeightNorm (max-norm constraint, applied by the optimizer after every update): viewing the
  // values as [norm_rows][size() / norm_rows], every column longer than max_column_norm is
  // rescaled to that length. 0 = off.
  float max_column_norm = 0.0f;
  uint32_t norm_rows = 0;
  // The constrained vectors are the ROWS of that view instead of its columns (convolution
  // filter banks are [out channels][in channels x kernel], one filter per row, while fully
  // connected matrices are [in][out], one output unit per column). The limit is still
  // max_column_norm.
  bool norm_over_rows = false;
  // A model-parallel slice (layers/layer.h ShardInfo): each rank holds different values, so the
  // data-parallel gradient reduction leaves it alone and regularisation sums it over the ranks.
  bool sharded = false;
  size_t size() const { return value.size(); }
};

}  // namespace nn
