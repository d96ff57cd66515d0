// Shared pieces of the Communicator seam and the single-process implementation.
#include "distributed/communicator.h"

#include <cstring>
#include <numeric>

#include "core/error.h"

namespace nn {

size_t comm_type_size(CommType t) {
  switch (t) {
    case CommType::Float32:
      return 4;
    case CommType::Float64:
      return 8;
    case CommType::Int32:
      return 4;
    case CommType::Int64:
      return 8;
    case CommType::Byte:
      return 1;
  }
  return 1;
}

const char* comm_type_name(CommType t) {
  switch (t) {
    case CommType::Float32:
      return "float32";
    case CommType::Float64:
      return "float64";
    case CommType::Int32:
      return "int32";
    case CommType::Int64:
      return "int64";
    case CommType::Byte:
      return "byte";
  }
  return "?";
}

namespace {

class DoneOp : public PendingOp {
 public:
  void wait() override {}
};

}  // namespace

std::unique_ptr<PendingOp> Communicator::start_all_reduce_raw(void* data, size_t n, CommType type,
                                                              ReduceOp op) {
  all_reduce_raw(data, n, type, op);
  return std::make_unique<DoneOp>();
}

void Communicator::check_counts(const std::vector<size_t>& counts) const {
  if (counts.size() != size_t(size()))
    throw InternalError("communicator: " + std::to_string(counts.size()) +
                        " per-rank counts given for " + std::to_string(size()) + " ranks");
}

void Communicator::broadcast_string(std::string& s, int root) {
  uint64_t n = s.size();
  broadcast(&n, 1, root);
  s.resize(n);
  if (n) broadcast_bytes(&s[0], n, root);
}

void LocalCommunicator::all_gather_v_raw(const void* send, void* recv, const size_t* counts,
                                         CommType type) {
  if (send != recv && counts[0]) std::memmove(recv, send, counts[0] * comm_type_size(type));
}

void LocalCommunicator::reduce_scatter_v_raw(const void* send, void* recv, const size_t* counts,
                                             CommType type, ReduceOp) {
  if (send != recv && counts[0]) std::memmove(recv, send, counts[0] * comm_type_size(type));
}

void LocalCommunicator::gather_v_raw(const void* send, void* recv, const size_t* counts,
                                     CommType type, int root) {
  NN_CHECK(root == 0, "gather root out of range");
  if (send != recv && counts[0]) std::memmove(recv, send, counts[0] * comm_type_size(type));
}

std::unique_ptr<Communicator> LocalCommunicator::split(int color, int) {
  if (color < 0) return nullptr;
  return std::make_unique<LocalCommunicator>();
}

std::unique_ptr<Communicator> LocalCommunicator::split_by_host() {
  return std::make_unique<LocalCommunicator>();
}

}  // namespace nn
