// Sparse dataset files written in slices (see sparse_dataset_writer.h). The variables, their
// types and the attributes are those of write_datasets (io/netcdf_dataset.cpp) for one sparse
// dataset, defined in the same order, so the two files hold the same names and values.
//
// netCDF reports a failed write of HDF5 as "HDF error" and drops the operating system's reason;
// while this writer calls netCDF, an HDF5 error handler takes the errno from the error stack
// (HDF5's file drivers record "errno = N"), so a full disk still reads "No space left on device".
// Better still, the space the file takes is reserved (fallocate) before anything is written, so
// a full disk or a file-size limit is found at once, with the system's own answer. That matters
// more than the message: after a failed write, netCDF 4.9.0 crashes when the file is aborted
// (nc_abort -> reportopenobjects) and HDF5 1.10 when it closes it at exit (H5F__close_cb). So
// after a failed netCDF call the handle is left alone (the temporary file is removed all the
// same), and the reservation makes such a failure all but impossible.
#include "io/sparse_dataset_writer.h"

#include <fcntl.h>
#include <hdf5.h>
#include <netcdf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "io/file_checksum.h"
#include "io/netcdf_output.h"
#include "io/netcdf_strings.h"

namespace nn {
namespace {

thread_local int t_hdf5_errno = 0;

herr_t find_errno(unsigned, const H5E_error2_t* e, void*) {
  const char* at = e && e->desc ? std::strstr(e->desc, "errno = ") : nullptr;
  if (at) {
    const int err = std::atoi(at + 8);
    if (err > 0) t_hdf5_errno = err;
  }
  return 0;
}

// Called by HDF5 when one of its API functions fails (instead of printing the stack).
herr_t on_hdf5_error(hid_t stack, void*) {
  H5Ewalk2(stack, H5E_WALK_DOWNWARD, find_errno, nullptr);
  return 0;
}

}  // namespace

struct SparseDatasetWriter::Impl {
  AtomicFile* out = nullptr;
  std::string path;  // what netCDF opened
  int nc = -1;
  bool values = false, wide = false;
  int start = -1, end = -1, index = -1, data = -1;
  H5E_auto2_t old_func = nullptr;
  void* old_data = nullptr;
  bool handler = false;
  bool broken = false;  // a netCDF call failed: no nc_abort (see the top of the file)

  void install_handler() {
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, on_hdf5_error, nullptr);
    handler = true;
  }
  void remove_handler() {
    if (handler) H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
    handler = false;
  }

  void check(int rc, const std::string& what) {
    if (rc == NC_NOERR) {
      t_hdf5_errno = 0;
      return;
    }
    const int err = t_hdf5_errno;
    t_hdf5_errno = 0;
    broken = true;
    throw IoError(out->target() + ": " + what +
                  ": cannot write NetCDF: " + (err ? std::strerror(err) : nc_strerror(rc)));
  }

  int dim(const std::string& name, uint64_t len) {
    int id;
    check(nc_def_dim(nc, name.c_str(), size_t(len), &id), name);
    return id;
  }

  int var(const std::string& name, nc_type type, int dimid, uint64_t len,
          const DatasetLayout& layout) {
    int id;
    check(nc_def_var(nc, name.c_str(), type, 1, &dimid, &id), name);
    if (layout.chunk_entries > 0 && len > 0) {
      const size_t chunk = size_t(std::min<uint64_t>(layout.chunk_entries, len));
      check(nc_def_var_chunking(nc, id, NC_CHUNKED, &chunk), name);
      if (layout.deflate_level > 0)
        check(nc_def_var_deflate(nc, id, /*shuffle=*/1, 1, layout.deflate_level), name);
      // Slices arrive in whole chunks, in order: a chunk cache would only copy them.
      check(nc_set_var_chunk_cache(nc, id, 0, 0, 1.0f), name);
    }
    return id;
  }

