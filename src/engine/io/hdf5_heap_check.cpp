// Global heap collections of HDF5 files (see hdf5_heap_check.h), walked as libhdf5 1.10's
// H5HG__cache_heap_deserialize does: a 16-byte collection header ("GCOL", version, 3 reserved
// bytes, collection size), then objects of a 16-byte header (index, reference count, 4 reserved
// bytes, size) and their data padded to 8 bytes; index 0 is the free space, whose size is used
// as is. Bytes past the end of the file read back as zeros (HDF5 allows a file shorter than its
// end-of-allocation address), which is an object of index 0 and size 0.
#include "io/hdf5_heap_check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "core/mapped_file.h"

namespace nn {
namespace {

constexpr unsigned char kHdf5Signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
constexpr char kCollection[8] = {'G', 'C', 'O', 'L', 1, 0, 0, 0};

// Little-endian unsigned integer of `bytes` bytes at `at`; bytes past the end of the file are 0.
uint64_t le(const MappedFile& f, uint64_t at, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i)
    if (at + i < f.size()) v |= uint64_t(f.data()[at + i]) << (8 * i);
  return v;
}

// "Size of lengths" from the superblock (at 0, 512, 1024, ...): 8 unless it says otherwise.
unsigned length_size(const MappedFile& f, uint64_t superblock) {
  const unsigned version = unsigned(le(f, superblock + 8, 1));
  const unsigned n = unsigned(le(f, superblock + (version < 2 ? 14 : 10), 1));
  return n == 2 || n == 4 || n == 8 ? n : 8;
}

[[noreturn]] void fail(const std::string& path, uint64_t collection, const std::string& what) {
  throw DataError(path + ": damaged HDF5 global heap at byte " + std::to_string(collection) + ": " +
                  what +
                  " (the HDF5 library cannot read it safely); the file is damaged or was not "
                  "written by a NetCDF writer");
}

void check_collection(const std::string& path, const MappedFile& f, uint64_t at,
                      unsigned len_size) {
  const uint64_t header = 8 + len_size, object_header = 8 + len_size;
  const uint64_t size = le(f, at + 8, len_size);
  if (size <= header) return;  // libhdf5 rejects it before walking
  const uint64_t end = at + size < at ? UINT64_MAX : at + size;
  uint64_t p = at + header;
  while (p < end) {
    if (end - p < object_header) return;  // the rest is free space
    const uint64_t index = le(f, p, 2), object = le(f, p + 8, len_size);
    uint64_t need = object;
    if (index > 0) {
      const uint64_t padded = object > UINT64_MAX - 7 ? UINT64_MAX : (object + 7) / 8 * 8;
      need = padded > UINT64_MAX - object_header ? UINT64_MAX : object_header + padded;
    }
    const std::string what = "object " + std::to_string(index) + " at byte " + std::to_string(p);
    if (need == 0)
      fail(path, at,
           what + " claims 0 bytes" +
               (p >= f.size() ? std::string(" (past the end of the file)") : ""));
    if (need > end - p)
      fail(path, at,
           what + " claims " + std::to_string(object) + " bytes, more than the " +
               std::to_string(end - p) + " left in its " + std::to_string(size) +
               "-byte collection");
    p += need;
  }
}

}  // namespace

void check_hdf5_global_heaps(const std::string& path) {
  const MappedFile f(path);
  if (!f.data() || f.size() < 8) return;
  uint64_t superblock = UINT64_MAX;
  for (uint64_t at = 0; at + 8 <= f.size(); at = at == 0 ? 512 : at * 2)
    if (std::memcmp(f.data() + at, kHdf5Signature, 8) == 0) {
      superblock = at;
      break;
    }
  if (superblock == UINT64_MAX) return;
  const unsigned len_size = length_size(f, superblock);
  const std::string_view bytes(reinterpret_cast<const char*>(f.data()), size_t(f.size()));
  const std::string_view signature(kCollection, sizeof kCollection);
  // In pieces whose pages are given back once searched: the scan of a 4 GB dataset must not
  // make it resident (streaming training keeps within a memory budget smaller than the file).
  constexpr size_t kPiece = size_t(64) << 20;
  for (size_t piece = 0; piece < bytes.size(); piece += kPiece) {
    // A signature that starts in this piece may end in the next.
    const size_t end = std::min(bytes.size(), piece + kPiece + signature.size() - 1);
    const std::string_view part = bytes.substr(piece, end - piece);
    for (size_t at = part.find(signature); at != std::string_view::npos;
         at = part.find(signature, at + 1))
      if (piece + at < piece + kPiece) check_collection(path, f, piece + at, len_size);
    f.release(piece, kPiece);
  }
}

}  // namespace nn
