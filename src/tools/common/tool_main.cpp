// main() for every tool: runs the tool body and maps exceptions to messages and exit codes.
#include <cstdio>
#include <exception>
#include <new>

#include "common/tool_main.h"
#include "core/error.h"

int main(int argc, char** argv) {
  try {
    return nn::tool::run(argc, argv);
  } catch (const nn::tool::UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n(run '%s --help' for usage)\n", nn::tool::kToolName,
                 e.what(), nn::tool::kToolName);
    return 2;
  } catch (const nn::Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", nn::tool::kToolName, e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", nn::tool::kToolName);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", nn::tool::kToolName, e.what());
    return 1;
  }
}
