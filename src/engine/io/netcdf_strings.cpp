// NetCDF-4 string variables (see netcdf_strings.h).
#include "io/netcdf_strings.h"

#include <netcdf.h>

#include "core/error.h"

namespace nn {
namespace {

void check(int rc, const std::string& where, const std::string& what) {
  if (rc != NC_NOERR)
    throw IoError(where + ": " + what + ": cannot write NetCDF: " + nc_strerror(rc));
}

}  // namespace

int define_string_variable(int nc, const std::string& dim, const std::string& var, size_t count,
                           const std::string& where) {
  int dimid = -1, varid = -1;
  // A zero length would declare an unlimited dimension; callers write no variable for no names.
  check(nc_def_dim(nc, dim.c_str(), count, &dimid), where, dim);
  check(nc_def_var(nc, var.c_str(), NC_STRING, 1, &dimid, &varid), where, var);
  return varid;
}

void put_string_variable(int nc, int varid, const std::vector<std::string>& names,
                         const std::string& where) {
  std::vector<const char*> pointers(names.size());
  for (size_t i = 0; i < names.size(); ++i) pointers[i] = names[i].c_str();
  if (!pointers.empty())
    check(nc_put_var_string(nc, varid, pointers.data()), where, "feature names");
}

void write_string_variable(int nc, const std::string& dim, const std::string& var,
                           const std::vector<std::string>& names, const std::string& where) {
  put_string_variable(nc, define_string_variable(nc, dim, var, names.size(), where), names, where);
}

bool has_variable(int nc, const std::string& var) {
  int varid;
  return nc_inq_varid(nc, var.c_str(), &varid) == NC_NOERR;
}

std::vector<std::string> read_string_variable(int nc, const std::string& var,
                                              const std::string& where) {
  const auto fail = [&](const std::string& problem) {
    throw DataError(where + ": " + var + ": " + problem);
  };
  int varid, ndims;
  nc_type type;
  if (nc_inq_varid(nc, var.c_str(), &varid) != NC_NOERR) fail("missing variable");
  if (nc_inq_vartype(nc, varid, &type) != NC_NOERR || type != NC_STRING)
    fail("expected a variable of NetCDF strings (the names of the features in index order)");
  if (nc_inq_varndims(nc, varid, &ndims) != NC_NOERR || ndims != 1)
    fail("expected one dimension (one name per feature)");
  int dimid;
  size_t count = 0;
  if (nc_inq_vardimid(nc, varid, &dimid) != NC_NOERR ||
      nc_inq_dimlen(nc, dimid, &count) != NC_NOERR)
    fail("cannot read its dimension");
  std::vector<char*> raw(count, nullptr);
  if (count > 0) {
    const int rc = nc_get_var_string(nc, varid, raw.data());
    if (rc != NC_NOERR) fail(std::string("cannot read: ") + nc_strerror(rc));
  }
  std::vector<std::string> names;
  names.reserve(count);
  for (char* s : raw) names.emplace_back(s ? s : "");
  if (count > 0) nc_free_string(count, raw.data());
  return names;
}

size_t string_variable_bytes(const std::vector<std::string>& names) {
  size_t bytes = 0;
  for (const std::string& n : names) bytes += n.size() + 16;
  return bytes;
}

}  // namespace nn
