// A text output of a prediction job (recommendations, top classes, layer dumps) through an
// AtomicFile (core/atomic_file.h): renamed over the target only by commit(), or, for standard
// output (the path "" or "-"), spooled and copied out by commit(), so a failed or stopped run
// never leaves a partial file or partial output behind.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "core/atomic_file.h"

namespace nn {

// True for "" and "-" (standard output).
inline bool is_stdout_path(const std::string& path) {
  return path.empty() || path == "-";
}

class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool is_stdout() const { return is_stdout_path(path_); }
  void write(const std::string& text);
  // Flushes and renames the temporary file over the target (or copies the spool to standard
  // output). Throws IoError on failure.
  void commit();

 private:
  std::string path_;
  std::unique_ptr<AtomicFile> file_;
};

}  // namespace nn
