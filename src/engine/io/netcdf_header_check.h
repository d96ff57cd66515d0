// A structural check of netCDF classic-format headers (CDF-1, CDF-2 / 64-bit offset, CDF-5) run
// before the netCDF library opens a file. Fuzzing found that libnetcdf 4.9's header parser
// crashes (negative-size memcpy, heap overflows, NULL dereferences after failed allocations) on
// headers whose counts and lengths do not fit the file; this check rejects them with a message
// instead. It reads only the header and needs no netCDF library.
#pragma once

#include <string>

namespace nn {

// Does nothing for files that are not classic netCDF (HDF5-based netCDF-4 files, anything else:
// the netCDF library reports those). For classic files, throws DataError("<path>: damaged
// netCDF header: <what> at byte <offset> ...") when a count, length, type or dimension id in the
// header is invalid or claims more bytes than the file holds. Throws IoError when the file cannot
// be read.
void check_netcdf_classic_header(const std::string& path);

}  // namespace nn
