// Atomic output files (see atomic_file.h): POSIX open(O_TMPFILE)/write/fsync/linkat/rename, so
// every failure has an errno to report, and a temporary file that has no name until the moment
// it is renamed into place, or, where it must have one, is removed on every other path.
#include "core/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/file_identity.h"

namespace nn {
namespace {

constexpr size_t kBufferSize = size_t(1) << 16;
constexpr size_t kWriteChunk = size_t(8) << 20;

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Standard output and existing files that are not regular files (/dev/null, a FIFO, a terminal):
// they cannot be replaced by a rename, so their bytes are spooled in the temporary directory
// (complete, and seekable for NetCDF) and copied into them by commit().
bool is_stream_target(const std::string& target) {
  if (target == kStandardOutput) return true;
  struct stat st;
  return ::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

// The target's name in messages.
std::string shown(const std::string& target) {
  return target == kStandardOutput ? std::string("standard output") : target;
}

std::string temp_name(const std::string& target, bool stream) {
  static std::atomic<unsigned> counter{0};
  const std::string dir = stream ? temporary_directory() : directory_of(target);
  return dir + "/" + temp_file_prefix(target) + std::to_string(::getpid()) + "." +
         std::to_string(counter++);
}

// An unnamed file in `dir` (O_TMPFILE), or -1 where the kernel or file system has none, or
// where /proc is missing (commit() names the file through /proc/self/fd when it lacks the
// capability for linkat's AT_EMPTY_PATH).
int open_unnamed(const std::string& dir) {
#ifdef O_TMPFILE
  static const bool have_proc = ::access("/proc/self/fd", X_OK) == 0;
  if (!have_proc) return -1;
  return ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
#else
  (void)dir;
  return -1;
#endif
}

// Gives the unnamed file `fd` the name `path` (which must not exist). Returns 0 or an errno.
int link_unnamed(int fd, const std::string& path) {
  if (::linkat(fd, "", AT_FDCWD, path.c_str(), AT_EMPTY_PATH) == 0) return 0;
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0) return 0;
  return errno;
}

// Copies the finished temporary file (open as `in`, read from its start) into the stream target
// (file descriptor 1 for "-").
void copy_into(int in, const std::string& target) {
  if (::lseek(in, 0, SEEK_SET) != 0)
    throw IoError(shown(target) + ": cannot reread the spooled output: " + std::strerror(errno));
  const int out = target == kStandardOutput ? 1 : ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (out < 0) throw IoError(target + ": cannot open for writing: " + std::strerror(errno));
  const auto done_with = [&] {
    if (out != 1) ::close(out);
  };
  std::vector<char> buf(kBufferSize);
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      done_with();
      throw IoError(shown(target) + ": reading the spooled output failed: " + std::strerror(err));
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf.data() + done, size_t(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : EIO;
        done_with();
        throw IoError(shown(target) + ": write failed: " + std::strerror(err));
      }
      done += w;
    }
  }
  done_with();
}

// Named temporary files of this process, for remove_live_temp_files() in a signal handler: fixed
// slots (no allocation), each path copied in, a slot's state published atomically (0 free,
// 1 being filled, 2 live).
constexpr int kTempSlots = 64;
constexpr size_t kTempPathMax = 4096;
struct TempSlot {
  std::atomic<int> state{0};
  char path[kTempPathMax];
};
TempSlot g_temp_slots[kTempSlots];

// Best effort: some file systems refuse fsync on a directory, and the rename already happened.
void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// "<digits>.<digits>" -> pid; 0 when `rest` is not in that form.
long pid_of_suffix(const std::string& rest) {
  const size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string::npos || dot + 1 == rest.size()) return 0;
  if (rest.find_first_not_of("0123456789", dot + 1) != std::string::npos) return 0;
  if (rest.find_first_not_of("0123456789") != dot) return 0;
  if (dot > 9) return 0;
  return std::stol(rest.substr(0, dot));
}

bool process_alive(long pid) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) == 0) return true;
  return errno == EPERM;  // exists, owned by someone else
}

}  // namespace

std::string temp_file_prefix(const std::string& target) {
  return "." + (target == kStandardOutput ? std::string("nn-stdout") : name_of(target)) + ".tmp.";
}

