// A trainable array (weights or biases) with its gradient and optimizer state, in backend memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/device_array.h"

namespace nn {

// A gradient held by rows (train/row_sparse.h): rows rows[0..count) (backend memory, ascending)
// of the parameter viewed as [*][width], their gradient in values ([count][width]); every other
// row's gradient is zero.
struct RowGradient {
  bool enabled = false;  // the layer writes this instead of Parameter::grad
  uint32_t width = 0;
  uint32_t count = 0;
  const uint32_t* rows = nullptr;
  DeviceArray<float> values;
};

// Padded rows (Backend::row_alignment, docs/performance.md "Padded rows"): a parameter that is
// logically [rows][width] held as [rows][stride], stride > width, so that every row of the
// matrix starts aligned. The columns past width are 0 and stay 0: their gradient is always 0
// (the layer's deltas there are 0), so every optimizer leaves them, and their state, at 0.
// Files, the API and the parameter counts see the logical form only. stride 0: unpadded.
struct RowPadding {
  uint32_t width = 0, stride = 0;
  bool on() const { return stride > width; }
  // Values of the logical form of a held array of `held` values.
  size_t logical(size_t held) const { return on() ? held / stride * width : held; }
  // The held form of logical values (zeros in the padding), and the reverse.
  std::vector<float> widen(const float* v, size_t n) const {
    if (!on()) return std::vector<float>(v, v + n);
    const size_t rows = n / width;
    std::vector<float> out(rows * stride, 0.0f);
    for (size_t r = 0; r < rows; ++r) std::copy_n(v + r * width, width, out.data() + r * stride);
    return out;
  }
  std::vector<float> narrow(const std::vector<float>& held) const {
    if (!on()) return held;
    const size_t rows = held.size() / stride;
    std::vector<float> out(rows * width);
    for (size_t r = 0; r < rows; ++r)
      std::copy_n(held.data() + r * stride, width, out.data() + r * width);
    return out;
  }
};

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
  RowGradient row_grad;  // sparse input matrices under row-sparse updates
  // BF16 precision: value rounded to BF16 for the dense products (Backend::convert_to_bf16),
  // made by the first forward pass that needs it. bf16_written: the optimizer wrote this copy
  // with its last update (OptimizerTensor::w_bf16), so the next forward pass uses it without
  // converting. Only Optimizer::update_all sets it, every other update clears it, and a training
  // loop clears it when it ends (TrainingLoop::run), so weights changed in any other way (loaded,
  // restored, set through the API) are always converted afresh.
  DeviceArray<uint16_t> value_bf16;
  bool bf16_written = false;
  RowPadding padding;  // padded rows (above); off for most parameters
  // Values held (the padding included): the size of value, grad and each state array.
  size_t size() const { return value.size(); }
  // Values in files and the API: size() less the padding.
  size_t logical_size() const { return padding.logical(value.size()); }
  // Host copies in the logical form, and uploads from it (`host` of logical_size() values).
  std::vector<float> logical_values(const DeviceArray<float>& a) const {
    return padding.narrow(a.to_host());
  }
  void upload_logical(DeviceArray<float>& a, const float* host, size_t n) const {
    if (!padding.on()) return a.upload(host, n);
    a.upload(padding.widen(host, n));
  }
};

}  // namespace nn
