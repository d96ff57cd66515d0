// A NetCDF input named "-": standard input copied to a private temporary file, because the
// NetCDF library needs a file it can seek in. The file lives as long as the spool and is
// removed by its destructor (also when the tool fails) or, on a second stop signal, by the
// signal handler (nn/stop.h). It cannot be an unnamed O_TMPFILE file like the outputs': HDF5
// resolves the /proc/self/fd link to a path and fails on "(deleted)". Its name follows the
// library's ".<name>.tmp.<pid>.<n>" pattern, so the next spool removes one a killed run left.
// Messages name the input as the user did: with_stdin_names() turns the temporary file's path in
// an error into "standard input (network)" (tool_main.cpp applies it to every error it prints).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "nn/error.h"
#include "nn/process.h"
#include "nn/stop.h"

namespace nn::tool {

// The spools' paths and the names they stand for (a path stays here after its spool is gone:
// the error that ended the tool is printed after the spool's destructor ran).
inline std::vector<std::pair<std::string, std::string>>& stdin_spool_names() {
  static std::vector<std::pair<std::string, std::string>> names;
  return names;
}

// `message` with every spool path replaced by the input it holds.
inline std::string with_stdin_names(std::string message) {
  for (const auto& [path, name] : stdin_spool_names())
    for (size_t at = message.find(path); at != std::string::npos;
         at = message.find(path, at + name.size()))
      message.replace(at, path.size(), name);
  return message;
}

class StdinSpool {
 public:
  // When `path` is "-", copies standard input to a temporary file and points `path` at it;
  // `what` names the input in messages ("network"). Any other path is left alone.
  StdinSpool(std::string& path, const std::string& what) {
    if (path != "-") return;
    const std::string base = api::temporary_directory() + "/nn-" + what + "-from-stdin";
    api::remove_stale_temporary_files(base);
    const std::string prefix = api::temporary_directory() + "/.nn-" + what + "-from-stdin.tmp." +
                               std::to_string(::getpid());
    int fd = -1;
    for (int n = 0; fd < 0 && n < 1000; ++n) {
      temp_ = prefix + "." + std::to_string(n);
      fd = ::open(temp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
      const int err = errno;
      temp_.clear();
      throw IoError("standard input (" + what + "): cannot create a temporary file in '" +
                    api::temporary_directory() + "' (set TMPDIR): " + std::strerror(err));
    }
    handle_ = api::register_temporary_file(temp_);
    stdin_spool_names().emplace_back(temp_, "standard input (" + what + ")");
    copy(fd, what);
    path = temp_;
  }
  ~StdinSpool() {
    if (!temp_.empty()) ::unlink(temp_.c_str());
    api::unregister_temporary_file(handle_);
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
      api::unregister_temporary_file(handle_);
      throw DataError("standard input (" + what + "): empty; expected a NetCDF file");
    }
  }
  [[noreturn]] void fail(int fd, const std::string& message) {
    ::close(fd);
    ::unlink(temp_.c_str());
    temp_.clear();
    api::unregister_temporary_file(handle_);
    throw IoError(message);
  }

  std::string temp_;
  int handle_ = -1;  // in the library's list of temporary files to remove on a second signal
};

}  // namespace nn::tool
