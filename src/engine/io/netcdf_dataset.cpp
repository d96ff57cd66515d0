// Dataset files in DSSTNE's NetCDF layout (docs/file-formats.md, "Dataset files"), through the
// netCDF C API: whole variables are read and written at once (the ML-20M ratings are ~20M
// entries), and every failure becomes a DataError/IoError naming the file and the attribute or
// variable.
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
#include "io/netcdf_storage.h"

namespace nn {

namespace {

bool is_integer_type(nc_type t) {
  return t == NC_BYTE || t == NC_UBYTE || t == NC_SHORT || t == NC_USHORT || t == NC_INT ||
         t == NC_UINT || t == NC_INT64 || t == NC_UINT64;
}

bool is_numeric_type(nc_type t) {
  return is_integer_type(t) || t == NC_FLOAT || t == NC_DOUBLE;
}

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

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// ------------------------------------------------------------------------------------------
// Reading

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), storage_(checked(path)) {
    check_netcdf_classic_header(path);  // libnetcdf's own parser crashes on some bad headers
    const int rc = nc_open(path.c_str(), NC_NOWRITE, &nc_);
    if (rc != NC_NOERR) {
      nc_ = -1;
      throw DataError(
          path + ": cannot open as NetCDF (not a NetCDF file, or truncated): " + nc_strerror(rc));
    }
  }
  ~Reader() {
    if (nc_ >= 0) nc_close(nc_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  [[noreturn]] void fail(const std::string& what, const std::string& problem) const {
    throw DataError(path_ + ": " + what + ": " + problem);
  }

  // `path` once it is known to be a file whose checksums (if it has them) match: nothing reads
  // it before that, libhdf5 (through NetcdfStorage) included.
  static const std::string& checked(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) throw DataError(path + ": file not found");
    if (std::filesystem::is_directory(path, ec))
      throw DataError(path + ": is a directory; expected a NetCDF dataset file");
    verify_file_checksum(path);
    return path;
  }

  bool has_att(const std::string& name) const {
    return nc_inq_attid(nc_, NC_GLOBAL, name.c_str(), nullptr) == NC_NOERR;
  }

  // A non-negative integer global attribute (any numeric type holding an integral value).
  uint64_t uint_att(const std::string& name) const {
    nc_type type;
    size_t len;
    int rc = nc_inq_att(nc_, NC_GLOBAL, name.c_str(), &type, &len);
    if (rc == NC_ENOTATT) fail(name, "missing global attribute");
    check(rc, name);
    if (!is_numeric_type(type) || len != 1)
      fail(name, "expected a single non-negative integer attribute, found " + std::to_string(len) +
                     " value(s) of NetCDF type " + std::to_string(type));
    double v = 0;
    check(nc_get_att_double(nc_, NC_GLOBAL, name.c_str(), &v), name);
    if (!(v >= 0 && v == std::floor(v) && v <= 9007199254740992.0))
      fail(name, "is " + num(v) + "; expected a non-negative integer");
    return static_cast<uint64_t>(v);
  }

  std::string text_att(const std::string& name) const {
    nc_type type;
    size_t len;
    int rc = nc_inq_att(nc_, NC_GLOBAL, name.c_str(), &type, &len);
    if (rc == NC_ENOTATT) fail(name, "missing global attribute");
    check(rc, name);
    std::string s;
    if (type == NC_CHAR) {
      s.resize(len);
      if (len) check(nc_get_att_text(nc_, NC_GLOBAL, name.c_str(), &s[0]), name);
      while (!s.empty() && s.back() == '\0') s.pop_back();
    } else if (type == NC_STRING && len == 1) {
      char* p = nullptr;
      check(nc_get_att_string(nc_, NC_GLOBAL, name.c_str(), &p), name);
      s = p ? p : "";
      nc_free_string(1, &p);
    } else {
      fail(name, "expected a text attribute, found NetCDF type " + std::to_string(type));
    }
    return s;
  }

  bool has_dim(const std::string& name) const {
    int id;
    return nc_inq_dimid(nc_, name.c_str(), &id) == NC_NOERR;
  }

  uint64_t dim(const std::string& name) const {
    int id;
    int rc = nc_inq_dimid(nc_, name.c_str(), &id);
    if (rc == NC_EBADDIM) fail(name, "missing dimension");
    check(rc, name);
    size_t len = 0;
    check(nc_inq_dimlen(nc_, id, &len), name);
    return len;
  }

  // Looks up a variable and checks its element count; returns its id and type.
  int var(const std::string& name, uint64_t expected, const std::string& expected_why,
          nc_type* type) const {
    int id;
    int rc = nc_inq_varid(nc_, name.c_str(), &id);
    if (rc == NC_ENOTVAR) fail(name, "missing variable");
    check(rc, name);
    int ndims = 0;
    int dimids[NC_MAX_VAR_DIMS];
    check(nc_inq_var(nc_, id, nullptr, type, &ndims, dimids, nullptr), name);
    std::optional<uint64_t> count = 1;
    for (int d = 0; d < ndims && count; ++d) {
      size_t len = 0;
      check(nc_inq_dimlen(nc_, dimids[d], &len), name);
      count = checked_mul(*count, len);
    }
    if (!count) fail(name, "has more entries than 64 bits can count; the file is damaged");
    if (*count != expected)
      fail(name, "has " + std::to_string(*count) + " entries; expected " +
                     std::to_string(expected) + " (" + expected_why + ")");
    // Before anything is allocated for it: can the file hold that many, does it fit in memory?
    size_t type_size = 1;
    check(nc_inq_type(nc_, *type, nullptr, &type_size), name);
    storage_.check(name, expected, type_size);
    return id;
  }

  template <typename T, typename Get>
  std::vector<T> read(const std::string& name, uint64_t expected, const std::string& why,
                      bool integer_only, Get get) const {
    nc_type type;
    const int id = var(name, expected, why, &type);
    if (integer_only ? !is_integer_type(type) : !is_numeric_type(type))
      fail(name, std::string("has NetCDF type ") + std::to_string(type) + "; expected " +
                     (integer_only ? "an integer type" : "a numeric type"));
    std::vector<T> out(expected);
    if (expected == 0) return out;
    const int rc = get(nc_, id, out.data());
    if (rc == NC_ERANGE)
      fail(name, integer_only ? "holds negative or too large values for an index"
                              : "holds values outside the float range");
    check(rc, name);
    return out;
  }

  // Dataset values (sparseDataN / dataN) as floats. Char datasets hold their values in NC_CHAR
  // variables (DSSTNE reads them with the text API); netCDF will not convert text to numbers,
  // so those bytes are read as text and taken as signed 8-bit values.
  std::vector<float> values(const std::string& name, uint64_t expected, const std::string& why,
                            DataType data_type) const {
    nc_type type;
    const int id = var(name, expected, why, &type);
    if (type != NC_CHAR) return read<float>(name, expected, why, false, nc_get_var_float);
    if (data_type != DataType::Char)
      fail(name, std::string("is a text (NC_CHAR) variable, which only dataType Char (9) uses; "
                             "dataType is ") +
                     to_string(data_type));
    std::vector<char> raw(expected);
    if (expected) check(nc_get_var_text(nc_, id, raw.data()), name);
    std::vector<float> out(expected);
    for (uint64_t i = 0; i < expected; ++i) out[i] = static_cast<signed char>(raw[i]);
    return out;
  }

 private:
  void check(int rc, const std::string& what) const {
    if (rc != NC_NOERR) fail(what, std::string("NetCDF error: ") + nc_strerror(rc));
  }

  const std::string& path_;
  NetcdfStorage storage_;  // looked at before nc_open
  int nc_ = -1;
};

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
  ExampleSet ds;
  ds.name = r.text_att("name" + sfx);
  // DSSTNE's engine writes `datatypeN` although its reader wants `dataTypeN`; take either.
  const std::string type_att = r.has_att("dataType" + sfx) || !r.has_att("datatype" + sfx)
                                   ? "dataType" + sfx
                                   : "datatype" + sfx;
  const uint64_t type = r.uint_att(type_att);
  if (type > uint64_t(DataType::Char))
    r.fail(type_att, "is " + std::to_string(type) + "; expected a DSSTNE data type code 0..9");
  ds.type = static_cast<DataType>(type);
  const uint64_t attributes = r.uint_att("attributes" + sfx);
  if (attributes > std::numeric_limits<uint32_t>::max())
    r.fail("attributes" + sfx, "is " + std::to_string(attributes) + "; expected a bit mask");
  ds.attributes = static_cast<uint32_t>(attributes);
  if (r.has_att("kind" + sfx)) {
    const uint64_t kind = r.uint_att("kind" + sfx);  // informational only, as in DSSTNE
    ds.kind = kind <= uint64_t(DataKind::Audio) ? static_cast<DataKind>(kind) : DataKind::Numeric;
  }
  const uint64_t dims = r.uint_att("dimensions" + sfx);
  if (dims < 1 || dims > 3)
    r.fail("dimensions" + sfx, "is " + std::to_string(dims) + "; expected 1, 2 or 3");
  ds.dimensions = static_cast<int>(dims);
  auto size_att = [&](const std::string& name) {
    const uint64_t v = r.uint_att(name);
    if (v < 1 || v > std::numeric_limits<uint32_t>::max())
      r.fail(name, "is " + std::to_string(v) + "; expected 1..4294967295");
    return static_cast<uint32_t>(v);
  };
  ds.width = size_att("width" + sfx);
  if (dims > 1) ds.height = size_att("height" + sfx);
  if (dims > 2) ds.length = size_att("length" + sfx);
  // Features are addressed with 32-bit indices (sparseIndex, layer units).
  const auto features = checked_mul(uint64_t(ds.width) * ds.height, ds.length);
  if (!features || *features > std::numeric_limits<uint32_t>::max())
    r.fail("width" + sfx, "width x height x length = " + std::to_string(ds.width) + " x " +
                              std::to_string(ds.height) + " x " + std::to_string(ds.length) +
                              " features; at most 4294967295 fit the 32-bit feature indices");

