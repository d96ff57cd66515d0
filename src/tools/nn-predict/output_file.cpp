// Atomic text outputs (see output_file.h).
#include "nn-predict/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace nn::tool {

OutputFile::OutputFile(const std::string& path) : path_(path) {
  if (is_stdout_path(path_)) {
    f_ = stdout;
    return;
  }
  tmp_ = path_ + ".tmp" + std::to_string(::getpid());
  f_ = std::fopen(tmp_.c_str(), "w");
  if (!f_) throw IoError(path_ + ": cannot create output file: " + std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (f_ && f_ != stdout) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

void OutputFile::write(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), f_) != text.size())
    throw IoError((is_stdout() ? std::string("standard output") : path_) +
                  ": write failed: " + std::strerror(errno));
}

void OutputFile::commit() {
  if (f_ == stdout) {
    std::fflush(stdout);
    return;
  }
  const bool ok = std::fflush(f_) == 0 && std::ferror(f_) == 0;
  std::fclose(f_);
  f_ = nullptr;
  if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp_.c_str());
    throw IoError(path_ + ": cannot write output file: " + why);
  }
}

}  // namespace nn::tool
