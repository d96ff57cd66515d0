// A NetCDF input named "-": standard input copied to a private temporary file, because the
// NetCDF library needs a file it can seek in. The file lives as long as the spool and is
// removed by its destructor (also when the tool fails).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "nn/error.h"
#include "nn/process.h"

namespace nn::tool {

class StdinSpool {
 public:
  // When `path` is "-", copies standard input to a temporary file and points `path` at it;
  // `what` names the input in messages ("network"). Any other path is left alone.
  StdinSpool(std::string& path, const std::string& what) {
    if (path != "-") return;
    std::string name = api::temporary_directory() + "/nn-" + what + "-from-stdin." +
                       std::to_string(::getpid()) + ".XXXXXX";
    std::vector<char> buf(name.begin(), name.end());
    buf.push_back('\0');
    const int fd = ::mkstemp(buf.data());
    if (fd < 0)
      throw IoError("standard input (" + what + "): cannot create a temporary file in '" +
                    api::temporary_directory() + "' (set TMPDIR): " + std::strerror(errno));
    temp_ = buf.data();
    copy(fd, what);
    path = temp_;
  }
  ~StdinSpool() {
    if (!temp_.empty()) ::unlink(temp_.c_str());
  }
  StdinSpool(const StdinSpool&) = delete;
  StdinSpool& operator=(const StdinSpool&) = delete;

 private:
  void copy(int fd, const std::string& what) {
    std::vector<char> buf(size_t(1) << 16);
    size_t total = 0;
    for (;;) {
      const ssize_t n = ::read(0, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) fail(fd, "standard input (" + what + "): read failed: " + std::strerror(errno));
      if (n == 0) break;
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = ::write(fd, buf.data() + done, size_t(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
          fail(fd, "standard input (" + what + "): writing '" + temp_ +
                       "' failed: " + std::strerror(w < 0 ? errno : EIO));
        done += w;
      }
      total += size_t(n);
    }
    ::close(fd);
    if (total == 0) {
      ::unlink(temp_.c_str());
      temp_.clear();
      throw DataError("standard input (" + what + "): empty; expected a NetCDF file");
    }
  }
  [[noreturn]] void fail(int fd, const std::string& message) {
    ::close(fd);
    ::unlink(temp_.c_str());
    temp_.clear();
    throw IoError(message);
  }

  std::string temp_;
};

}  // namespace nn::tool
