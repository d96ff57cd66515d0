// Shared entry point of the nn-* tools: each tool implements run() and names itself; main()
// turns engine errors into "nn-<tool>: error: ..." on stderr with exit 1 (runtime) or 2 (usage).
#pragma once

#include <stdexcept>
#include <string>

namespace nn::tool {

// Defined by each tool, e.g. "nn-train".
extern const char* const kToolName;

// The tool's body. Returns the process exit status.
int run(int argc, char** argv);

// Bad command-line usage (exit status 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace nn::tool
