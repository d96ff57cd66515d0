// The one write path for every output file (network files, checkpoints, datasets, index files,
// text outputs): bytes go to a temporary file beside the target, which is flushed to disk and
// renamed over the target only when everything was written. Any failure reports the operating
// system's reason with the file name ("No space left on device", "Permission denied",
// "Read-only file system"), closes what was opened and removes the temporary file, so the
// previous target (if any) stays as it was and no partial file is left.
//
// The temporary file has no name while it is written (Linux O_TMPFILE, in the target's
// directory: rename is only atomic within one file system), so a process that dies, even by
// SIGKILL, leaves nothing behind: the kernel frees an unnamed file when its last descriptor
// closes. commit() gives it the name ".<target name>.tmp.<pid>.<n>" and renames that over the
// target at once. Where O_TMPFILE is not available (some network file systems) the file carries
// that name from the start. A process killed between the two steps, or on such a file system,
// leaves a named file; remove_stale_temp_files() deletes those whose process is gone, and
// remove_live_temp_files() those of this process (for a program ending at once on a signal).
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
  // With `named`, the temporary file has its name from the start even where O_TMPFILE exists:
  // for libraries that open it by name (HDF5 resolves /proc/self/fd links to the unnamed file's
  // "(deleted)" name and fails). remove_stale_temp_files() and remove_live_temp_files() clean
  // up after a killed process as for file systems without O_TMPFILE.
  AtomicFile(std::string target, bool named);
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

  // The temporary file's name, for a library that only opens files by name (netCDF writing a
  // large file straight to disk); needs an AtomicFile made with `named` (or one on a file
  // system without O_TMPFILE). After that code closed it, adopt_content() takes its bytes as
  // written. Throws IoError when the file has no name.
  std::string content_path() const;
  // Takes what other code wrote through content_path() as this file's content so far: write()
  // appends after it. Throws IoError with the OS reason.
  void adopt_content();

  const std::string& target() const { return target_; }
  // The temporary file's name; "" while it has none (O_TMPFILE).
  const std::string& temp_path() const { return temp_; }
  // True while the temporary file has no name (it vanishes if the process dies).
  bool unnamed() const { return unnamed_; }
  uint64_t bytes_written() const { return written_ + buffer_.size(); }

 private:
  void flush_buffer();
  // Writes p[0, size) to the file (in pieces), counting it in written_.
  void write_through(const char* p, size_t size);
  void set_temp_name(const std::string& name);  // registers it for remove_live_temp_files()
  [[noreturn]] void fail(const std::string& action, int err);

  std::string target_, temp_;
  int fd_ = -1;
  int registry_slot_ = -1;  // of temp_ in the registry of named temporary files
  bool stream_ = false;     // "-" or a special file: spooled, then copied in by commit()
  bool unnamed_ = false;    // O_TMPFILE: no name until commit() links it
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

// Unlinks the named temporary files this process is writing right now (AtomicFile's, and those
// registered with register_temp_file). Async-signal-safe: for a signal handler that ends the
// process at once.
void remove_live_temp_files() noexcept;

// Registers a named temporary file of other code for remove_live_temp_files(); returns a slot
// for unregister_temp_file (-1 when the registry is full or the name too long: not registered).
int register_temp_file(const std::string& path) noexcept;
void unregister_temp_file(int slot) noexcept;

}  // namespace nn
