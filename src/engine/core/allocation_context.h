// What is being allocated, for out-of-memory messages: code that allocates large arrays names
// them with an AllocationContext ("layer 'Hidden' weights"); the backend's allocator and the
// tools' std::bad_alloc handler put current_allocation() into their message.
#pragma once

#include <string>

namespace nn {

class AllocationContext {
 public:
  explicit AllocationContext(std::string what);
  ~AllocationContext();
  AllocationContext(const AllocationContext&) = delete;
  AllocationContext& operator=(const AllocationContext&) = delete;

 private:
  std::string previous_;
};

// The innermost context on this thread, "" when none.
const std::string& current_allocation();

}  // namespace nn
