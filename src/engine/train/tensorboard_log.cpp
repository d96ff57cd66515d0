// TensorBoard event file of a training run (see tensorboard_log.h).
#include "train/tensorboard_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "train/tf_record.h"

namespace nn {
namespace {

// A resumed run reads at most this much of the file it continues (nn-train's own files stay far
// below it: a record per epoch and at most kMaxMinibatchPoints others of ~125 bytes).
constexpr std::streamsize kMaxReadBytes = std::streamsize(256) << 20;

constexpr const char* kMinibatchPrefix = "minibatch/";

double wall_clock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string read_prefix(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  if (size <= 0) return "";
  std::string bytes(size_t(std::min<std::streamoff>(size, kMaxReadBytes)), '\0');
  in.seekg(0);
  in.read(bytes.data(), std::streamsize(bytes.size()));
  bytes.resize(size_t(in.gcount()));
  return bytes;
}

// Minibatch records hold minibatch/ tags only; every other scalar record is an epoch's.
bool is_minibatch_record(const ParsedEvent& e) {
  for (const TensorBoardScalar& s : e.scalars)
    if (s.tag.rfind(kMinibatchPrefix, 0) != 0) return false;
  return !e.scalars.empty();
}

[[noreturn]] void fail(const std::string& path, const std::string& action, int err,
                       const std::string& note = "") {
  throw IoError(path + ": " + action + " failed: " + std::strerror(err) + note);
}

}  // namespace

std::string TensorBoardLog::path_in(const std::string& dir) {
  return (std::filesystem::path(dir) / kFileName).string();
}

TensorBoardLog::TensorBoardLog(const std::string& dir, const std::vector<HyperParameter>& hparams,
                               const TensorBoardResume* resume, LogSink log,
                               size_t max_minibatch_points)
    : path_(path_in(dir)),
      max_minibatch_points_(max_minibatch_points),
      log_(log ? log : null_log()) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError(dir + ": cannot create the directory: " + ec.message());
  // A resumed run keeps what its checkpoint holds (and its first start time, so that the
  // records it keeps begin with the same bytes as before).
  const std::string old = resume ? read_prefix(path_) : std::string();
  double start = wall_clock();
  std::string kept;
  const RecordScan scan = scan_records(old);
  for (size_t i = 0; i < scan.payloads.size(); ++i) {
    const std::optional<ParsedEvent> e = parse_event(scan.payloads[i]);
    if (!e) continue;
    if (i == 0 && e->kind == ParsedEvent::Kind::FileVersion) start = e->wall_time;
    if (e->kind != ParsedEvent::Kind::Scalars || e->step < 0) continue;  // rewritten below
    const bool minibatch = is_minibatch_record(*e);
    if (uint64_t(e->step) > (minibatch ? resume->step : resume->epoch)) continue;
    if (minibatch && minibatch_points_ == max_minibatch_points_) continue;
    if (minibatch) ++minibatch_points_;
    kept += frame_record(scan.payloads[i]);
  }
  content_ = frame_record(file_version_event(start)) +
             frame_record(hparams_start_event(start, start, hparams)) + kept;
  if (resume && old.size() >= content_.size() && old.compare(0, content_.size(), content_) == 0) {
    // Nothing before the end of what is kept changes: the file is cut there (after its last
    // record a resumed run keeps) and grows from there, and a running TensorBoard follows on.
    if (old.size() > content_.size() && ::truncate(path_.c_str(), off_t(content_.size())) != 0)
      fail(path_, "truncate", errno);
    return;
  }
  write_file_atomically(path_, content_);
}

void TensorBoardLog::append(const std::string& event, bool sync) {
  const std::string record = frame_record(event);
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      uint64_t(st.st_size) != content_.size()) {
    // Removed or replaced since it was written (or not a file of ours any more): written whole
    // again, atomically.
    if (fd >= 0) ::close(fd);
    content_ += record;
    write_file_atomically(path_, content_);
    return;
  }
  size_t done = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(fd, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      // A part of a record is no use to anyone: the file goes back to its last whole record.
      const bool cut = ::ftruncate(fd, off_t(content_.size())) == 0;
      ::close(fd);
      fail(path_, "write", err,
           cut ? " (cut back to its last whole record)" : " (its last record may be torn)");
    }
    done += size_t(n);
  }
  if (sync && ::fdatasync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path_, "flush", err);
  }
  if (::close(fd) != 0) fail(path_, "close", errno);
  content_ += record;
}

std::vector<TensorBoardScalar> epoch_scalars(const EpochReport& r) {
  std::vector<TensorBoardScalar> s = {{"train/loss", float(r.loss)},
                                      {"train/data_loss", float(r.data_loss)},
                                      {"train/reg_loss", float(r.reg_loss)},
                                      {"train/learning_rate", float(r.alpha)},
                                      {"train/examples_per_second", float(r.examples_per_second)},
                                      {"train/epoch_seconds", float(r.seconds)}};
  if (r.validated)
    for (const auto& [name, value] : r.validation.values)
      s.push_back({"validation/" + name, float(value)});
  return s;
}

void TensorBoardLog::write_epoch(const EpochReport& r) {
  append(scalars_event(wall_clock(), int64_t(r.epoch), epoch_scalars(r)), /*sync=*/true);
}

void TensorBoardLog::write_minibatch(const MinibatchReport& r) {
  if (minibatch_points_ >= max_minibatch_points_) {
    if (minibatch_points_++ == max_minibatch_points_)
      log_("tensorboard: " + std::to_string(max_minibatch_points_) +
           " minibatch records written, the most one file holds; no more are written (epoch "
           "records go on; a larger --tensorboard-interval spaces them out)");
    return;
  }
  ++minibatch_points_;
  // Not flushed to disk one by one (the next epoch's record is): they come often.
  append(scalars_event(wall_clock(), int64_t(r.step),
                       {{"minibatch/loss", float(r.loss)},
                        {"minibatch/learning_rate", float(r.alpha)},
                        {"minibatch/examples_per_second", float(r.examples_per_second)}}),
         /*sync=*/false);
}

void TensorBoardLog::finish(bool success) {
  append(hparams_end_event(wall_clock(), success), /*sync=*/true);
}

}  // namespace nn
