// A text output of a prediction job (recommendations, top classes, layer dumps): standard output
// when the path is "" or "-", otherwise an AtomicFile (core/atomic_file.h) renamed over the
// target only by commit(), so a failed run never leaves a partial file behind.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "core/atomic_file.h"

namespace nn {

class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  bool is_stdout() const { return !file_; }
  void write(const std::string& text);
  // Flushes and renames the temporary file over the target. Throws IoError on failure.
  void commit();

 private:
  std::string path_;
  std::unique_ptr<AtomicFile> file_;  // null for standard output
};

// True for "" and "-" (standard output).
inline bool is_stdout_path(const std::string& path) {
  return path.empty() || path == "-";
}

}  // namespace nn
