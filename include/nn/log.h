// Public API: progress reporting without printing. Jobs and trainers call a LogSink with one line
// at a time; the caller decides where lines go (the tools: standard error, rank 0 only). The
// engine's own code includes this through core/log.h.
#pragma once

#include <functional>
#include <string>

namespace nn {

using LogSink = std::function<void(const std::string& line)>;

// A sink that discards everything.
inline LogSink null_log() {
  return [](const std::string&) {};
}

}  // namespace nn
