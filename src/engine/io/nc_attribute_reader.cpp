// Checked reading of NetCDF attributes and float variables (see nc_attribute_reader.h).
#include "io/nc_attribute_reader.h"

#include <netcdf.h>

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/memory_budget.h"

namespace nn {

using netCDF::NcGroupAtt;
using netCDF::exceptions::NcException;

namespace {

enum class NumberClass { Float, Signed, Unsigned, Text, Other };

NumberClass classify(nc_type type) {
  switch (type) {
    case NC_FLOAT:
    case NC_DOUBLE:
      return NumberClass::Float;
    case NC_BYTE:
    case NC_SHORT:
    case NC_INT:
    case NC_INT64:
      return NumberClass::Signed;
    case NC_UBYTE:
    case NC_USHORT:
    case NC_UINT:
    case NC_UINT64:
      return NumberClass::Unsigned;
    case NC_CHAR:
    case NC_STRING:
      return NumberClass::Text;
    default:
      return NumberClass::Other;
  }
}

std::string range_text(long double min, long double max) {
  auto show = [](long double v) {
    return v < 0 ? std::to_string(static_cast<long long>(v))
                 : std::to_string(static_cast<unsigned long long>(v));
  };
  return "expected " + show(min) + ".." + show(max);
}

}  // namespace

std::string nc_error_text(const NcException& e) {
  if (e.errorCode() != 0) return nc_strerror(e.errorCode());
  std::string text = e.what();
  // netCDF-C++ appends "\nfile: ncFile.cpp line: N" (its own source location): not useful here.
  const auto newline = text.find('\n');
  return newline == std::string::npos ? text : text.substr(0, newline);
}

NcAttributeReader::NcAttributeReader(const netCDF::NcGroup& group, std::string file)
    : file_(std::move(file)), atts_(group.getAtts()), vars_(group.getVars()) {}

void NcAttributeReader::fail(const std::string& name, const std::string& problem) const {
  throw DataError(file_ + ": attribute '" + name + "' " + problem);
}

void NcAttributeReader::fail_variable(const std::string& name, const std::string& problem) const {
  throw DataError(file_ + ": variable '" + name + "': " + problem);
}

const NcGroupAtt& NcAttributeReader::find(const std::string& name) const {
  auto it = atts_.find(name);
  if (it == atts_.end()) fail(name, "missing");
  return it->second;
}

const NcGroupAtt& NcAttributeReader::numeric(const std::string& name) const {
  const NcGroupAtt& att = find(name);
  const NumberClass cls = classify(att.getType().getId());
  if (cls == NumberClass::Text) fail(name, "is text, expected a number");
  if (cls == NumberClass::Other)
    fail(name, "has NetCDF type '" + att.getType().getName() + "', expected a number");
  if (att.getAttLength() != 1)
    fail(name, "has " + std::to_string(att.getAttLength()) + " values, expected 1");
  return att;
}

std::string NcAttributeReader::text(const std::string& name) const {
  const NcGroupAtt& att = find(name);
  const nc_type type = att.getType().getId();
  std::string value;
  try {
    if (type == NC_CHAR) {
      att.getValues(value);
    } else if (type == NC_STRING && att.getAttLength() == 1) {
      char* strings[1] = {nullptr};
      att.getValues(strings);
      value = strings[0] ? strings[0] : "";
      nc_free_string(1, strings);
    } else {
      fail(name, "has NetCDF type '" + att.getType().getName() + "', expected text");
    }
  } catch (const NcException& e) {
    fail(name, "cannot be read (" + nc_error_text(e) + ")");
  }
  // Some writers count C's terminating NUL in the length.
  while (!value.empty() && value.back() == '\0') value.pop_back();
  return value;
}

uint64_t NcAttributeReader::unsigned_value(const std::string& name, uint64_t max) const {
  const NcGroupAtt& att = numeric(name);
  try {
    switch (classify(att.getType().getId())) {
      case NumberClass::Float: {
        double v = 0;
        att.getValues(&v);
        if (!(v >= 0) || v != std::floor(v) || v > static_cast<double>(max))
          fail(name, "is " + std::to_string(v) + ", " + range_text(0, max));
        return static_cast<uint64_t>(v);
      }
      case NumberClass::Signed: {
        long long v = 0;
        att.getValues(&v);
        if (v < 0 || static_cast<unsigned long long>(v) > max)
          fail(name, "is " + std::to_string(v) + ", " + range_text(0, max));
        return static_cast<uint64_t>(v);
      }
      default: {
        unsigned long long v = 0;
        att.getValues(&v);
        if (v > max) fail(name, "is " + std::to_string(v) + ", " + range_text(0, max));
        return v;
      }
    }
  } catch (const NcException& e) {
    fail(name, "cannot be read as an unsigned integer (" + nc_error_text(e) + ")");
  }
}

int64_t NcAttributeReader::signed_value(const std::string& name, int64_t min, int64_t max) const {
  const NcGroupAtt& att = numeric(name);
  try {
    switch (classify(att.getType().getId())) {
      case NumberClass::Float: {
        double v = 0;
        att.getValues(&v);
        if (!(v >= static_cast<double>(min) && v <= static_cast<double>(max)) || v != std::floor(v))
          fail(name, "is " + std::to_string(v) + ", " + range_text(min, max));
        return static_cast<int64_t>(v);
      }
      case NumberClass::Signed: {
        long long v = 0;
        att.getValues(&v);
        if (v < min || v > max) fail(name, "is " + std::to_string(v) + ", " + range_text(min, max));
        return v;
      }
      default: {
        unsigned long long v = 0;
        att.getValues(&v);
        if (max < 0 || v > static_cast<unsigned long long>(max))
          fail(name, "is " + std::to_string(v) + ", " + range_text(min, max));
        return static_cast<int64_t>(v);
      }
    }
  } catch (const NcException& e) {
    fail(name, "cannot be read as an integer (" + nc_error_text(e) + ")");
  }
}

float NcAttributeReader::any_float(const std::string& name) const {
  const NcGroupAtt& att = numeric(name);
  float v = 0;
  try {
    att.getValues(&v);
  } catch (const NcException& e) {
    fail(name, "cannot be read as a float (" + nc_error_text(e) + ")");
  }
  return v;
}

double NcAttributeReader::finite_double(const std::string& name) const {
  const NcGroupAtt& att = numeric(name);
  double v = 0;
  try {
    att.getValues(&v);
  } catch (const NcException& e) {
    fail(name, "cannot be read as a number (" + nc_error_text(e) + ")");
  }
  if (!std::isfinite(v)) fail(name, "is " + std::to_string(v) + ", expected a finite number");
  return v;
}

float NcAttributeReader::finite_float(const std::string& name) const {
  const float v = any_float(name);
  if (!std::isfinite(v)) fail(name, "is " + std::to_string(v) + ", expected a finite number");
  return v;
}

std::vector<float> NcAttributeReader::float_variable(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) fail_variable(name, "missing");
  const netCDF::NcVar& var = it->second;
  const NumberClass cls = classify(var.getType().getId());
  if (cls == NumberClass::Text || cls == NumberClass::Other)
    fail_variable(name, "has NetCDF type '" + var.getType().getName() + "', expected float");
  std::vector<float> values;
  try {
    std::optional<uint64_t> count = 1;
    for (const auto& dim : var.getDims())
      count = count ? checked_mul(*count, dim.getSize()) : count;
    if (!count) fail_variable(name, "has more entries than 64 bits can count");
    if (storage_) {
      storage_->check(name, *count, var.getType().getSize());
    } else if (const std::string problem = over_budget(checked_mul(*count, sizeof(float)));
               !problem.empty()) {
      fail_variable(name, "claims " + std::to_string(*count) + " values, which " + problem);
    }
    values.resize(*count);
    if (*count > 0) var.getVar(values.data());
  } catch (const NcException& e) {
    fail_variable(name, "cannot be read (" + nc_error_text(e) + ")");
  }
  return values;
}

}  // namespace nn
