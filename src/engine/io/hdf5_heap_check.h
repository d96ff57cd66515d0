// A structural check of the global heap collections in HDF5 (netCDF-4) files, run before the HDF5
// library reads them. Fuzzing found that libhdf5 1.10's heap loader never terminates on a
// collection whose free-space object claims 0 bytes (it steps forward by the object's size), so
// a 6 KB file made nn-train hang forever while reading a variable's dimension list; objects that
// run past their collection make it read beyond its buffer. The check finds collections by their
// signature ("GCOL", version 1) and walks their objects the way libhdf5 does, with every size
// bounded by the collection and the file.
#pragma once

#include <string>

namespace nn {

// Does nothing for files that are not HDF5. Throws DataError("<path>: damaged HDF5 global heap at
// byte <offset>: ...") when a collection's objects would make libhdf5 loop or overrun it. Throws
// nothing else (an unreadable file is left to the library to report).
void check_hdf5_global_heaps(const std::string& path);

}  // namespace nn
