// For the NetCDF harnesses: libnetcdf 4.9 leaks a descriptor (and memory) when nc_open fails on a
// damaged netCDF-4/HDF5 file, and HDF5 then keeps the half-opened file: a second nc_open of the
// same bytes succeeds. So a leak cannot be attributed after the fact; instead, descriptors left
// open are excused for HDF5 inputs (HDF5's signature where netCDF looks for it: offset 0, 512,
// 1024, 2048, ...), while classic-format inputs, read by libnetcdf's own code, must leave none.
#pragma once

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
  descriptor_leak_is_third_party = [] { return hdf5_input(); };
}

}  // namespace nn::fuzz
