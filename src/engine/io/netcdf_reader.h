// The reading side of dataset files in DSSTNE's NetCDF layout, shared by the whole-file reader
// (io/netcdf_dataset.h) and the example-range reader (io/example_file.h): a checked open and
// checked access to attributes, dimensions and variables, every failure a DataError naming the
// file and the attribute or variable. Internal to io/.
#pragma once

#include <netcdf.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory_budget.h"
#include "data/dataset.h"
#include "io/file_checksum.h"
#include "io/netcdf_header_check.h"
#include "io/netcdf_storage.h"

namespace nn {

inline bool is_integer_type(nc_type t) {
  return t == NC_BYTE || t == NC_UBYTE || t == NC_SHORT || t == NC_USHORT || t == NC_INT ||
         t == NC_UINT || t == NC_INT64 || t == NC_UINT64;
}

inline bool is_numeric_type(nc_type t) {
  return is_integer_type(t) || t == NC_FLOAT || t == NC_DOUBLE;
}

// "%.10g" of a value, for messages.
inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

// Opens a dataset file. With `budget_checks` (whole-file reading) every variable looked up must
// also fit the memory budget; without (reading ranges of examples) it must only be no larger
// than the file can hold, so a header that lies is refused either way.
class NetcdfReader {
 public:
  explicit NetcdfReader(const std::string& path, bool budget_checks = true)
      : path_(path), storage_(checked(path)), budget_checks_(budget_checks) {
    check_netcdf_classic_header(path);  // libnetcdf's own parser crashes on some bad headers
    const int rc = nc_open(path.c_str(), NC_NOWRITE, &nc_);
    if (rc != NC_NOERR) {
      nc_ = -1;
      throw DataError(
          path + ": cannot open as NetCDF (not a NetCDF file, or truncated): " + nc_strerror(rc));
    }
  }
  ~NetcdfReader() {
    if (nc_ >= 0) nc_close(nc_);
  }
  NetcdfReader(const NetcdfReader&) = delete;
  NetcdfReader& operator=(const NetcdfReader&) = delete;

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
    if (budget_checks_)
      storage_.check(name, expected, type_size);
    else
      storage_.check_on_disk(name, expected, type_size);
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

  void check(int rc, const std::string& what) const {
    if (rc != NC_NOERR) fail(what, std::string("NetCDF error: ") + nc_strerror(rc));
  }
  int id() const { return nc_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  NetcdfStorage storage_;  // looked at before nc_open
  bool budget_checks_ = true;
  int nc_ = -1;
};

// Dataset n's description (everything but its arrays) from the global attributes and
// dimensions; `entries` is its sparseDataDim (sparse) or dataDim (dense) length, `entries_dim`
// that dimension's name.
ExampleSet read_dataset_header(const NetcdfReader& r, uint64_t n, uint64_t& entries,
                               std::string& entries_dim);

}  // namespace nn
