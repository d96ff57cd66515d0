// The bootstrap of a device communicator (NCCL): an id made on rank 0 and broadcast to every rank.
#pragma once

#include <cstddef>
#include <functional>

#include "distributed/communicator.h"

namespace nn {

// The bootstrap of a device communicator: `make_on_root` fills `bytes` bytes at `id` on rank 0
// of `host` (ncclGetUniqueId), which are then broadcast over `host`. When it throws on the root,
// every rank throws BackendError with the root's message instead of the others waiting forever.
void broadcast_unique_id(Communicator& host, void* id, size_t bytes,
                         const std::function<void(void*)>& make_on_root);

}  // namespace nn