  ds.examples = r.dim("examplesDim" + sfx);
  ds.unique_examples = ds.examples;
  if (ds.is_indexed() && r.has_dim("uniqueExamplesDim" + sfx))
    ds.unique_examples = r.dim("uniqueExamplesDim" + sfx);
  const std::string rows_why = ds.is_indexed() ? "uniqueExamplesDim" + sfx : "examplesDim" + sfx;

  if (ds.is_sparse()) {
    const uint64_t nnz = r.dim("sparseDataDim" + sfx);
    check_dataset_memory(r, ds, sfx, nnz, "sparseDataDim" + sfx);
    ds.sparse_start = read_offsets(r, "sparseStart" + sfx, ds.unique_examples, rows_why);
    ds.sparse_end = read_offsets(r, "sparseEnd" + sfx, ds.unique_examples, rows_why);
    ds.sparse_index =
        r.read<uint32_t>("sparseIndex" + sfx, nnz, "sparseDataDim" + sfx, true, nc_get_var_uint);
    if (!ds.is_boolean())
      ds.sparse_value = r.values("sparseData" + sfx, nnz, "sparseDataDim" + sfx, ds.type);
  } else {
    const uint64_t len = r.dim("dataDim" + sfx);
    const std::optional<uint64_t> expected =
        ds.is_boolean() ? ds.unique_examples : checked_mul(ds.unique_examples, ds.features());
    if (!expected || len != *expected)
      r.fail("dataDim" + sfx,
             "is " + std::to_string(len) + "; expected " +
                 (expected ? std::to_string(*expected) : std::string("more than 2^64")) +
                 (ds.is_boolean() ? " (one class id per example)" : " (examples x features)"));
    check_dataset_memory(r, ds, sfx, len, "dataDim" + sfx);
    ds.dense = r.values("data" + sfx, len, "dataDim" + sfx, ds.type);
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
}

// Bytes the file's arrays take (a size hint for the in-memory file).
size_t payload_bytes(const std::vector<ExampleSet>& sets) {
  size_t bytes = 0;
  for (const ExampleSet& ds : sets)
    bytes += 8 * (ds.sparse_start.size() + ds.sparse_end.size()) +
             4 * (ds.sparse_index.size() + ds.sparse_value.size() + ds.dense.size() +
                  ds.example_weight.size() + ds.index.size());
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
