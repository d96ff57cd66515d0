// Progress reporting without printing from the library: the engine calls a sink that the tool
// installs (rank 0 prints to stderr, other ranks stay silent). The default sink discards.
#pragma once

#include <functional>
#include <string>

namespace nn {

using LogSink = std::function<void(const std::string& line)>;

// Returns a sink that discards everything.
inline LogSink null_log() {
  return [](const std::string&) {};
}

}  // namespace nn
