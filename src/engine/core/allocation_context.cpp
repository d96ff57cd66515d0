// Thread-local naming of allocations (see allocation_context.h).
#include "core/allocation_context.h"

#include <utility>

namespace nn {
namespace {
thread_local std::string g_current;
}

AllocationContext::AllocationContext(std::string what) : previous_(std::move(g_current)) {
  g_current = std::move(what);
}

AllocationContext::~AllocationContext() {
  g_current = std::move(previous_);
}

const std::string& current_allocation() {
  return g_current;
}

}  // namespace nn
