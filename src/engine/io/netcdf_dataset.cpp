// Dataset files in DSSTNE's NetCDF layout (docs/file-formats.md, "Dataset files"), through the
// netCDF C API (the checked reader is io/netcdf_reader.h): whole variables are read and written at
// once (the ML-20M ratings are ~20M entries), and every failure becomes a DataError/IoError naming
// the file and the attribute or variable.
#include "io/netcdf_dataset.h"

#include <netcdf.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "io/file_checksum.h"
#include "io/isolated_read.h"
#include "io/netcdf_header_check.h"
#include "io/netcdf_output.h"
#include "io/netcdf_reader.h"
#include "io/netcdf_storage.h"
#include "io/netcdf_strings.h"

namespace nn {

namespace {

// The NetCDF type used for a dataset's values (what DSSTNE would store for its element type).
nc_type value_type(DataType t) {
  switch (t) {
    case DataType::UInt:
      return NC_UINT;
    case DataType::Int:
      return NC_INT;
    case DataType::LLInt:
      return NC_INT64;
    case DataType::ULLInt:
      return NC_UINT64;
    case DataType::Float:
      return NC_FLOAT;
    case DataType::Double:
      return NC_DOUBLE;
    case DataType::RGB8:
      return NC_UBYTE;
    case DataType::RGB16:
      return NC_USHORT;
    case DataType::UChar:
      return NC_UBYTE;
    case DataType::Char:
      // DSSTNE's loader reads Char data (T = char) through netCDF's text API, which accepts
      // only NC_CHAR variables; NC_BYTE would make its load fail.
      return NC_CHAR;
  }
  return NC_FLOAT;
}

// Range of an integer NetCDF type as doubles (floats are stored as-is).
bool integer_range(nc_type t, double& lo, double& hi) {
  switch (t) {
    case NC_BYTE:
    case NC_CHAR:  // Char values: signed bytes stored as text
      lo = -128, hi = 127;
      return true;
    case NC_UBYTE:
      lo = 0, hi = 255;
      return true;
    case NC_SHORT:
      lo = -32768, hi = 32767;
      return true;
    case NC_USHORT:
      lo = 0, hi = 65535;
      return true;
    case NC_INT:
      lo = -2147483648.0, hi = 2147483647.0;
      return true;
    case NC_UINT:
      lo = 0, hi = 4294967295.0;
      return true;
    case NC_INT64:
      lo = -9.2233720368547758e18, hi = 9.2233720368547758e18;
      return true;
    case NC_UINT64:
      lo = 0, hi = 1.8446744073709552e19;
      return true;
    default:
      return false;
  }
}

// ------------------------------------------------------------------------------------------
// Reading

using Reader = NetcdfReader;

// The memory a dataset's arrays will take once read (with the transient copies of the reader),
// checked against the budget before any of them is allocated.
void check_dataset_memory(const Reader& r, const ExampleSet& ds, const std::string& sfx,
                          uint64_t entries, const std::string& entries_dim) {
  std::optional<uint64_t> bytes = 0;
  const auto add = [&](uint64_t count, uint64_t size) {
    if (bytes) bytes = checked_add(*bytes, checked_mul(count, size).value_or(UINT64_MAX));
  };
  if (ds.is_sparse()) {
    add(ds.unique_examples, 2 * 2 * sizeof(uint64_t));  // start/end, read as 64-bit then copied
    add(entries, sizeof(uint32_t));                     // sparseIndex
    if (!ds.is_boolean()) add(entries, sizeof(float) + 1);
  } else {
    add(entries, sizeof(float) + 1);
  }
  if (ds.is_weighted()) add(ds.examples, sizeof(float));
  if (ds.is_indexed()) add(ds.examples, sizeof(uint32_t));
  const std::string problem = over_budget(bytes);
  // Both dimensions are named: either may be the one that claims too much.
  if (!problem.empty())
    r.fail("examplesDim" + sfx + ", " + entries_dim,
           "dataset " + sfx + " claims " + std::to_string(ds.examples) + " examples and " +
               std::to_string(entries) + " entries, which " + problem);
}

std::vector<uint64_t> read_offsets(const Reader& r, const std::string& name, uint64_t u,
                                   const std::string& why) {
  // Legacy files store 32-bit offsets, newer ones 64-bit; the library converts either.
  std::vector<unsigned long long> raw =
      r.read<unsigned long long>(name, u, why, true, nc_get_var_ulonglong);
  return std::vector<uint64_t>(raw.begin(), raw.end());
}

ExampleSet read_one(const Reader& r, const std::string& path, uint64_t n) {
  const std::string sfx = std::to_string(n);
  uint64_t entries = 0;
  std::string entries_dim;
  ExampleSet ds = read_dataset_header(r, n, entries, entries_dim);
  const std::string rows_why = ds.is_indexed() ? "uniqueExamplesDim" + sfx : "examplesDim" + sfx;
  check_dataset_memory(r, ds, sfx, entries, entries_dim);
  if (ds.is_sparse()) {
    ds.sparse_start = read_offsets(r, "sparseStart" + sfx, ds.unique_examples, rows_why);
    ds.sparse_end = read_offsets(r, "sparseEnd" + sfx, ds.unique_examples, rows_why);
    ds.sparse_index =
        r.read<uint32_t>("sparseIndex" + sfx, entries, entries_dim, true, nc_get_var_uint);
    if (!ds.is_boolean())
      ds.sparse_value = r.values("sparseData" + sfx, entries, entries_dim, ds.type);
  } else {
    ds.dense = r.values("data" + sfx, entries, entries_dim, ds.type);
  }
  if (ds.is_weighted())
    ds.example_weight = r.read<float>("dataWeight" + sfx, ds.examples, "examplesDim" + sfx, false,
                                      nc_get_var_float);
  if (ds.is_indexed())
    ds.index =
        r.read<uint32_t>("index" + sfx, ds.examples, "examplesDim" + sfx, true, nc_get_var_uint);
  ds.validate(path, sfx);
  return ds;
}

// ------------------------------------------------------------------------------------------
// Writing

class Writer {
 public:
  Writer(const std::string& path, int nc) : path_(path), nc_(nc) {
    int old_mode;
    // Every variable is written in full, so prefilling with fill values is wasted work.
    check(nc_set_fill(nc_, NC_NOFILL, &old_mode), "set_fill");
  }

