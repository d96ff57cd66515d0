// A prediction job's layer dump (nn-predict --dump-layer/--dump): one layer's activations for
// every example, written either as a NetCDF dataset (path ending in .nc: dense Float, named after
// the layer, in DSSTNE's layout so read_datasets and nn-train read it back) or as text, one
// "sample<TAB>v1,v2,..." line each.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "config/network_spec.h"
#include "data/dataset.h"
#include "predict/output_file.h"

namespace nn {

class LayerDump {
 public:
  LayerDump(const std::string& path, const LayerSpec& layer, uint64_t examples);
  // Activations [rows][units] of examples first..first+rows-1; `name` gives an example's label.
  void add(uint64_t first, uint32_t rows, const float* values,
           const std::function<std::string(uint64_t)>& name);
  // Writes (NetCDF) or renames (text) the file into place.
  void commit();
  bool is_stdout() const { return text_ && text_->is_stdout(); }

 private:
  std::string path_;
  uint32_t units_;
  ExampleSet data_;                   // NetCDF form
  std::unique_ptr<OutputFile> text_;  // text form
  std::string line_;
};

// True when `path` names a NetCDF file (ends in ".nc").
bool is_netcdf_path(const std::string& path);

}  // namespace nn