std::string temporary_directory() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? std::string(dir) : std::string("/tmp");
}

AtomicFile::AtomicFile(std::string target) : AtomicFile(std::move(target), false) {}

AtomicFile::AtomicFile(std::string target, bool named)
    : target_(std::move(target)), stream_(is_stream_target(target_)) {
  if (target_.empty()) throw IoError("cannot write a file with an empty name");
  // Temporary files of an earlier run that was killed while writing.
  // (A stream target's spool is named after "nn-stdout" or the special file, in $TMPDIR.)
  remove_stale_temp_files(
      stream_ ? temporary_directory() + "/" +
                    (target_ == kStandardOutput ? std::string("nn-stdout") : name_of(target_))
              : target_);
  const std::string dir = stream_ ? temporary_directory() : directory_of(target_);
  fd_ = named ? -1 : open_unnamed(dir);
  unnamed_ = fd_ >= 0;
  int err = 0;
  if (!unnamed_) {
    const std::string name = temp_name(target_, stream_);
    fd_ = ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0)
      set_temp_name(name);
    else
      err = errno;
  }
  if (fd_ < 0) {
    if (stream_)
      throw IoError(shown(target_) + ": cannot create a temporary file in '" +
                    temporary_directory() + "' (set TMPDIR): " + std::strerror(err));
    if (err == ENOENT)
      throw IoError(target_ + ": cannot write: directory '" + directory_of(target_) +
                    "' does not exist");
    throw IoError(target_ + ": cannot create (in directory '" + directory_of(target_) +
                  "'): " + std::strerror(err));
  }
  buffer_.reserve(kBufferSize);
}

AtomicFile::~AtomicFile() {
  discard();
}

void AtomicFile::set_temp_name(const std::string& name) {
  temp_ = name;
  registry_slot_ = register_temp_file(name);
}

void AtomicFile::discard() noexcept {
  // An unnamed file vanishes with its last descriptor.
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  unregister_temp_file(registry_slot_);
  registry_slot_ = -1;
  temp_.clear();
  unnamed_ = false;
  finished_ = true;
}

void AtomicFile::fail(const std::string& action, int err) {
  const std::string temp = temp_;
  discard();
  throw IoError(target_ + ": " + action + " failed: " + std::strerror(err) +
                (temp.empty() ? std::string(" (temporary file removed)")
                              : " (temporary file '" + temp + "' removed)"));
}

