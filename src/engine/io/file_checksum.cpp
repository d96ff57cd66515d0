// Checksum trailers of the NetCDF files we write (see file_checksum.h). Layout after the HDF5
// image of C bytes, all numbers little-endian:
//   table, one entry per region in file order, the regions covering [0, C) without gaps:
//     u64 start, u64 length, u32 CRC-32 of those bytes, u16 name length, name (a variable's
//     name for the bytes of its values, empty for the HDF5 metadata between them)
//   footer (40 bytes): "NN-CSUM1", u64 C, u32 table length, u32 table CRC-32, u32 regions,
//     u32 CRC-32 of the footer's first 28 bytes, "NN-CSEND"
#include "io/file_checksum.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/mapped_file.h"

namespace nn {
namespace {

constexpr char kHead[8] = {'N', 'N', '-', 'C', 'S', 'U', 'M', '1'};
constexpr char kTail[8] = {'N', 'N', '-', 'C', 'S', 'E', 'N', 'D'};
constexpr size_t kFooter = 40;

uint32_t crc(const unsigned char* p, uint64_t n) {
  uLong c = crc32_z(0L, Z_NULL, 0);
  // crc32_z takes a size_t; large regions are fed in pieces all the same (z_size_t is 64-bit).
  while (n > 0) {
    const size_t piece = size_t(std::min<uint64_t>(n, uint64_t(1) << 30));
    c = crc32_z(c, p, piece);
    p += piece;
    n -= piece;
  }
  return uint32_t(c);
}

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t get(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

struct Region {
  uint64_t start = 0, length = 0;
  std::string name;  // "" for metadata
};

// ---- writing: where the variables' values are in the image

// File-image callbacks that let HDF5 read the caller's buffer in place instead of copying it
// (a dataset file can be hundreds of megabytes): every allocation is the buffer, nothing is
// copied or freed. Only for read-only opens.
void* image_malloc(size_t, H5FD_file_image_op_t, void* udata) {
  return udata;
}
void* image_memcpy(void* dest, const void* src, size_t size, H5FD_file_image_op_t, void*) {
  if (dest != src) std::memcpy(dest, src, size);
  return dest;
}
void* image_realloc(void*, size_t, H5FD_file_image_op_t, void*) {
  return nullptr;
}
herr_t image_free(void*, H5FD_file_image_op_t, void*) {
  return 0;
}
void* udata_copy(void* udata) {
  return udata;
}
herr_t udata_free(void*) {
  return 0;
}

struct Collect {
  std::vector<Region>* out;
};

herr_t visit(hid_t group, const char* name, const H5L_info_t*, void* data) {
  H5O_info_t info;
  if (H5Oget_info_by_name(group, name, &info, H5P_DEFAULT) < 0 || info.type != H5O_TYPE_DATASET)
    return 0;
  const hid_t ds = H5Dopen2(group, name, H5P_DEFAULT);
  if (ds < 0) return 0;
  std::vector<Region>& out = *static_cast<Collect*>(data)->out;
  // Contiguous storage (what netCDF-4 writes for fixed-size variables without filters) is one
  // region; the chunks of a chunked variable (large files written in slices, compressed or not)
  // are one region each. Anything else stays inside the metadata regions, checked all the same.
  const haddr_t offset = H5Dget_offset(ds);
  const hsize_t size = H5Dget_storage_size(ds);
  if (offset != HADDR_UNDEF && size > 0) {
    out.push_back({uint64_t(offset), uint64_t(size), name});
  } else {
    hsize_t chunks = 0;
    const hid_t space = H5Dget_space(ds);
    if (space >= 0 && H5Dget_num_chunks(ds, space, &chunks) >= 0) {
      for (hsize_t i = 0; i < chunks; ++i) {
        hsize_t where[H5S_MAX_RANK];
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        hsize_t bytes = 0;
        if (H5Dget_chunk_info(ds, space, i, where, &mask, &addr, &bytes) >= 0 &&
            addr != HADDR_UNDEF && bytes > 0)
          out.push_back({uint64_t(addr), uint64_t(bytes), name});
      }
    }
    if (space >= 0) H5Sclose(space);
  }
  H5Dclose(ds);
  return 0;
}

// The variables of an open HDF5 file, sorted by where their bytes start.
std::vector<Region> list_regions(hid_t file, const std::string& target) {
  std::vector<Region> found;
  Collect c{&found};
  const herr_t rc = H5Literate(file, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, visit, &c);
  if (rc < 0) throw IoError(target + ": cannot list the variables of the NetCDF file written");
  std::sort(found.begin(), found.end(),
            [](const Region& a, const Region& b) { return a.start < b.start; });
  return found;
}

// The trailer for an image of `size` bytes whose variables' bytes are `vars` (sorted), with
// `crc_of(start, length)` giving the CRC-32 of a range of the image.
template <typename CrcOf>
std::string make_trailer(const std::vector<Region>& vars, uint64_t size, CrcOf crc_of) {
  // The variables' bytes, and the metadata around them, as one gapless list.
  std::vector<Region> regions;
  uint64_t at = 0;
  for (const Region& v : vars) {
    if (v.start < at || v.start + v.length > size || v.name.size() > 0xffff) continue;
    if (v.start > at) regions.push_back({at, v.start - at, ""});
    regions.push_back(v);
    at = v.start + v.length;
  }
  if (at < size) regions.push_back({at, size - at, ""});
  std::string table;
  for (const Region& r : regions) {
    put(table, r.start, 8);
    put(table, r.length, 8);
    put(table, crc_of(r.start, r.length), 4);
    put(table, r.name.size(), 2);
    table += r.name;
  }
  std::string footer(kHead, 8);
  put(footer, size, 8);
  put(footer, table.size(), 4);
  put(footer, crc(reinterpret_cast<const unsigned char*>(table.data()), table.size()), 4);
  put(footer, regions.size(), 4);
  put(footer, crc(reinterpret_cast<const unsigned char*>(footer.data()), footer.size()), 4);
  footer.append(kTail, 8);
  return table + footer;
}

std::vector<Region> variable_regions(const unsigned char* image, size_t size,
                                     const std::string& target) {
  std::vector<Region> found;
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5FD_file_image_callbacks_t callbacks = {image_malloc,
                                           image_memcpy,
                                           image_realloc,
                                           image_free,
                                           udata_copy,
                                           udata_free,
                                           const_cast<unsigned char*>(image)};
  static std::atomic<unsigned> counter{0};
  const std::string name = "nn-checksum-image-" + std::to_string(counter++);
  hid_t file = -1;
  if (fapl >= 0 && H5Pset_fapl_core(fapl, 1 << 16, 0) >= 0 &&
      H5Pset_file_image_callbacks(fapl, &callbacks) >= 0 &&
      H5Pset_file_image(fapl, const_cast<unsigned char*>(image), size) >= 0)
    file = H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl);
  if (fapl >= 0) H5Pclose(fapl);
  if (file < 0) throw IoError(target + ": cannot read back the NetCDF file built in memory");
  try {
    found = list_regions(file, target);
  } catch (...) {
    H5Fclose(file);
    throw;
  }
  H5Fclose(file);
  return found;
}

// ---- reading

std::string bytes_text(uint64_t start, uint64_t length) {
  return "bytes " + std::to_string(start) + " to " + std::to_string(start + length - 1);
}

[[noreturn]] void damaged_trailer(const std::string& path, const std::string& why) {
  throw DataError(path + ": the checksum record at the end of the file is damaged (" + why +
                  "); the file changed after it was written");
}

}  // namespace

std::string checksum_trailer(const unsigned char* image, size_t size, const std::string& target) {
  const std::vector<Region> vars = variable_regions(image, size, target);
  return make_trailer(vars, size,
                      [&](uint64_t start, uint64_t length) { return crc(image + start, length); });
}

std::string checksum_trailer_of_file(const std::string& path, uint64_t size,
                                     const std::string& target) {
  std::vector<Region> vars;
  {
    // HDF5 must not print: a failure here is reported as an IoError.
    H5E_auto2_t old_func = nullptr;
    void* old_data = nullptr;
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
      H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
      throw IoError(target + ": cannot read back the NetCDF file written");
    }
    try {
      vars = list_regions(file, target);
    } catch (...) {
      H5Fclose(file);
      H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
      throw;
    }
    H5Fclose(file);
    H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(target + ": cannot reread the file written: " + std::strerror(errno));
  // Read in blocks, in file order: the file can be far larger than memory.
  std::vector<unsigned char> buf(size_t(4) << 20);
  const auto crc_of = [&](uint64_t start, uint64_t length) {
    uLong c = crc32_z(0L, Z_NULL, 0);
    while (length > 0) {
      const size_t want = size_t(std::min<uint64_t>(length, buf.size()));
      const ssize_t got = ::pread(fd, buf.data(), want, off_t(start));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        const int err = got < 0 ? errno : EIO;
        ::close(fd);
        throw IoError(target + ": cannot reread the file written: " + std::strerror(err));
      }
      c = crc32_z(c, buf.data(), size_t(got));
      start += uint64_t(got);
      length -= uint64_t(got);
    }
    return uint32_t(c);
  };
  std::string trailer = make_trailer(vars, size, crc_of);
  ::close(fd);
  return trailer;
}