  void close_quietly() {
    if (nc >= 0 && !broken) nc_abort(nc);
    nc = -1;
    remove_handler();
  }

  // Reserves `bytes` for the file (its size grows to that; HDF5 writes inside it, and finish()
  // cuts the file to the end HDF5 records). File systems without fallocate skip this.
  void reserve(uint64_t bytes) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    int err = 0;
    if (::fallocate(fd, 0, 0, off_t(bytes)) != 0) err = errno;
    ::close(fd);
    if (err == ENOSPC || err == EFBIG || err == EDQUOT)
      throw IoError(out->target() + ": reserving " + std::to_string(bytes) +
                    " bytes for the file failed: " + std::strerror(err));
  }
};

SparseDatasetWriter::SparseDatasetWriter(AtomicFile& out, const ExampleSet& header,
                                         uint64_t examples, uint64_t entries,
                                         const DatasetLayout& layout)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.out = &out;
  const std::string& target = out.target();
  if (!header.is_sparse()) throw DataError(target + ": streaming writes hold sparse datasets only");
  m.values = !header.is_boolean();
  if (m.values && header.type != DataType::Float)
    throw DataError(target + ": streaming writes hold float values only");
  if (examples == 0)
    throw DataError(target + ": examplesDim0: dataset \"" + header.name +
                    "\" has no examples; DSSTNE readers need at least one");
  if (layout.deflate_level < 0 || layout.deflate_level > 9)
    throw ArgumentError(target + ": deflate level " + std::to_string(layout.deflate_level) +
                        " is not 0..9");
  if (layout.deflate_level > 0 && layout.chunk_entries == 0)
    throw ArgumentError(target + ": compression needs chunked storage");
  m.path = out.content_path();
  // netCDF sets HDF5's error reporting up (off) when it initialises: first that, then the
  // handler, which replaces that setting while this writer works and puts it back after.
  nc_initialize();
  m.install_handler();
  try {
    // NC_CLOBBER: the temporary file exists (empty); netCDF/HDF5 truncate and fill it.
    int rc = nc_create(m.path.c_str(), NC_NETCDF4 | NC_CLOBBER, &m.nc);
    if (rc != NC_NOERR) m.nc = -1;
    m.check(rc, "creating the file");
    int old_mode;
    m.check(nc_set_fill(m.nc, NC_NOFILL, &old_mode), "set_fill");  // every value is written
    const auto uint_att = [&](const std::string& name, uint64_t v) {
      const unsigned int u = static_cast<unsigned int>(v);
      m.check(nc_put_att_uint(m.nc, NC_GLOBAL, name.c_str(), NC_UINT, 1, &u), name);
    };
    uint_att("datasets", 1);
    m.check(nc_put_att_text(m.nc, NC_GLOBAL, "name0", header.name.size(), header.name.data()),
            "name0");
    uint_att("dataType0", uint32_t(header.type));
    uint_att("attributes0", header.attributes);
    uint_att("kind0", uint32_t(header.kind));
    uint_att("dimensions0", 1);
    uint_att("width0", header.width);
    const int ex = m.dim("examplesDim0", examples);
    const int nnz = m.dim("sparseDataDim0", entries);
    // 32-bit offsets as generateNetCDF writes them, unless the entry count needs 64 bits.
    m.wide = entries > std::numeric_limits<uint32_t>::max();
    const nc_type offset_type = m.wide ? NC_UINT64 : NC_UINT;
    m.start = m.var("sparseStart0", offset_type, ex, examples, layout);
    m.end = m.var("sparseEnd0", offset_type, ex, examples, layout);
    m.index = m.var("sparseIndex0", NC_UINT, nnz, entries, layout);
    if (m.values) m.data = m.var("sparseData0", NC_FLOAT, nnz, entries, layout);
    int names = -1;
    if (header.feature_names && !header.feature_names->empty())
      names = define_string_variable(m.nc, "indToFeatureDim0", "indToFeature0",
                                     header.feature_names->size(), target);
    // The arrays uncompressed (deflate's worst case is a little more) plus room for the
    // metadata: 64 KiB to 1 MiB, and 256 bytes a chunk for the chunk indices. Deflated arrays
    // need this room while they are written; finish() gives back what they did not take.
    const uint64_t offset_bytes = m.wide ? 8 : 4;
    uint64_t arrays = 2 * examples * offset_bytes + entries * (m.values ? 8 : 4) +
                      (header.feature_names ? string_variable_bytes(*header.feature_names) : 0);
    if (layout.deflate_level > 0) arrays += arrays / 64;
    const uint64_t chunks =
        layout.chunk_entries ? (examples + entries) / layout.chunk_entries + 4 : 0;
    const uint64_t metadata =
        std::min<uint64_t>(uint64_t(1) << 20, std::max<uint64_t>(uint64_t(64) << 10, arrays / 4));
    m.reserve(arrays + metadata + 256 * chunks);
    m.check(nc_enddef(m.nc), "enddef");
    if (names >= 0) put_string_variable(m.nc, names, *header.feature_names, target);
  } catch (...) {
    m.close_quietly();
    throw;
  }
}

