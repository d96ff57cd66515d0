// For the NetCDF harnesses: libnetcdf 4.9 leaks a descriptor (and memory) when nc_open fails on a
// damaged netCDF-4/HDF5 file, and HDF5 keeps the half-opened file (a second nc_open of the same
// bytes succeeds). For HDF5 inputs (HDF5's signature where netCDF looks for it: offset 0, 512,
// 1024, 2048, ...) the harness then asks HDF5 itself to shut down (H5close: it closes every file
// it holds, and the next netCDF call starts it again), and only descriptors still open after that
// are findings. Closing HDF5's descriptor behind its back is not an option: it later segfaults
// in H5F__close_cb when the library shuts down at exit. Classic-format inputs, read by
// libnetcdf's own code, must leave nothing open.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <cstring>

#include "fuzz_support.h"

namespace nn::fuzz {

inline bool looks_like_hdf5(const uint8_t* data, size_t size) {
  static const uint8_t kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  for (size_t at = 0; at + 8 <= size; at = at == 0 ? 512 : at * 2)
    if (std::memcmp(data + at, kSignature, 8) == 0) return true;
  return false;
}

inline bool& hdf5_input() {
  static bool hdf5 = false;
  return hdf5;
}

// Call with the input before running the engine on it.
inline void excuse_netcdf_descriptor_leaks(const uint8_t* data, size_t size) {
  hdf5_input() = looks_like_hdf5(data, size);
  release_third_party_descriptors = [] {
    if (hdf5_input()) H5close();
  };
}

}  // namespace nn::fuzz
