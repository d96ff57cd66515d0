// Shared helpers for the data-layer tests: a self-deleting temporary directory, file writers,
// small dataset builders, and raw netCDF C API accessors used to check the on-disk layout
// independently of our reader.
#pragma once

#include <gtest/gtest.h>
#include <netcdf.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace nn::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "nn_data_test_XXXXXX").string();
    if (!mkdtemp(&tmpl[0])) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Sparse dataset from per-example index lists (values empty => Boolean).
inline ExampleSet make_sparse(const std::string& name, uint32_t width,
                              const std::vector<std::vector<uint32_t>>& rows,
                              const std::vector<std::vector<float>>& values = {}) {
  ExampleSet ds;
  ds.name = name;
  ds.width = width;
  ds.attributes = attr::Sparse | (values.empty() ? attr::Boolean : 0);
  ds.type = values.empty() ? DataType::UInt : DataType::Float;
  ds.examples = ds.unique_examples = rows.size();
  for (size_t i = 0; i < rows.size(); ++i) {
    ds.sparse_start.push_back(ds.sparse_index.size());
    ds.sparse_index.insert(ds.sparse_index.end(), rows[i].begin(), rows[i].end());
    if (!values.empty())
      ds.sparse_value.insert(ds.sparse_value.end(), values[i].begin(), values[i].end());
    ds.sparse_end.push_back(ds.sparse_index.size());
  }
  return ds;
}

inline ExampleSet make_dense(const std::string& name, DataType type, uint32_t width,
                             uint64_t examples, std::vector<float> data) {
  ExampleSet ds;
  ds.name = name;
  ds.type = type;
  ds.width = width;
  ds.examples = ds.unique_examples = examples;
  ds.dense = std::move(data);
  return ds;
}

// ---- raw netCDF access (C API), independent of read_datasets ----

class RawFile {
 public:
  explicit RawFile(const std::string& path, int mode = NC_NOWRITE) {
    EXPECT_EQ(nc_open(path.c_str(), mode, &id_), NC_NOERR) << path;
  }
  ~RawFile() { nc_close(id_); }
  int id() const { return id_; }

  bool has_att(const std::string& name) const {
    return nc_inq_attid(id_, NC_GLOBAL, name.c_str(), nullptr) == NC_NOERR;
  }
  nc_type att_type(const std::string& name) const {
    nc_type t = NC_NAT;
    nc_inq_atttype(id_, NC_GLOBAL, name.c_str(), &t);
    return t;
  }
  unsigned att_uint(const std::string& name) const {
    unsigned v = 0;
    EXPECT_EQ(nc_get_att_uint(id_, NC_GLOBAL, name.c_str(), &v), NC_NOERR) << name;
    return v;
  }
  std::string att_text(const std::string& name) const {
    size_t len = 0;
    EXPECT_EQ(nc_inq_attlen(id_, NC_GLOBAL, name.c_str(), &len), NC_NOERR) << name;
    std::string s(len, '\0');
    if (len) nc_get_att_text(id_, NC_GLOBAL, name.c_str(), &s[0]);
    return s;
  }
  bool has_dim(const std::string& name) const {
    int d;
    return nc_inq_dimid(id_, name.c_str(), &d) == NC_NOERR;
  }
  size_t dim(const std::string& name) const {
    int d = -1;
    size_t len = 0;
    EXPECT_EQ(nc_inq_dimid(id_, name.c_str(), &d), NC_NOERR) << name;
    nc_inq_dimlen(id_, d, &len);
    return len;
  }
  bool has_var(const std::string& name) const {
    int v;
    return nc_inq_varid(id_, name.c_str(), &v) == NC_NOERR;
  }
  nc_type var_type(const std::string& name) const {
    int v = -1;
    nc_type t = NC_NAT;
    EXPECT_EQ(nc_inq_varid(id_, name.c_str(), &v), NC_NOERR) << name;
    nc_inq_vartype(id_, v, &t);
    return t;
  }
  // The name of the variable's (single) dimension.
  std::string var_dim(const std::string& name) const {
    int v = -1, ndims = 0, dims[NC_MAX_VAR_DIMS];
    char dname[NC_MAX_NAME + 1] = {0};
    EXPECT_EQ(nc_inq_varid(id_, name.c_str(), &v), NC_NOERR) << name;
    nc_inq_varndims(id_, v, &ndims);
    EXPECT_EQ(ndims, 1) << name;
    nc_inq_vardimid(id_, v, dims);
    nc_inq_dimname(id_, dims[0], dname);
    return dname;
  }
  std::vector<unsigned long long> var_u64(const std::string& name) const {
    return get<unsigned long long>(name, nc_get_var_ulonglong);
  }
  std::vector<float> var_float(const std::string& name) const {
    return get<float>(name, nc_get_var_float);
  }

 private:
  template <typename T, typename Get>
  std::vector<T> get(const std::string& name, Get fn) const {
    int v = -1, ndims = 0, dims[NC_MAX_VAR_DIMS];
    EXPECT_EQ(nc_inq_varid(id_, name.c_str(), &v), NC_NOERR) << name;
    nc_inq_varndims(id_, v, &ndims);
    nc_inq_vardimid(id_, v, dims);
    size_t n = 1;
    for (int i = 0; i < ndims; ++i) {
      size_t len = 0;
      nc_inq_dimlen(id_, dims[i], &len);
      n *= len;
    }
    std::vector<T> out(n);
    if (n) EXPECT_EQ(fn(id_, v, out.data()), NC_NOERR) << name;
    return out;
  }
  int id_ = -1;
};

}  // namespace nn::test
