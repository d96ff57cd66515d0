// Shared entry point of the nn-* tools: each tool implements run() and names itself; main()
// turns engine errors into "nn-<tool>: error: ..." on stderr with exit 1 (runtime) or 2 (usage).
#pragma once

#include <string>

#include "nn/error.h"

namespace nn::tool {

// Defined by each tool, e.g. "nn-train".
extern const char* const kToolName;

// The tool's body. Returns the process exit status.
int run(int argc, char** argv);

// Bad command-line usage (exit status 2, like the library's ArgumentError: a job's settings that
// contradict each other or the data).
class UsageError : public ArgumentError {
 public:
  using ArgumentError::ArgumentError;
};

}  // namespace nn::tool
