// Checksums of the NetCDF files the tools write (datasets, network files, checkpoints), checked
// before any NetCDF or HDF5 code parses a file.
//
// A file we write is the netCDF-4 (HDF5) image followed by a trailer that HDF5 and netCDF never
// look at (HDF5 reads up to the end-of-file address its superblock records; bytes after it are
// allowed): a table of regions covering every byte of the image, each with its CRC-32 and, for
// the bytes of a variable's values, the variable's name; then a fixed footer (two magic numbers,
// the image size, the table's size and CRC, and the footer's own CRC). Reading verifies every
// region first, so a damaged byte anywhere (superblock, object headers and attributes, heaps,
// values) is reported by name before libhdf5, which crashes on some damaged metadata, sees it.
// Files without a trailer (DSSTNE's, ours from before, other programs') are read as they are.
// docs/reliability.md ("Checksums") says why the check is not inside the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace nn {

// The trailer for an HDF5 image of `size` bytes (regions of variable values found by opening
// the image with HDF5 read-only). Throws IoError naming `target` when HDF5 cannot open it.
std::string checksum_trailer(const unsigned char* image, size_t size, const std::string& target);

// The same for a finished HDF5 file on disk of `size` bytes (opened by `path`, read in blocks,
// never held in memory whole). Throws IoError naming `target`.
std::string checksum_trailer_of_file(const std::string& path, uint64_t size,
                                     const std::string& target);

// What verify_file_checksum found.
enum class ChecksumStatus { Verified, Absent };

// Checks the file's trailer and every region it lists. Absent for a file without a trailer (or
// one that cannot be read: the reader reports that); DataError "<path>: variable 'x': ..." (or
// the metadata bytes, or the trailer itself) when anything does not match.
ChecksumStatus verify_file_checksum(const std::string& path);

}  // namespace nn