// The CRC-32 of [start, start + length) of `f`, in pieces whose pages are given back once read:
// verifying a file does not make it resident (a streamed 4 GB dataset stays within its budget).
uint32_t crc_released(const MappedFile& f, uint64_t start, uint64_t length) {
  constexpr uint64_t kPiece = uint64_t(64) << 20;
  uLong c = crc32_z(0L, Z_NULL, 0);
  for (uint64_t at = start; at < start + length; at += kPiece) {
    const uint64_t n = std::min(kPiece, start + length - at);
    c = crc32_z(c, f.data() + at, size_t(n));
    f.release(at, n);
  }
  return uint32_t(c);
}

ChecksumStatus verify_file_checksum(const std::string& path) {
  const MappedFile f(path);
  if (!f.data() || f.size() < kFooter) return ChecksumStatus::Absent;
  const unsigned char* foot = f.data() + f.size() - kFooter;
  const bool head = std::memcmp(foot, kHead, 8) == 0;
  const bool tail = std::memcmp(foot + 32, kTail, 8) == 0;
  // One intact magic number says a trailer was written (a damaged byte can hit only one).
  if (!head && !tail) return ChecksumStatus::Absent;
  if (!head || !tail) damaged_trailer(path, "magic number");
  if (crc(foot, 28) != uint32_t(get(foot + 28, 4))) damaged_trailer(path, "footer checksum");
  const uint64_t covered = get(foot + 8, 8), table_length = get(foot + 16, 4);
  const uint64_t count = get(foot + 24, 4);
  if (covered > f.size() || table_length != f.size() - kFooter - covered)
    damaged_trailer(path, "sizes");
  const unsigned char* table = f.data() + covered;
  if (crc(table, table_length) != uint32_t(get(foot + 20, 4)))
    damaged_trailer(path, "table checksum");
  uint64_t at = 0, pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (table_length - pos < 22) damaged_trailer(path, "table");
    const uint64_t start = get(table + pos, 8), length = get(table + pos + 8, 8);
    const uint32_t sum = uint32_t(get(table + pos + 16, 4));
    const uint64_t name_length = get(table + pos + 20, 2);
    pos += 22;
    if (table_length - pos < name_length || start != at || length == 0 || length > covered - start)
      damaged_trailer(path, "table");
    const std::string name(reinterpret_cast<const char*>(table + pos), size_t(name_length));
    pos += name_length;
    if (crc_released(f, start, length) != sum) {
      if (!name.empty())
        throw DataError(path + ": variable '" + name + "': checksum mismatch in its values (" +
                        bytes_text(start, length) +
                        "); the file is damaged (it changed after it was written)");
      throw DataError(path + ": checksum mismatch in the NetCDF/HDF5 metadata (attributes, " +
                      "dimensions, variable definitions; " + bytes_text(start, length) +
                      "); the file is damaged (it changed after it was written)");
    }
    at = start + length;
  }
  if (at != covered || pos != table_length) damaged_trailer(path, "table");
  return ChecksumStatus::Verified;
}

}  // namespace nn
