// File identity (see file_identity.h): stat() for files that exist, resolved absolute paths for
// those that do not yet.
#include "core/file_identity.h"

#include <sys/stat.h>

#include <filesystem>

#include "core/error.h"

namespace nn {
namespace {

constexpr const char* kStandardStream = "-";

// The absolute path with "." and ".." removed and existing directories' links resolved.
// (weakly_canonical alone returns a relative name unchanged when no part of it exists yet, so
// "x.idx" and "./x.idx" would differ.)
std::filesystem::path resolved(const std::string& path) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec) return std::filesystem::path(path).lexically_normal();
  std::filesystem::path r = std::filesystem::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : r.lexically_normal();
}

// An existing file that is not a regular file or a directory: written in place, not replaced.
bool is_special_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

std::string shown(const NamedFile& f) {
  return f.option + " " + f.path;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  if (a == b) return true;
  if (a == kStandardStream || b == kStandardStream) return false;
  struct stat sa, sb;
  const bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;  // one name leads to an existing file, the other to none
  return resolved(a) == resolved(b);
}

void check_distinct_files(const std::vector<NamedFile>& outputs,
                          const std::vector<NamedFile>& inputs) {
  const auto skipped = [](const NamedFile& f) {
    return f.path.empty() || (f.path != kStandardStream && is_special_file(f.path));
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (skipped(outputs[i])) continue;
    for (size_t j = 0; j < i; ++j) {
      if (skipped(outputs[j])) continue;
      if (outputs[i].path == kStandardStream && outputs[j].path == kStandardStream)
        throw ArgumentError(outputs[j].option + " and " + outputs[i].option +
                            " both name standard output ('-'); only one can go there");
      if (same_file(outputs[j].path, outputs[i].path))
        throw ArgumentError(shown(outputs[j]) + " and " + shown(outputs[i]) +
                            " name the same file; each output needs a file of its own");
    }
    if (outputs[i].path == kStandardStream) continue;
    for (const NamedFile& in : inputs)
      if (!skipped(in) && in.path != kStandardStream && same_file(in.path, outputs[i].path))
        throw ArgumentError(shown(outputs[i]) + " names the same file as the input " + shown(in) +
                            ", which it would replace; write the output to another file");
  }
}

}  // namespace nn
