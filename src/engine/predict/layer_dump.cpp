// Layer activation dumps (see layer_dump.h).
#include "predict/layer_dump.h"

#include <cstdio>

#include "io/netcdf_dataset.h"

namespace nn {

bool is_netcdf_path(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".nc") == 0;
}

LayerDump::LayerDump(const std::string& path, const LayerSpec& layer, uint64_t examples)
    : path_(path), units_(static_cast<uint32_t>(layer.units())) {
  if (!is_netcdf_path(path)) {
    text_ = std::make_unique<OutputFile>(path);
    return;
  }
  data_.name = layer.name;
  data_.type = DataType::Float;
  data_.examples = data_.unique_examples = examples;
  if (layer.n[3] == 1 && layer.dimensions <= 3) {
    // Keep the layer's shape so image-like layers stay images.
    data_.dimensions = layer.dimensions;
    data_.width = layer.n[0];
    data_.height = layer.n[1];
    data_.length = layer.n[2];
  } else {
    data_.dimensions = 1;
    data_.width = units_;
  }
  data_.dense.assign(examples * units_, 0.0f);
}

void LayerDump::add(uint64_t first, uint32_t rows, const float* values,
                    const std::function<std::string(uint64_t)>& name) {
  if (!text_) {
    std::copy(values, values + size_t(rows) * units_, data_.dense.begin() + first * units_);
    return;
  }
  char num[32];
  for (uint32_t r = 0; r < rows; ++r) {
    line_ = name(first + r);
    line_ += '\t';
    const float* v = values + size_t(r) * units_;
    for (uint32_t j = 0; j < units_; ++j) {
      std::snprintf(num, sizeof num, j ? ",%.7g" : "%.7g", double(v[j]));
      line_ += num;
    }
    line_ += '\n';
    text_->write(line_);
  }
}

void LayerDump::commit() {
  if (text_) {
    text_->commit();
    return;
  }
  write_datasets(path_, {data_});
}

}  // namespace nn
