// The public CommandFile: a CDL file parsed by the engine's reader (config/parse.h).
#include "nn/command_file.h"

#include "api/command_file_impl.h"
#include "config/parse.h"

namespace nn::api {

CommandFile CommandFile::read(const std::string& path) {
  auto impl = std::make_shared<Impl>();
  impl->path = path;
  impl->spec = load_cdl(path);
  return CommandFile(std::move(impl));
}

const std::string& CommandFile::path() const {
  return impl_->path;
}
std::string CommandFile::command() const {
  return to_string(impl_->spec.command);
}
std::optional<uint64_t> CommandFile::random_seed() const {
  return impl_->spec.random_seed;
}
std::optional<uint64_t> CommandFile::memory_limit() const {
  return impl_->spec.memory_limit;
}
std::string CommandFile::backend() const {
  return impl_->spec.backend;
}
std::optional<int> CommandFile::device() const {
  return impl_->spec.device;
}

}  // namespace nn::api