  void check(int rc, const std::string& what) const {
    if (rc != NC_NOERR)
      throw IoError(path_ + ": " + what + ": cannot write NetCDF: " + nc_strerror(rc));
  }
  void uint_att(const std::string& name, uint64_t v) {
    const unsigned int u = static_cast<unsigned int>(v);
    check(nc_put_att_uint(nc_, NC_GLOBAL, name.c_str(), NC_UINT, 1, &u), name);
  }
  void text_att(const std::string& name, const std::string& v) {
    check(nc_put_att_text(nc_, NC_GLOBAL, name.c_str(), v.size(), v.data()), name);
  }
  int dim(const std::string& name, uint64_t len) {
    int id;
    // A zero length would declare an unlimited dimension, which still reads back as 0.
    check(nc_def_dim(nc_, name.c_str(), len, &id), name);
    return id;
  }
  int var(const std::string& name, nc_type type, int dimid) {
    int id;
    check(nc_def_var(nc_, name.c_str(), type, 1, &dimid, &id), name);
    return id;
  }
  int string_var(const std::string& dim, const std::string& name, size_t count) {
    return define_string_variable(nc_, dim, name, count, path_);
  }
  void put_strings(int id, const std::vector<std::string>& v) {
    put_string_variable(nc_, id, v, path_);
  }
  void end_define() { check(nc_enddef(nc_), "enddef"); }
  template <typename T, typename Put>
  void put(int id, const std::string& name, const std::vector<T>& v, Put fn) {
    if (!v.empty()) check(fn(nc_, id, v.data()), name);
  }

