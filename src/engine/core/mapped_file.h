// A file mapped read-only into memory for the readers that check a file's bytes before any
// library parses it (io/file_checksum.cpp, io/hdf5_heap_check.cpp).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace nn {

// The file mapped read-only (unmapped on destruction); empty when it cannot be opened or mapped,
// or is not a regular file with content.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const unsigned char*>(p);
        size_ = uint64_t(st.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<unsigned char*>(data_), size_t(size_));
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Gives back the pages of [offset, offset + length) that were read (they stay in the page
  // cache): a pass over a file larger than memory then does not hold it all as resident memory.
  void release(uint64_t offset, uint64_t length) const {
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    const uint64_t lo = (offset + page - 1) / page * page;
    const uint64_t hi = std::min(size_, offset + length) / page * page;
    if (data_ && hi > lo)
      ::madvise(const_cast<unsigned char*>(data_) + lo, size_t(hi - lo), MADV_DONTNEED);
  }

 private:
  const unsigned char* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace nn
