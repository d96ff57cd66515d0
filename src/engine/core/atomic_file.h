// The one write path for every output file (network files, checkpoints, datasets, index files,
// text outputs): bytes go to a temporary file beside the target, which is flushed to disk and
// renamed over the target only when everything was written. Any failure reports the operating
// system's reason with the file name ("No space left on device", "Permission denied",
// "Read-only file system"), closes what was opened and removes the temporary file, so the
// previous target (if any) stays as it was and no partial file is left.
//
// Temporary names are ".<target name>.tmp.<pid>.<n>" in the target's directory (rename is only
// atomic within one file system). A process killed mid-write leaves such a file behind;
// remove_stale_temp_files() deletes those whose process is gone.
//
// The target "-" means standard output. It, and an existing target that is not a regular file
// (/dev/null, a FIFO, a terminal: a rename would replace the device node or pipe with a plain
// file), is a stream target: the bytes are spooled in a temporary file in $TMPDIR (default /tmp)
// and copied into it by commit(), so a reader sees either the complete file or nothing, and
// formats that seek while writing (NetCDF) work too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nn {

// The target name that means standard output.
inline constexpr const char* kStandardOutput = "-";

// $TMPDIR, or /tmp when it is unset or empty.
std::string temporary_directory();

class AtomicFile {
 public:
  // Creates the temporary file (after removing stale ones of the same target left by killed
  // processes). Throws IoError naming `target` (missing directory, no permission,
  // read-only file system...).
  explicit AtomicFile(std::string target);
  // Closes and removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends bytes (buffered). Throws IoError with the OS reason.
  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }

  // Writes out the buffer, flushes the file to stable storage and closes it; the content is then
  // complete but not yet visible at the target. Throws IoError with the OS reason.
  void finish();
  // finish() if needed, then renames the temporary file over the target.
  void commit();
  // Removes the temporary file now (also what the destructor does without commit()).
  void discard() noexcept;

  const std::string& target() const { return target_; }
  const std::string& temp_path() const { return temp_; }
  uint64_t bytes_written() const { return written_ + buffer_.size(); }

 private:
  void flush_buffer();
  [[noreturn]] void fail(const std::string& action, int err);

  std::string target_, temp_;
  int fd_ = -1;
  bool stream_ = false;  // "-" or a special file: spooled, then copied in by commit()
  bool finished_ = false, committed_ = false;
  std::string buffer_;
  uint64_t written_ = 0;
};

// Commits several outputs as one unit: every file is finished (fully written and flushed) before
// the first rename, so a failure while writing any of them replaces no target at all.
void commit_all(const std::vector<AtomicFile*>& files);

// Writes `data` to `target` through an AtomicFile.
void write_file_atomically(const std::string& target, std::string_view data);

// The temporary name pattern's prefix for a target: ".<name>.tmp." (in the target's directory).
std::string temp_file_prefix(const std::string& target);

// Deletes temporary files of AtomicFile's naming for `target` (".<name>.tmp.<pid>.<n>") whose
// process no longer exists; with `any_target`, such files for every target in the directory of
// `target` whose name starts with the given target name's stem (e.g. checkpoint "ck" matches
// ".ck12.nc.tmp.<pid>.<n>"). Returns the paths removed. Never throws.
std::vector<std::string> remove_stale_temp_files(const std::string& target,
                                                 bool any_target = false);

}  // namespace nn
