// Typed, checked access to the attributes and float variables of an open NetCDF group, for the
// network file reader. Every failure is a DataError that names the file and the attribute or
// variable, what was found and what was expected. Private to the network file code in io/.
#pragma once

#include <cstdint>
#include <map>
#include <netcdf>
#include <string>
#include <vector>

#include "io/netcdf_storage.h"

namespace nn {

class NcAttributeReader {
 public:
  // Takes one snapshot of the group's attributes and variables: netCDF-C++'s per-name lookups
  // rebuild the whole list each time, which is quadratic for networks with many layers.
  NcAttributeReader(const netCDF::NcGroup& group, std::string file);

  const std::string& file() const { return file_; }
  // Bounds for variable sizes, looked at before the file was opened (float_variable checks every
  // claimed size against it before allocating); optional.
  void set_storage(const NetcdfStorage* storage) { storage_ = storage; }
  bool has(const std::string& name) const { return atts_.count(name) != 0; }
  bool has_variable(const std::string& name) const { return vars_.count(name) != 0; }

  // Required attributes: DataError "<file>: attribute '<name>' missing" when absent.
  std::string text(const std::string& name) const;
  uint64_t unsigned_value(const std::string& name, uint64_t max) const;
  int64_t signed_value(const std::string& name, int64_t min, int64_t max) const;
  float finite_float(const std::string& name) const;  // NaN/inf rejected
  float any_float(const std::string& name) const;     // NaN/inf allowed
  double finite_double(const std::string& name) const;
  bool flag(const std::string& name) const { return unsigned_value(name, UINT64_MAX) != 0; }
  uint32_t uint32(const std::string& name) const {
    return static_cast<uint32_t>(unsigned_value(name, UINT32_MAX));
  }
  int int32(const std::string& name) const {
    return static_cast<int>(signed_value(name, INT32_MIN, INT32_MAX));
  }

  // Enumeration code in 0..max_code, converted to E.
  template <class E>
  E enum_value(const std::string& name, E max_code) const {
    return static_cast<E>(unsigned_value(name, static_cast<uint64_t>(max_code)));
  }

  // Optional attributes: `fallback` when absent, checked like the required ones when present.
  std::string text_or(const std::string& name, const std::string& fallback) const {
    return has(name) ? text(name) : fallback;
  }
  float finite_float_or(const std::string& name, float fallback) const {
    return has(name) ? finite_float(name) : fallback;
  }
  int int32_or(const std::string& name, int fallback) const {
    return has(name) ? int32(name) : fallback;
  }
  bool flag_or(const std::string& name, bool fallback) const {
    return has(name) ? flag(name) : fallback;
  }

  // Reads a numeric variable of any shape as floats (row-major). DataError when it is missing,
  // not numeric or unreadable. Values are not checked here (validation does that).
  std::vector<float> float_variable(const std::string& name) const;

  [[noreturn]] void fail(const std::string& name, const std::string& problem) const;
  [[noreturn]] void fail_variable(const std::string& name, const std::string& problem) const;

 private:
  const netCDF::NcGroupAtt& numeric(const std::string& name) const;
  const netCDF::NcGroupAtt& find(const std::string& name) const;

  std::string file_;
  const NetcdfStorage* storage_ = nullptr;
  std::multimap<std::string, netCDF::NcGroupAtt> atts_;
  std::multimap<std::string, netCDF::NcVar> vars_;
};

// The netCDF library's explanation of an exception (nc_strerror of its code when there is one).
std::string nc_error_text(const netCDF::exceptions::NcException& e);

}  // namespace nn
