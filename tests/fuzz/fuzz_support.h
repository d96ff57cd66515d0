// Shared by the fuzz harnesses: turning the fuzzer's bytes into a scratch file (the readers take
// paths), and the rule for what counts as a finding. The engine must answer any input with a
// typed nn::Error (ConfigError, DataError, IoError); an InternalError, any other exception, a
// crash, a sanitizer report, a leak or a hang is a bug.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory_budget.h"

namespace nn::fuzz {

// A per-process scratch file, rewritten for every input (in /dev/shm when it exists, so the
// fuzzer does not wear the disk). `tag` keeps several files of one harness apart.
inline std::string scratch_path(const char* tag) {
  static const std::string dir = [] {
    // The readers run in this process, so that a crash of libhdf5 on an input shows as a finding
    // (the tools read a file without a checksum in a child process first: io/isolated_read.h).
    ::setenv("NN_NO_ISOLATED_READ", "1", 0);
    const char* env = std::getenv("NN_FUZZ_TMPDIR");
    if (env && *env) return std::string(env);
    if (access("/dev/shm", W_OK) == 0) return std::string("/dev/shm");
    const char* tmp = std::getenv("TMPDIR");
    return std::string(tmp && *tmp ? tmp : "/tmp");
  }();
  return dir + "/nn-fuzz-" + std::to_string(getpid()) + "-" + tag;
}

inline std::string write_scratch(const char* tag, const uint8_t* data, size_t size) {
  const std::string path = scratch_path(tag);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();  // the harness cannot run at all: not a finding in the engine
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  if (std::fclose(f) != 0) std::abort();
  return path;
}

// Removes its scratch files when the input has been handled (also when the engine throws).
class ScratchFiles {
 public:
  std::string add(const char* tag, const uint8_t* data, size_t size) {
    paths_[count_] = write_scratch(tag, data, size);
    return paths_[count_++];
  }
  ~ScratchFiles() {
    for (int i = 0; i < count_; ++i) std::remove(paths_[i].c_str());
  }

 private:
  std::string paths_[4];
  int count_ = 0;
};

// Open file descriptors of this process. The engine must close every file it opened whatever
// happened; the netCDF and HDF5 libraries keep a descriptor per open file, so this also catches a
// netCDF handle left open on an error path (their memory, allocated in uninstrumented libraries,
// cannot be told apart from their own leaks; see tests/fuzz/lsan.supp).
inline std::set<int> open_descriptors() {
  std::set<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return fds;
  while (const dirent* e = readdir(dir))
    if (e->d_name[0] != '.') fds.insert(std::atoi(e->d_name));
  fds.erase(dirfd(dir));
  closedir(dir);
  return fds;
}

// Set by a harness whose library can leak descriptors by itself: releases what the library still
// holds after the last input (see netcdf_leak_excuse.h); descriptors open after that are findings.
inline void (*release_third_party_descriptors)() = nullptr;

template <typename Body>
void run_clean(Body&& body) {
  try {
    body();
  } catch (const InternalError& e) {
    std::fprintf(stderr, "nn fuzz: InternalError: %s\n", e.what());
    std::abort();
  } catch (const Error&) {
    // ConfigError / DataError / IoError: a clean rejection.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nn fuzz: untyped exception escaped the engine: %s\n", e.what());
    std::abort();
  }
}

// Runs `body`; a typed, user-facing engine error is the expected answer to bad input. Anything
// else escapes: an InternalError or a foreign exception terminates the process, which libFuzzer
// (and the replay driver) report as a crash with the message. So does a file left open.
template <typename Body>
void expect_clean(Body&& body) {
  // A fixed memory budget (not this machine's memory), so an input is accepted or rejected the
  // same way everywhere, and claimed sizes are refused long before ASan's allocation limit.
  static const bool budget_set = (set_memory_budget(uint64_t(256) << 20), true);
  (void)budget_set;
  const std::set<int> before = open_descriptors();
  run_clean(body);
  auto left = [&] {
    size_t n = 0;
    for (int fd : open_descriptors()) n += !before.count(fd);
    return n;
  };
  if (left() == 0) return;
  if (release_third_party_descriptors) release_third_party_descriptors();
  if (const size_t n = left()) {
    std::fprintf(stderr, "nn fuzz: %zu file descriptor(s) left open\n", n);
    std::abort();
  }
}

}  // namespace nn::fuzz