 private:
  const std::string& path_;
  int nc_;
};

// Integer file types cannot hold fractions or out-of-range values; refuse rather than truncate.
void check_fits(const std::string& path, const std::string& var, const std::vector<float>& v,
                DataType type) {
  double lo, hi;
  if (!integer_range(value_type(type), lo, hi)) return;
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    if (x != std::floor(x) || x < lo || x > hi)
      throw DataError(path + ": " + var + ": entry " + std::to_string(i) + " is " + num(x) +
                      "; dataType " + to_string(type) + " stores integers in [" + num(lo) + ", " +
                      num(hi) + "]");
  }
}

struct PendingVars {
  int start = -1, end = -1, index = -1, value = -1, data = -1, weight = -1, example_index = -1;
  int names = -1;
  bool wide_offsets = false;
};

PendingVars define_one(Writer& w, const ExampleSet& ds, size_t n) {
  const std::string sfx = std::to_string(n);
  PendingVars p;
  w.text_att("name" + sfx, ds.name);
  w.uint_att("dataType" + sfx, uint32_t(ds.type));
  w.uint_att("attributes" + sfx, ds.attributes);
  w.uint_att("kind" + sfx, uint32_t(ds.kind));
  w.uint_att("dimensions" + sfx, uint32_t(ds.dimensions));
  w.uint_att("width" + sfx, ds.width);
  if (ds.dimensions > 1) w.uint_att("height" + sfx, ds.height);
  if (ds.dimensions > 2) w.uint_att("length" + sfx, ds.length);

  const int examples = w.dim("examplesDim" + sfx, ds.examples);
  int rows = examples;
  if (ds.is_indexed()) rows = w.dim("uniqueExamplesDim" + sfx, ds.unique_examples);
  if (ds.is_sparse()) {
    const int nnz = w.dim("sparseDataDim" + sfx, ds.nnz());
    // 32-bit offsets as generateNetCDF writes them, unless the entry count needs 64 bits.
    p.wide_offsets = ds.nnz() > std::numeric_limits<uint32_t>::max();
    const nc_type offset_type = p.wide_offsets ? NC_UINT64 : NC_UINT;
    p.start = w.var("sparseStart" + sfx, offset_type, rows);
    p.end = w.var("sparseEnd" + sfx, offset_type, rows);
    p.index = w.var("sparseIndex" + sfx, NC_UINT, nnz);
    if (!ds.is_boolean()) p.value = w.var("sparseData" + sfx, value_type(ds.type), nnz);
  } else {
    const int len = w.dim("dataDim" + sfx, ds.dense.size());
    p.data = w.var("data" + sfx, value_type(ds.type), len);
  }
  if (ds.is_weighted()) p.weight = w.var("dataWeight" + sfx, NC_FLOAT, examples);
  if (ds.is_indexed()) p.example_index = w.var("index" + sfx, NC_UINT, examples);
  if (ds.feature_names && !ds.feature_names->empty())
    p.names = w.string_var("indToFeatureDim" + sfx, "indToFeature" + sfx, ds.feature_names->size());
  return p;
}

void put_offsets(Writer& w, int id, const std::string& name, const std::vector<uint64_t>& v,
                 bool wide) {
  if (wide) {
    const std::vector<unsigned long long> out(v.begin(), v.end());
    w.put(id, name, out, nc_put_var_ulonglong);
  } else {
    const std::vector<unsigned int> out(v.begin(), v.end());
    w.put(id, name, out, nc_put_var_uint);
  }
}

// Values in their file type; Char values go through the text API into their NC_CHAR variable.
void put_values(Writer& w, int id, const std::string& name, const std::vector<float>& v,
                DataType type) {
  if (value_type(type) != NC_CHAR) return w.put(id, name, v, nc_put_var_float);
  std::vector<char> bytes(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    bytes[i] = static_cast<char>(static_cast<signed char>(v[i]));  // range checked by check_fits
  w.put(id, name, bytes, nc_put_var_text);
}

void put_one(Writer& w, const ExampleSet& ds, size_t n, const PendingVars& p) {
  const std::string sfx = std::to_string(n);
  if (ds.is_sparse()) {
    put_offsets(w, p.start, "sparseStart" + sfx, ds.sparse_start, p.wide_offsets);
    put_offsets(w, p.end, "sparseEnd" + sfx, ds.sparse_end, p.wide_offsets);
    w.put(p.index, "sparseIndex" + sfx, ds.sparse_index, nc_put_var_uint);
    if (p.value >= 0) put_values(w, p.value, "sparseData" + sfx, ds.sparse_value, ds.type);
  } else {
    put_values(w, p.data, "data" + sfx, ds.dense, ds.type);
  }
  if (p.weight >= 0) w.put(p.weight, "dataWeight" + sfx, ds.example_weight, nc_put_var_float);
  if (p.example_index >= 0) w.put(p.example_index, "index" + sfx, ds.index, nc_put_var_uint);
  if (p.names >= 0) w.put_strings(p.names, *ds.feature_names);
}

// Bytes the file's arrays take (a size hint for the in-memory file).
size_t payload_bytes(const std::vector<ExampleSet>& sets) {
  size_t bytes = 0;
  for (const ExampleSet& ds : sets)
    bytes += 8 * (ds.sparse_start.size() + ds.sparse_end.size()) +
             4 * (ds.sparse_index.size() + ds.sparse_value.size() + ds.dense.size() +
                  ds.example_weight.size() + ds.index.size()) +
             (ds.feature_names ? string_variable_bytes(*ds.feature_names) : 0);
  return bytes;
}

std::vector<ExampleSet> read_datasets_here(const std::string& path) {
  const Reader r(path);
  const uint64_t count = r.uint_att("datasets");
  if (count == 0) r.fail("datasets", "is 0; expected at least one dataset");
  std::vector<ExampleSet>
      sets;  // not reserved: `count` is a claim; each dataset read proves itself
  for (uint64_t n = 0; n < count; ++n) sets.push_back(read_one(r, path, n));
  return sets;
}

}  // namespace

std::vector<ExampleSet> read_datasets(const std::string& path) {
  // A file without a checksum is read in a child process first: libhdf5 can crash on it.
  read_isolated_first(path, [&] { read_datasets_here(path); });
  return read_datasets_here(path);
}

void write_datasets(AtomicFile& out, const std::vector<ExampleSet>& sets) {
  const std::string& path = out.target();
  if (sets.empty()) throw DataError(path + ": datasets: nothing to write (no datasets)");
  for (size_t n = 0; n < sets.size(); ++n) {
    const ExampleSet& ds = sets[n];
    const std::string sfx = std::to_string(n);
    ds.validate(path, sfx);
    if (ds.is_sparse() && !ds.is_boolean())
      check_fits(path, "sparseData" + sfx, ds.sparse_value, ds.type);
    if (!ds.is_sparse()) check_fits(path, "data" + sfx, ds.dense, ds.type);
    if (ds.examples == 0)
      throw DataError(path + ": examplesDim" + sfx + ": dataset \"" + ds.name +
                      "\" has no examples; DSSTNE readers need at least one");
  }
  write_netcdf(out, payload_bytes(sets), [&](int nc) {
    Writer w(path, nc);
    w.uint_att("datasets", sets.size());
    std::vector<PendingVars> pending;
    for (size_t n = 0; n < sets.size(); ++n) pending.push_back(define_one(w, sets[n], n));
    w.end_define();
    for (size_t n = 0; n < sets.size(); ++n) put_one(w, sets[n], n, pending[n]);
  });
}

void write_datasets(const std::string& path, const std::vector<ExampleSet>& sets) {
  if (sets.empty()) throw DataError(path + ": datasets: nothing to write (no datasets)");
  for (size_t n = 0; n < sets.size(); ++n) sets[n].validate(path, std::to_string(n));
  AtomicFile out(path);
  write_datasets(out, sets);
  out.commit();
}

}  // namespace nn
