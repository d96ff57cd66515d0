// The id broadcast that starts a device communicator (bootstrap_id.h). Its own file: the CUDA
// module links it, and nothing else of the rank placement (which reaches MPI).
#include "distributed/bootstrap_id.h"

#include <string>

#include "core/error.h"

namespace nn {

void broadcast_unique_id(Communicator& host, void* id, size_t bytes,
                         const std::function<void(void*)>& make_on_root) {
  std::string error;
  if (host.rank() == 0) {
    try {
      make_on_root(id);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "unknown error";
    }
  }
  // The root's outcome first, so a failure there ends every rank rather than leaving them in
  // the broadcast of an id that never comes.
  host.broadcast_string(error, 0);
  if (!error.empty())
    throw BackendError("device communicator bootstrap failed on rank 0: " + error);
  host.broadcast_bytes(id, bytes, 0);
}

}  // namespace nn
