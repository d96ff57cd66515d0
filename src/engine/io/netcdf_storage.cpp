// Storage bounds of NetCDF variables (see netcdf_storage.h). HDF5 is asked directly (dataset
// storage size and filters) and the file is closed again before netCDF opens it.
#include "io/netcdf_storage.h"

#include <hdf5.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/memory_budget.h"
#include "io/hdf5_heap_check.h"

namespace nn {
namespace {

constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();
// zlib's largest possible expansion on decompression is 1032:1; a little slack for headers.
constexpr uint64_t kMaxFilterRatio = 1040;

struct Collect {
  hid_t file;
  std::map<std::string, uint64_t>* out;
};

herr_t visit(hid_t group, const char* name, const H5L_info_t* /*info*/, void* data) {
  auto* c = static_cast<Collect*>(data);
  const hid_t ds = H5Dopen2(group, name, H5P_DEFAULT);  // fails (quietly) for groups
  if (ds < 0) return 0;
  const uint64_t stored = H5Dget_storage_size(ds);
  int filters = 0;
  const hid_t dcpl = H5Dget_create_plist(ds);
  if (dcpl >= 0) {
    filters = H5Pget_nfilters(dcpl);
    H5Pclose(dcpl);
  }
  // Compact datasets keep their data in the object header; H5Dget_storage_size counts it.
  const auto bound = checked_mul(stored, filters > 0 ? kMaxFilterRatio : 1);
  (*c->out)[name] = bound ? *bound : kUnknown;
  H5Dclose(ds);
  return 0;
}

}  // namespace

NetcdfStorage::NetcdfStorage(const std::string& path) : path_(path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  file_size_ = uint64_t(st.st_size);
  unsigned char head[8] = {0};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return;
  const size_t got = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (got >= 4 && std::memcmp(head, "CDF", 3) == 0 &&
      (head[3] == 1 || head[3] == 2 || head[3] == 5)) {
    classic_ = true;
    return;
  }
  static const unsigned char kHdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  // Before HDF5 reads anything (HDF5's superblock may also start at byte 512, 1024...): some
  // damaged heaps make it loop forever.
  check_hdf5_global_heaps(path);
  if (got != 8 || std::memcmp(head, kHdf5, 8) != 0) return;
  // HDF5 prints its error stack unless told not to; a damaged file is netCDF's to report.
  H5E_auto2_t old_func = nullptr;
  void* old_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file >= 0) {
    Collect c{file, &hdf5_max_};
    if (H5Literate(file, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, visit, &c) >= 0) hdf5_ = true;
    H5Fclose(file);
  }
  H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
}

uint64_t NetcdfStorage::max_bytes(const std::string& name) const {
  if (classic_) return file_size_;
  if (!hdf5_) return kUnknown;
  auto it = hdf5_max_.find(name);
  return it == hdf5_max_.end() ? kUnknown : it->second;
}

void NetcdfStorage::check_on_disk(const std::string& name, uint64_t elements,
                                  uint64_t element_size) const {
  const auto bytes = checked_mul(elements, element_size);
  const uint64_t bound = max_bytes(name);
  if (elements > 0 && (!bytes || *bytes > bound))
    throw DataError(path_ + ": " + name + ": claims " + std::to_string(elements) + " values (" +
                    (bytes ? format_bytes(*bytes) : std::string("more than 16 EiB")) +
                    "), more than the " + format_bytes(file_size_) + " file can hold (" +
                    (classic_ ? std::string("its size")
                              : "at most " + format_bytes(bound) + " for this variable") +
                    "); the file is damaged or was not written by a NetCDF writer");
}

void NetcdfStorage::check(const std::string& name, uint64_t elements, uint64_t element_size) const {
  check_on_disk(name, elements, element_size);
  const auto bytes = checked_mul(elements, element_size);
  const std::string claim = path_ + ": " + name + ": claims " + std::to_string(elements) +
                            " values (" +
                            (bytes ? format_bytes(*bytes) : std::string("more than 16 EiB")) + ")";
  const std::string budget = over_budget(bytes);
  if (!budget.empty()) throw DataError(claim + ": " + budget);
}

}  // namespace nn
