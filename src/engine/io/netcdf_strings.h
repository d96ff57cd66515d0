// Lists of names stored as a NetCDF-4 string variable over a dimension of their own: the feature
// names of a dataset (indToFeatureN over indToFeatureDimN, as DSSTNE's test helper writes them)
// and of a network's sparse layers (layer<i>_nn_features). Through netCDF's C API, for the
// dataset writers (which use it) and the network file code (which reaches it through getId()).
#pragma once

#include <string>
#include <vector>

namespace nn {

// Defines dimension `dim` of `count` entries and string variable `var` over it (define mode);
// returns the variable's id. Failures are IoError "<where>: <name>: cannot write NetCDF: ...".
int define_string_variable(int nc, const std::string& dim, const std::string& var, size_t count,
                           const std::string& where);
// Writes the names into the variable (data mode).
void put_string_variable(int nc, int varid, const std::vector<std::string>& names,
                         const std::string& where);
// One call for files still in define mode that netCDF-4 allows to write at once (enhanced model).
void write_string_variable(int nc, const std::string& dim, const std::string& var,
                           const std::vector<std::string>& names, const std::string& where);

// True when `var` exists in the file.
bool has_variable(int nc, const std::string& var);
// Reads string variable `var` (one dimension). DataError "<where>: <var>: <problem>" when it is
// not a one-dimensional string variable or cannot be read.
std::vector<std::string> read_string_variable(int nc, const std::string& var,
                                              const std::string& where);

// Bytes a list of names takes in a file, for space estimates (the strings and their headers).
size_t string_variable_bytes(const std::vector<std::string>& names);

}  // namespace nn
