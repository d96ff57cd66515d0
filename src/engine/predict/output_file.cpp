// Atomic text outputs (see output_file.h).
#include "predict/output_file.h"

#include "core/error.h"

namespace nn {

OutputFile::OutputFile(const std::string& path)
    : path_(path),
      file_(std::make_unique<AtomicFile>(is_stdout_path(path) ? kStandardOutput : path)) {
  // Whatever the C library buffered for standard output goes out before the spooled lines.
  if (is_stdout()) std::fflush(stdout);
}

OutputFile::~OutputFile() = default;

void OutputFile::write(const std::string& text) {
  file_->write(text);
}

void OutputFile::commit() {
  if (is_stdout()) std::fflush(stdout);
  file_->commit();
}

}  // namespace nn
