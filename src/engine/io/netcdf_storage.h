// How many bytes a NetCDF variable can really hold, from the file rather than from its header:
// a classic-format variable is stored raw, so it cannot be larger than the file; a netCDF-4
// (HDF5) variable can be no larger than its stored bytes times the best compression ratio of
// deflate (1032:1; unwritten chunks, which would read back as fill values, store nothing). The
// readers check every claimed size against this before allocating (memory_budget.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace nn {

class NetcdfStorage {
 public:
  // Looks at `path` before netCDF opens it (unknown layouts give no bound). Throws DataError only
  // for an HDF5 file whose global heap would hang the HDF5 library (check_hdf5_global_heaps).
  explicit NetcdfStorage(const std::string& path);

  // The most bytes of values variable `name` can decode to, or UINT64_MAX when unknown.
  uint64_t max_bytes(const std::string& name) const;

  // Throws DataError "<path>: <name>: claims <elements> values (<bytes>), but ..." when
  // elements * element_size cannot come from the file, or does not fit the memory budget.
  void check(const std::string& name, uint64_t elements, uint64_t element_size) const;
  // The first half of check(): only whether the file can hold the claim (for readers that take
  // a variable in ranges, never whole).
  void check_on_disk(const std::string& name, uint64_t elements, uint64_t element_size) const;

  uint64_t file_size() const { return file_size_; }

 private:
  std::string path_;
  uint64_t file_size_ = 0;
  bool classic_ = false, hdf5_ = false;
  std::map<std::string, uint64_t> hdf5_max_;  // dataset name -> bound
};

}  // namespace nn
