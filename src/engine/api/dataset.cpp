// The public Dataset: NetCDF files and caller arrays as the engine's ExampleSet.
#include "nn/dataset.h"

#include <cmath>

#include "api/dataset_impl.h"
#include "core/error.h"
#include "io/netcdf_dataset.h"

namespace nn::api {

Dataset Dataset::Impl::wrap(ExampleSet ds) {
  auto impl = std::make_shared<Impl>();
  impl->data = std::move(ds);
  return Dataset(std::move(impl));
}

std::vector<Dataset> Dataset::read_netcdf(const std::string& path) {
  std::vector<Dataset> out;
  for (ExampleSet& ds : read_datasets(path)) out.push_back(Impl::wrap(std::move(ds)));
  return out;
}

Dataset Dataset::dense(const std::string& name, const float* values, uint64_t rows, uint64_t cols) {
  if (name.empty()) throw ConfigError("dataset: the name must not be empty");
  if (cols == 0 || cols > UINT32_MAX)
    throw ConfigError("dataset '" + name + "': needs 1 to 4294967295 columns; got " +
                      std::to_string(cols));
  ExampleSet ds;
  ds.name = name;
  ds.width = uint32_t(cols);
  ds.examples = ds.unique_examples = rows;
  ds.dense.assign(values, values + rows * cols);
  ds.validate("dataset '" + name + "'");
  return Impl::wrap(std::move(ds));
}

Dataset Dataset::csr(const std::string& name, const uint64_t* row_ptr, const uint32_t* index,
                     const float* values, uint64_t rows, uint64_t cols) {
  if (name.empty()) throw ConfigError("dataset: the name must not be empty");
  if (cols == 0 || cols > UINT32_MAX)
    throw ConfigError("dataset '" + name + "': needs 1 to 4294967295 columns; got " +
                      std::to_string(cols));
  const std::string where = "dataset '" + name + "'";
  if (rows && row_ptr[0] != 0) throw ConfigError(where + ": CSR row offsets must start at 0");
  ExampleSet ds;
  ds.name = name;
  ds.width = uint32_t(cols);
  ds.examples = ds.unique_examples = rows;
  ds.attributes = attr::Sparse | (values ? 0u : attr::Boolean);
  ds.sparse_start.resize(rows);
  ds.sparse_end.resize(rows);
  for (uint64_t r = 0; r < rows; ++r) {
    if (row_ptr[r + 1] < row_ptr[r])
      throw ConfigError(where + ": CSR row offsets decrease at row " + std::to_string(r));
    ds.sparse_start[r] = row_ptr[r];
    ds.sparse_end[r] = row_ptr[r + 1];
  }
  const uint64_t nnz = rows ? row_ptr[rows] : 0;
  ds.sparse_index.assign(index, index + nnz);
  if (values) ds.sparse_value.assign(values, values + nnz);
  ds.validate(where);  // indices < cols, finite values
  return Impl::wrap(std::move(ds));
}

void Dataset::write_netcdf(const std::string& path, const std::vector<Dataset>& sets) {
  if (sets.empty()) throw ConfigError(path + ": no datasets to write");
  std::vector<ExampleSet> engine_sets;
  for (const Dataset& d : sets) {
    for (const ExampleSet& e : engine_sets)
      if (e.name == d.name()) throw ConfigError(path + ": two datasets named '" + d.name() + "'");
    engine_sets.push_back(d.impl().data);
  }
  write_datasets(path, engine_sets);
}

Dataset Dataset::with_feature_names(std::vector<std::string> names) const {
  const std::string problem = feature_names_problem(names, impl_->data.width);
  if (!problem.empty()) throw ConfigError("dataset '" + name() + "': feature names: " + problem);
  ExampleSet copy = impl_->data;
  copy.feature_names = make_feature_names(std::move(names));
  return Impl::wrap(std::move(copy));
}

const std::vector<std::string>* Dataset::feature_names() const {
  return impl_->data.feature_names.get();
}

const std::string& Dataset::name() const {
  return impl_->data.name;
}
uint64_t Dataset::examples() const {
  return impl_->data.examples;
}
uint64_t Dataset::features() const {
  return impl_->data.features();
}
bool Dataset::sparse() const {
  return impl_->data.is_sparse();
}
bool Dataset::indicator() const {
  return impl_->data.is_sparse() && impl_->data.is_boolean();
}

std::vector<float> Dataset::dense_values() const {
  const ExampleSet& ds = impl_->data;
  if (ds.is_sparse()) throw ConfigError("dataset '" + ds.name + "' is sparse; read its CSR arrays");
  const uint64_t f = ds.features();
  std::vector<float> out(ds.examples * f);
  for (uint64_t e = 0; e < ds.examples; ++e) {
    const uint64_t u = ds.row(e);
    if (ds.is_boolean()) {  // one class id per example: one-hot
      const float c = ds.dense[u];
      if (c >= 0 && c < float(f)) out[e * f + uint64_t(c)] = 1.0f;
    } else {
      std::copy(ds.dense.begin() + u * f, ds.dense.begin() + (u + 1) * f, out.begin() + e * f);
    }
  }
  return out;
}

void Dataset::csr_arrays(std::vector<uint64_t>& row_ptr, std::vector<uint32_t>& index,
                         std::vector<float>& values) const {
  const ExampleSet& ds = impl_->data;
  if (!ds.is_sparse()) throw ConfigError("dataset '" + ds.name + "' is dense; read its values");
  row_ptr.assign(1, 0);
  index.clear();
  values.clear();
  for (uint64_t e = 0; e < ds.examples; ++e) {
    const uint64_t u = ds.row(e);
    for (uint64_t i = ds.sparse_start[u]; i < ds.sparse_end[u]; ++i) {
      index.push_back(ds.sparse_index[i]);
      if (!ds.sparse_value.empty()) values.push_back(ds.sparse_value[i]);
    }
    row_ptr.push_back(index.size());
  }
}

}  // namespace nn::api
