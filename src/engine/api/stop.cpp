// The public stop functions (include/nn/stop.h): the stop request (core/stop_request.h) and the
// removal of named temporary files (core/atomic_file.h).
#include "nn/stop.h"

#include "core/atomic_file.h"
#include "core/stop_request.h"

namespace nn::api {

void request_stop(int signal) noexcept {
  nn::request_stop(signal);
}
int stop_signal() noexcept {
  return nn::stop_signal();
}
void clear_stop_request() noexcept {
  nn::clear_stop_request();
}
void remove_temporary_files() noexcept {
  nn::remove_live_temp_files();
}
int register_temporary_file(const std::string& path) noexcept {
  return nn::register_temp_file(path);
}
void unregister_temporary_file(int handle) noexcept {
  nn::unregister_temp_file(handle);
}
std::vector<std::string> remove_stale_temporary_files(const std::string& target) {
  return nn::remove_stale_temp_files(target);
}
std::string signal_name(int signal) {
  return nn::signal_name(signal);
}

}  // namespace nn::api
