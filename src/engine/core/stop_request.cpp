// The stop request (see stop_request.h).
#include "core/stop_request.h"

#include <atomic>
#include <csignal>

#include "core/error.h"

namespace nn {
namespace {

std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "set from signal handlers");

}  // namespace

void request_stop(int signal) noexcept {
  int none = 0;
  g_stop_signal.compare_exchange_strong(none, signal > 0 ? signal : SIGTERM);
}

int stop_signal() noexcept {
  return g_stop_signal.load();
}

void clear_stop_request() noexcept {
  g_stop_signal.store(0);
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    default:
      return "signal " + std::to_string(signal);
  }
}

void throw_if_stop_requested(const std::string& what) {
  const int signal = stop_signal();
  if (signal != 0) throw Interrupted("stopped by " + signal_name(signal) + " " + what, signal);
}

}  // namespace nn
