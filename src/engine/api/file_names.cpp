// The public file-name checks (include/nn/file_names.h) over the engine's core/file_identity.
#include "nn/file_names.h"

#include "core/file_identity.h"

namespace nn::api {
namespace {

std::vector<nn::NamedFile> to_core(const std::vector<NamedFile>& files) {
  std::vector<nn::NamedFile> out;
  out.reserve(files.size());
  for (const NamedFile& f : files) out.push_back({f.option, f.path});
  return out;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  return nn::same_file(a, b);
}

void check_distinct_files(const std::vector<NamedFile>& outputs,
                          const std::vector<NamedFile>& inputs) {
  nn::check_distinct_files(to_core(outputs), to_core(inputs));
}

}  // namespace nn::api