void AtomicFile::write_through(const char* p, size_t left) {
  while (left > 0) {
    // Pieces of at most kWriteChunk: one write of a whole large block (a network file of a
    // million-item layer is 1.5 GB) ran at a sixth of the speed of the same bytes in pieces.
    const ssize_t n = ::write(fd_, p, std::min(left, kWriteChunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    if (n == 0) fail("write", EIO);
    p += n;
    left -= size_t(n);
    written_ += uint64_t(n);
  }
}

void AtomicFile::flush_buffer() {
  write_through(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFile::write(const void* data, size_t size) {
  if (finished_ || fd_ < 0) throw IoError(target_ + ": write after the file was finished");
  const char* p = static_cast<const char*>(data);
  if (buffer_.size() + size <= kBufferSize) {
    buffer_.append(p, size);
    return;
  }
  flush_buffer();
  if (size < kBufferSize) {
    buffer_.append(p, size);
    return;
  }
  // Large blocks go straight to the file, from where they are (no copy).
  write_through(p, size);
}

std::string AtomicFile::content_path() const {
  if (finished_ || fd_ < 0) throw IoError(target_ + ": the file was already finished");
  if (temp_.empty()) throw IoError(target_ + ": the temporary file has no name to open it by");
  return temp_;
}

void AtomicFile::adopt_content() {
  if (finished_ || fd_ < 0) throw IoError(target_ + ": the file was already finished");
  flush_buffer();
  const off_t end = ::lseek(fd_, 0, SEEK_END);
  if (end < 0) fail("finding the end of the file", errno);
  written_ = uint64_t(end);
}

void AtomicFile::finish() {
  if (finished_) {
    if (fd_ < 0 && temp_.empty() && !committed_)
      throw IoError(target_ + ": file was discarded after an earlier failure");
    return;
  }
  flush_buffer();
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail("flush to disk", errno);
  // The descriptor stays open when commit() still needs it: an unnamed file would vanish, and a
  // stream target's spool is copied from it.
  if (!unnamed_ && !stream_) {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0 && errno != EINTR) fail("close", errno);
  }
  finished_ = true;
}

void AtomicFile::commit() {
  finish();
  if (committed_) return;
  if (stream_) {
    try {
      copy_into(fd_, target_);
    } catch (...) {
      discard();
      throw;
    }
    if (!temp_.empty()) ::unlink(temp_.c_str());  // the spool, when it has a name
    committed_ = true;
    discard();
    return;
  }
  if (unnamed_) {
    // A new target takes the unnamed file's name directly: no temporary name ever exists.
    int err = link_unnamed(fd_, target_);
    if (err == 0) {
      committed_ = true;
      discard();
      sync_directory(directory_of(target_));
      return;
    }
    if (err != EEXIST) fail("naming the file", err);
    // An existing target is replaced by a rename, which needs a name to move: the temporary one
    // exists only between these two calls.
    set_temp_name(temp_name(target_, false));
    err = link_unnamed(fd_, temp_);
    if (err != 0) {
      unregister_temp_file(registry_slot_);
      registry_slot_ = -1;
      temp_.clear();
      fail("naming the temporary file", err);
    }
    unnamed_ = false;
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    fail("moving temporary file '" + temp_ + "' into place", err);
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  committed_ = true;
  unregister_temp_file(registry_slot_);
  registry_slot_ = -1;
  temp_.clear();
  sync_directory(directory_of(target_));
}

void commit_all(const std::vector<AtomicFile*>& files) {
  // Two outputs of one unit naming the same file (e.g. nn-generate -f x -s ./x) would leave only
  // the one renamed last, silently. The jobs check their outputs before writing anything; this
  // is the last guard, for callers of commit_all that did not.
  std::vector<NamedFile> named;
  for (AtomicFile* f : files) named.push_back({"output", f->target()});
  try {
    check_distinct_files(named);
  } catch (const ArgumentError& e) {
    for (AtomicFile* f : files) f->discard();
    throw IoError(e.what());
  }
  for (AtomicFile* f : files) f->finish();
  for (AtomicFile* f : files) f->commit();
}

void write_file_atomically(const std::string& target, std::string_view data) {
  AtomicFile f(target);
  f.write(data);
  f.commit();
}

std::vector<std::string> remove_stale_temp_files(const std::string& target, bool any_target) {
  std::vector<std::string> removed;
  const std::string dir = directory_of(target);
  const std::string name = name_of(target);
  DIR* d = ::opendir(dir.c_str());
  if (!d) return removed;
  while (const dirent* e = ::readdir(d)) {
    const std::string entry = e->d_name;
    // ".<name>.tmp.<pid>.<n>", or any ".<name...>.tmp.<pid>.<n>" with any_target.
    if (entry.size() < 2 || entry[0] != '.') continue;
    const size_t tmp = entry.rfind(".tmp.");
    if (tmp == std::string::npos || tmp == 0) continue;
    const std::string file = entry.substr(1, tmp - 1);
    if (any_target ? file.compare(0, name.size(), name) != 0 : file != name) continue;
    const long pid = pid_of_suffix(entry.substr(tmp + 5));
    if (pid == 0 || process_alive(pid)) continue;
    const std::string path = dir + "/" + entry;
    if (::unlink(path.c_str()) == 0) removed.push_back(path);
  }
  ::closedir(d);
  return removed;
}

int register_temp_file(const std::string& path) noexcept {
  if (path.empty() || path.size() >= kTempPathMax) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    int free_slot = 0;
    if (!g_temp_slots[i].state.compare_exchange_strong(free_slot, 1)) continue;
    std::memcpy(g_temp_slots[i].path, path.c_str(), path.size() + 1);
    g_temp_slots[i].state.store(2);
    return i;
  }
  return -1;
}

void unregister_temp_file(int slot) noexcept {
  if (slot >= 0 && slot < kTempSlots) g_temp_slots[slot].state.store(0);
}

void remove_live_temp_files() noexcept {
  for (TempSlot& slot : g_temp_slots)
    if (slot.state.load() == 2) ::unlink(slot.path);
}

}  // namespace nn
