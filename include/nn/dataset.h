// Public API: a Dataset is one named array of examples for a network layer (the name is the
// layer's "DataSet"), read from a NetCDF dataset file (nn-generate's output) or made from dense
// or CSR arrays in the caller's memory. Making one from caller arrays copies them into the
// engine's layout once (training gathers shuffled minibatches from it); Evaluators, by contrast,
// read caller batches in place (nn/evaluator.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nn::api {

class Dataset {
 public:
  // Every dataset stored in a NetCDF dataset file. DataError names the file and variable.
  static std::vector<Dataset> read_netcdf(const std::string& path);
  // rows x cols floats, row-major.
  static Dataset dense(const std::string& name, const float* values, uint64_t rows, uint64_t cols);
  // CSR rows (row_ptr has rows + 1 offsets). `values` null makes an indicator dataset (every
  // stored entry is 1, DSSTNE's Boolean attribute, as nn-generate writes for -m indicator).
  // Checked: offsets start at 0 and never decrease, indices < cols, values finite.
  static Dataset csr(const std::string& name, const uint64_t* row_ptr, const uint32_t* index,
                     const float* values, uint64_t rows, uint64_t cols);

  // Writes datasets into one NetCDF dataset file as nn-generate lays it out (their names must
  // differ), with the feature names of those that have them; written to a temporary name and
  // renamed. ConfigError for no datasets or a repeated name, IoError when it cannot be written.
  static void write_netcdf(const std::string& path, const std::vector<Dataset>& sets);

  // This dataset with its features (columns) named, in column order: what a network trained on
  // it records as its items (docs/retraining.md). "" marks an unnamed column; at most features()
  // names, each non-empty name once (ConfigError naming the problem otherwise).
  Dataset with_feature_names(std::vector<std::string> names) const;
  // The names of the features, or null when the dataset has none.
  const std::vector<std::string>* feature_names() const;

  const std::string& name() const;
  uint64_t examples() const;
  uint64_t features() const;
  bool sparse() const;
  bool indicator() const;  // sparse with every stored value 1 (no value array)
  // Host copies of the contents: dense values [examples][features], or CSR arrays (values empty
  // for an indicator dataset). Indexed datasets are expanded to one row per example.
  std::vector<float> dense_values() const;
  void csr_arrays(std::vector<uint64_t>& row_ptr, std::vector<uint32_t>& index,
                  std::vector<float>& values) const;

  struct Impl;  // holds the engine's ExampleSet (src/engine/api/dataset_impl.h)
  const Impl& impl() const { return *impl_; }

 private:
  explicit Dataset(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace nn::api
