// In-memory NetCDF-4 files written through AtomicFile (see netcdf_output.h).
//
// netCDF's own in-memory create (nc_create_mem) makes an HDF5 file without creation-order
// tracking, which netCDF then opens read-only and lists in name order; so the empty file is made
// here with HDF5's core driver and the same creation properties netCDF uses on disk, and netCDF
// opens that image for writing (nc_open_memio). The final image is cut to the end-of-file address
// its superblock records (the core driver's buffer grows in 64 KiB steps) and followed by its
// checksum trailer (io/file_checksum.h).
#include "io/netcdf_output.h"

#include <fcntl.h>
#include <hdf5.h>
#include <netcdf.h>
#include <netcdf_mem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.h"
#include "io/file_checksum.h"

namespace nn {
namespace {

struct FreeMemory {
  void operator()(void* p) const { std::free(p); }
};
using Image = std::unique_ptr<void, FreeMemory>;

// Closes an HDF5 property list or file when it goes out of scope.
struct H5Handle {
  hid_t id = -1;
  herr_t (*close)(hid_t) = nullptr;
  ~H5Handle() {
    if (id >= 0) close(id);
  }
};

// An empty HDF5 file as netCDF creates one on disk (creation order tracked and indexed for links
// and attributes, no object times), as a malloc'ed image. The earliest superblock version
// (0) is the one netCDF's in-memory open accepts; every HDF5 since 1.8 reads it.
Image empty_netcdf4_image(const std::string& target, size_t* size) {
  const auto fail = [&](const char* step) -> Image {
    throw IoError(target + ": cannot create NetCDF file in memory (" + step + " failed)");
  };
  H5Handle fapl{H5Pcreate(H5P_FILE_ACCESS), H5Pclose};
  H5Handle fcpl{H5Pcreate(H5P_FILE_CREATE), H5Pclose};
  if (fapl.id < 0 || fcpl.id < 0) return fail("H5Pcreate");
  if (H5Pset_fapl_core(fapl.id, 1 << 16, /*backing_store=*/0) < 0 ||
      H5Pset_libver_bounds(fapl.id, H5F_LIBVER_EARLIEST, H5F_LIBVER_LATEST) < 0 ||
      H5Pset_obj_track_times(fcpl.id, 0) < 0 ||
      H5Pset_link_creation_order(fcpl.id, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0 ||
      H5Pset_attr_creation_order(fcpl.id, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0)
    return fail("setting HDF5 properties");
  // The core driver keeps the file in memory only; a name of its own keeps HDF5 from taking it
  // for a file of the same name that is open on disk.
  static std::atomic<unsigned> counter{0};
  const std::string name = "nn-netcdf-image-" + std::to_string(counter++);
  H5Handle file{H5Fcreate(name.c_str(), H5F_ACC_TRUNC, fcpl.id, fapl.id), H5Fclose};
  if (file.id < 0 || H5Fflush(file.id, H5F_SCOPE_GLOBAL) < 0) return fail("H5Fcreate");
  const ssize_t n = H5Fget_file_image(file.id, nullptr, 0);
  if (n <= 0) return fail("H5Fget_file_image");
  Image image(std::malloc(size_t(n)));
  if (!image) throw IoError(target + ": out of memory for a NetCDF file image");
  if (H5Fget_file_image(file.id, image.get(), size_t(n)) != n) return fail("H5Fget_file_image");
  *size = size_t(n);
  return image;
}

}  // namespace

// The end-of-file address in an HDF5 superblock at offset 0 (versions 0-3, 8-byte addresses);
// `size` when the image does not start with a superblock of that form.
size_t hdf5_end_of_file(const unsigned char* p, size_t size) {
  static const unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (size < 64 || std::memcmp(p, kSignature, 8) != 0) return size;
  const int version = p[8];
  size_t offset_size = 0, at = 0;
  if (version == 0 || version == 1) {
    offset_size = p[13];
    at = (version == 0 ? 24 : 28) + 2 * 8;  // base, free-space info, then end of file
  } else if (version == 2 || version == 3) {
    offset_size = p[9];
    at = 12 + 2 * 8;  // base, superblock extension, then end of file
  } else {
    return size;
  }
  if (offset_size != 8) return size;
  uint64_t eof = 0;
  for (int i = 7; i >= 0; --i) eof = (eof << 8) | p[at + size_t(i)];
  return eof > 0 && eof <= size ? size_t(eof) : size;
}

namespace {

std::atomic<size_t> direct_bytes{size_t(256) << 20};

// netCDF writes the file itself, into the AtomicFile's named temporary file.
void write_netcdf_direct(AtomicFile& out, const std::function<void(int ncid)>& fill) {
  const std::string path = out.content_path();
  const std::string& target = out.target();
  int ncid = -1;
  // NC_CLOBBER: the temporary file exists (empty); netCDF/HDF5 truncate and fill it.
  int rc = nc_create(path.c_str(), NC_NETCDF4 | NC_CLOBBER, &ncid);
  if (rc != NC_NOERR) throw IoError(target + ": cannot create NetCDF file: " + nc_strerror(rc));
  try {
    fill(ncid);
  } catch (...) {
    nc_abort(ncid);
    throw;
  }
  rc = nc_close(ncid);
  if (rc != NC_NOERR)
    throw IoError(target + ": cannot finish NetCDF file (is the disk full?): " + nc_strerror(rc));
  cut_to_hdf5_end(path, target);
  out.adopt_content();
  const uint64_t size = out.bytes_written();
  // Checked by every reader before the NetCDF/HDF5 libraries see the file (io/file_checksum.h).
  out.write(checksum_trailer_of_file(path, size, target));
}

}  // namespace

void cut_to_hdf5_end(const std::string& path, const std::string& target) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw IoError(target + ": cannot reopen the file written: " + std::strerror(errno));
  struct stat st;
  unsigned char head[64] = {};
  int err = 0;
  if (::fstat(fd, &st) != 0 || ::pread(fd, head, sizeof head, 0) < 0) err = errno;
  if (err == 0 && st.st_size >= off_t(sizeof head)) {
    const size_t end = hdf5_end_of_file(head, size_t(st.st_size));
    if (end < size_t(st.st_size) && ::ftruncate(fd, off_t(end)) != 0) err = errno;
  }
  ::close(fd);
  if (err) throw IoError(target + ": cannot finish the file written: " + std::strerror(err));
}

size_t netcdf_direct_bytes() {
  return direct_bytes.load();
}
void set_netcdf_direct_bytes(size_t bytes) {
  direct_bytes.store(bytes);
}

void write_netcdf(AtomicFile& out, size_t size_hint, const std::function<void(int ncid)>& fill) {
  if (size_hint >= netcdf_direct_bytes() && !out.temp_path().empty() && out.target() != "-") {
    write_netcdf_direct(out, fill);
    return;
  }
  size_t seed_size = 0;
  Image seed = empty_netcdf4_image(out.target(), &seed_size);
  NC_memio seed_memio{seed_size, seed.release(), 0};  // netCDF owns (and may realloc) it now
  int ncid = -1;
  int rc = nc_open_memio(out.target().c_str(), NC_WRITE, &seed_memio, &ncid);
  if (rc != NC_NOERR)  // the few hundred bytes of the seed stay with netCDF (may be freed there)
    throw IoError(out.target() + ": cannot create NetCDF file in memory: " + nc_strerror(rc));
  try {
    fill(ncid);
  } catch (...) {
    NC_memio mem{};
    if (nc_close_memio(ncid, &mem) == NC_NOERR)
      std::free(mem.memory);
    else
      nc_abort(ncid);
    throw;
  }
  NC_memio mem{};
  rc = nc_close_memio(ncid, &mem);
  Image image(mem.memory);
  if (rc != NC_NOERR) {
    nc_abort(ncid);
    throw IoError(out.target() + ": cannot finish NetCDF file: " + nc_strerror(rc));
  }
  const auto* bytes = static_cast<const unsigned char*>(image.get());
  const size_t size = hdf5_end_of_file(bytes, mem.size);
  out.write(bytes, size);
  // Checked by every reader before the NetCDF/HDF5 libraries see the file (io/file_checksum.h).
  out.write(checksum_trailer(bytes, size, out.target()));
}

}  // namespace nn
