// A first reading of a NetCDF-4 (HDF5) file that has no checksum (DSSTNE's files, ours from
// before checksums, other programs'), in a child process. libhdf5 1.10 crashes (double free,
// segmentation fault) or loops forever on some damaged metadata that no check of ours
// recognises; in a child that may die, such a file becomes an error naming it instead of a crash
// of the tool. Files with a checksum never need this: a damaged byte is found before any library
// reads them (io/file_checksum.h). docs/reliability.md ("Damaged files") says where each defence
// lives and why.
#pragma once

#include <functional>
#include <string>

namespace nn {

// When `path` is an HDF5 file without a checksum, runs `read` (the whole reading, as the caller
// would do it) in a forked child first, with a time limit. A child that dies by a signal or
// runs out of time is a DataError naming the file and what happened; a child that finishes
// (reading succeeded or threw a clean error) lets the caller read the file itself. Does nothing
// for files with a checksum, classic NetCDF files (our header walk guards libnetcdf's parser),
// inside such a child, under an MPI launcher (fork() and some MPI transports do not mix), when
// NN_NO_ISOLATED_READ is set, or when fork() fails.
void read_isolated_first(const std::string& path, const std::function<void()>& read);

}  // namespace nn
