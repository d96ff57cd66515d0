// main() for every tool: runs the tool body and maps exceptions to messages and exit codes.
#include <cstdio>
#include <exception>
#include <new>

#include "common/tool_main.h"
#include "core/allocation_context.h"
#include "core/error.h"
#include "core/memory_budget.h"

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
    const std::string& what = nn::current_allocation();
    std::fprintf(stderr, "%s: error: out of memory%s%s (memory budget %s; see --memory-limit)\n",
                 nn::tool::kToolName, what.empty() ? "" : " while allocating ", what.c_str(),
                 nn::format_bytes(nn::memory_budget()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", nn::tool::kToolName, e.what());
    return 1;
  }
}
