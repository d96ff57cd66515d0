// Atomic text outputs (see output_file.h).
#include "predict/output_file.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace nn {

OutputFile::OutputFile(const std::string& path) : path_(path) {
  if (is_stdout_path(path_)) return;
  file_ = std::make_unique<AtomicFile>(path_);
}

OutputFile::~OutputFile() = default;

void OutputFile::write(const std::string& text) {
  if (file_) return file_->write(text);
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size())
    throw IoError(std::string("standard output: write failed: ") + std::strerror(errno));
}

void OutputFile::commit() {
  if (file_) return file_->commit();
  if (std::fflush(stdout) != 0)
    throw IoError(std::string("standard output: write failed: ") + std::strerror(errno));
}

}  // namespace nn