SparseDatasetWriter::~SparseDatasetWriter() {
  impl_->close_quietly();
}

void SparseDatasetWriter::put_offsets(uint64_t first, const std::vector<uint64_t>& start,
                                      const std::vector<uint64_t>& end) {
  Impl& m = *impl_;
  if (start.empty()) return;
  const size_t at = size_t(first), count = start.size();
  try {
    if (m.wide) {
      static_assert(sizeof(unsigned long long) == sizeof(uint64_t));
      m.check(nc_put_vara_ulonglong(m.nc, m.start, &at, &count,
                                    reinterpret_cast<const unsigned long long*>(start.data())),
              "sparseStart0");
      m.check(nc_put_vara_ulonglong(m.nc, m.end, &at, &count,
                                    reinterpret_cast<const unsigned long long*>(end.data())),
              "sparseEnd0");
    } else {
      const std::vector<unsigned int> s(start.begin(), start.end()), e(end.begin(), end.end());
      m.check(nc_put_vara_uint(m.nc, m.start, &at, &count, s.data()), "sparseStart0");
      m.check(nc_put_vara_uint(m.nc, m.end, &at, &count, e.data()), "sparseEnd0");
    }
  } catch (...) {
    m.close_quietly();
    throw;
  }
}

void SparseDatasetWriter::put_entries(uint64_t first, const std::vector<uint32_t>& index,
                                      const std::vector<float>& values) {
  Impl& m = *impl_;
  if (index.empty()) return;
  const size_t at = size_t(first), count = index.size();
  try {
    m.check(nc_put_vara_uint(m.nc, m.index, &at, &count, index.data()), "sparseIndex0");
    if (m.values) {
      if (values.size() != index.size())
        throw DataError(m.out->target() + ": sparseData0: " + std::to_string(values.size()) +
                        " values for " + std::to_string(index.size()) + " entries");
      m.check(nc_put_vara_float(m.nc, m.data, &at, &count, values.data()), "sparseData0");
    }
  } catch (...) {
    m.close_quietly();
    throw;
  }
}

void SparseDatasetWriter::finish() {
  Impl& m = *impl_;
  try {
    const int rc = nc_close(m.nc);
    m.nc = -1;
    m.check(rc, "closing the file");
    m.remove_handler();
    cut_to_hdf5_end(m.path, m.out->target());
    m.out->adopt_content();
    const uint64_t size = m.out->bytes_written();
    // Checked by every reader before the NetCDF/HDF5 libraries see the file.
    m.out->write(checksum_trailer_of_file(m.path, size, m.out->target()));
  } catch (...) {
    m.close_quietly();
    throw;
  }
}

}  // namespace nn
