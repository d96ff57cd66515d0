// Atomic output files (see atomic_file.h): POSIX open/write/fsync/rename, so every failure has an
// errno to report, and a temporary file that is removed on every path except a successful rename.
#include "core/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

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

// Copies the finished temporary file into the stream target (file descriptor 1 for "-").
void copy_into(const std::string& temp, const std::string& target) {
  const int out = target == kStandardOutput ? 1 : ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
  if (out < 0) throw IoError(target + ": cannot open for writing: " + std::strerror(errno));
  const auto done_with = [&] {
    if (out != 1) ::close(out);
  };
  const int in = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    const int err = errno;
    done_with();
    throw IoError(shown(target) + ": cannot reopen '" + temp + "': " + std::strerror(err));
  }
  std::vector<char> buf(kBufferSize);
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(in);
      done_with();
      throw IoError(shown(target) + ": reading '" + temp + "' failed: " + std::strerror(err));
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out, buf.data() + done, size_t(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : EIO;
        ::close(in);
        done_with();
        throw IoError(shown(target) + ": write failed: " + std::strerror(err));
      }
      done += w;
    }
  }
  ::close(in);
  done_with();
}

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

AtomicFile::AtomicFile(std::string target)
    : target_(std::move(target)), stream_(is_stream_target(target_)) {
  if (target_.empty()) throw IoError("cannot write a file with an empty name");
  // Temporary files of an earlier run that was killed while writing.
  if (!stream_) remove_stale_temp_files(target_);
  temp_ = temp_name(target_, stream_);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    temp_.clear();  // nothing was created
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

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  finished_ = true;
}

void AtomicFile::fail(const std::string& action, int err) {
  const std::string temp = temp_;
  discard();
  throw IoError(target_ + ": " + action + " failed: " + std::strerror(err) +
                (temp.empty() ? std::string() : " (temporary file '" + temp + "' removed)"));
}

void AtomicFile::flush_buffer() {
  const char* p = buffer_.data();
  size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    if (n == 0) fail("write", EIO);
    p += n;
    left -= size_t(n);
    written_ += uint64_t(n);
  }
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
  // Large blocks go straight to the file.
  buffer_.assign(p, size);
  flush_buffer();
  buffer_.shrink_to_fit();
  buffer_.reserve(kBufferSize);
}

void AtomicFile::finish() {
  if (finished_) {
    if (fd_ < 0 && temp_.empty() && !committed_)
      throw IoError(target_ + ": file was discarded after an earlier failure");
    return;
  }
  flush_buffer();
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail("flush to disk", errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0 && errno != EINTR) fail("close", errno);
  finished_ = true;
}

void AtomicFile::commit() {
  finish();
  if (committed_) return;
  if (stream_) {
    try {
      copy_into(temp_, target_);
    } catch (...) {
      discard();
      throw;
    }
    ::unlink(temp_.c_str());
    committed_ = true;
    temp_.clear();
    return;
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    fail("moving temporary file '" + temp_ + "' into place", err);
  }
  committed_ = true;
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

}  // namespace nn
