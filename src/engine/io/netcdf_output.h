// NetCDF-4 outputs through the atomic write path: the file is built in memory (netCDF's memio),
// then written with AtomicFile. No NetCDF/HDF5 handle is ever open on a disk file while writing,
// so a full disk or a refused write is reported with the OS reason by AtomicFile, and nothing is
// left open for HDF5 to trip over when the process exits. A large file (size_hint at or above
// netcdf_direct_bytes()) in an AtomicFile made with a name is written by netCDF straight into
// that temporary file instead, so that its bytes are not held in memory a second time (a
// million-item network with its optimizer state is gigabytes); netCDF's failures there are
// IoErrors naming the target.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "core/atomic_file.h"

namespace nn {

// Creates an in-memory NETCDF4 file, lets `fill` define and write everything through the netCDF C
// API (`ncid`), closes it and appends its bytes, then their checksum trailer (io/file_checksum.h),
// to `out` (not committed: the caller commits, alone or together with other outputs). `size_hint`
// is the expected file size in bytes (0: unknown). Exceptions from `fill` pass through after the
// in-memory file is released; netCDF failures when creating or closing it become IoError naming
// out.target().
void write_netcdf(AtomicFile& out, size_t size_hint, const std::function<void(int ncid)>& fill);

// The size from which write_netcdf writes straight to disk (256 MiB); tests lower it.
size_t netcdf_direct_bytes();
void set_netcdf_direct_bytes(size_t bytes);

// The end-of-file address in an HDF5 superblock at the start of `p` (versions 0-3, 8-byte
// addresses); `size` when the bytes do not start with a superblock of that form or it claims
// more than `size` bytes.
size_t hdf5_end_of_file(const unsigned char* p, size_t size);

// Cuts the HDF5 file netCDF wrote at `path` to the end-of-file address its superblock records
// (HDF5 may leave space allocated past it). IoError naming `target` on failure.
void cut_to_hdf5_end(const std::string& path, const std::string& target);

}  // namespace nn
