// The isolated first reading of files without a checksum (see isolated_read.h): fork(), the
// reading in the child under alarm(), _exit() without running anything of the parent's
// (destructors, atexit handlers, MPI), and the parent judging how the child ended.
#include "io/isolated_read.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "io/file_checksum.h"

namespace nn {
namespace {

bool g_in_child = false;

bool is_hdf5(const std::string& path) {
  static const unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char head[8] = {0};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  const size_t got = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return got == 8 && std::memcmp(head, kSignature, 8) == 0;
}

bool under_mpi_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

// Seconds the child may take: generous (a slow disk, a busy machine), growing with the file.
unsigned time_limit(const std::string& path) {
  struct stat st;
  const uint64_t bytes = ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
  return unsigned(30 + bytes / (20u << 20));
}

std::string describe(int signal) {
  const char* name = ::strsignal(signal);
  return std::string(name ? name : "a signal") + " (signal " + std::to_string(signal) + ")";
}

}  // namespace

void read_isolated_first(const std::string& path, const std::function<void()>& read) {
  if (g_in_child || std::getenv("NN_NO_ISOLATED_READ") || under_mpi_launcher()) return;
  if (!is_hdf5(path) || verify_file_checksum(path) != ChecksumStatus::Absent) return;
  const unsigned limit = time_limit(path);
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t child = ::fork();
  if (child < 0) return;  // no process to spare: read as before
  if (child == 0) {
    g_in_child = true;
    // The parent handles stop signals; the child only reads, within its time limit.
    for (int s : {SIGTERM, SIGINT, SIGHUP}) ::signal(s, SIG_IGN);
    ::signal(SIGALRM, SIG_DFL);
    ::alarm(limit);
    try {
      read();
    } catch (...) {
      ::_exit(1);  // a clean error: the parent's own reading reports it
    }
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0)
    if (errno != EINTR) return;
  if (!WIFSIGNALED(status)) return;
  const int signal = WTERMSIG(status);
  if (signal == SIGALRM)
    throw DataError(path + ": reading it did not finish in " + std::to_string(limit) +
                    " s (tried in a separate process): the HDF5 library loops on it; the file is "
                    "damaged (it has no checksum to say where)");
  throw DataError(
      path + ": the HDF5 library crashed reading it (" + describe(signal) +
      ", in a separate process): the file is damaged (it has no checksum to say where)" +
      (signal == SIGKILL ? "; or the reading ran out of memory" : ""));
}

}  // namespace nn
