// The process-wide stop request (include/nn/stop.h): set from a signal handler, polled by the
// training loop after every minibatch and by the other jobs before they write their outputs.
// One lock-free atomic, so setting it is async-signal-safe.
#pragma once

#include <string>

namespace nn {

void request_stop(int signal) noexcept;
int stop_signal() noexcept;
void clear_stop_request() noexcept;
std::string signal_name(int signal);

// Throws Interrupted("stopped by SIGTERM <what>", signal) when a stop has been requested, e.g.
// throw_if_stop_requested("before writing recs.txt").
void throw_if_stop_requested(const std::string& what);

}  // namespace nn
