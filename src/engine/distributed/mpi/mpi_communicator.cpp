// MPI implementation of the Communicator (host buffers).
#include "distributed/mpi/mpi_communicator.h"

#include <climits>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "distributed/mpi/mpi_runtime.h"

namespace nn {
namespace {

// MPI counts are int: large reductions and broadcasts go in chunks of this many elements.
constexpr size_t kChunk = size_t(1) << 30;

MPI_Datatype mpi_type(CommType t) {
  switch (t) {
    case CommType::Float32:
      return MPI_FLOAT;
    case CommType::Float64:
      return MPI_DOUBLE;
    case CommType::Int32:
      return MPI_INT32_T;
    case CommType::Int64:
      return MPI_INT64_T;
    case CommType::Byte:
      return MPI_BYTE;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op, CommType t) {
  if (t == CommType::Byte)
    throw InternalError("communicator: reductions over bytes are not defined");
  switch (op) {
    case ReduceOp::Sum:
      return MPI_SUM;
    case ReduceOp::Max:
      return MPI_MAX;
    case ReduceOp::Min:
      return MPI_MIN;
  }
  return MPI_SUM;
}

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw BackendError(std::string("MPI: ") + call + ": " + std::string(text, size_t(len)));
}

int to_int(size_t n, const char* what) {
  if (n > size_t(INT_MAX))
    throw BackendError(std::string("MPI: ") + what + ": " + std::to_string(n) +
                       " elements for one rank exceed MPI's int count limit");
  return int(n);
}

// Per-rank counts and displacements as MPI wants them.
struct Layout {
  std::vector<int> counts, displs;
  size_t total = 0;
  Layout(const size_t* c, int ranks, const char* what)
      : counts(size_t(ranks)), displs(size_t(ranks)) {
    for (int r = 0; r < ranks; ++r) {
      counts[size_t(r)] = to_int(c[r], what);
      displs[size_t(r)] = to_int(total, what);
      total += c[r];
    }
  }
};

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  auto pa = static_cast<const char*>(a), pb = static_cast<const char*>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

void all_reduce_on(MPI_Comm comm, void* data, size_t n, CommType type, ReduceOp op) {
  const size_t es = comm_type_size(type);
  for (size_t off = 0; off < n; off += kChunk) {
    const int c = int(std::min(kChunk, n - off));
    check(MPI_Allreduce(MPI_IN_PLACE, static_cast<char*>(data) + off * es, c, mpi_type(type),
                        mpi_op(op, type), comm),
          "MPI_Allreduce");
  }
}

}  // namespace

struct MpiCommunicator::Task {
  std::function<void()> run;
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};

namespace {

class MpiPendingOp : public PendingOp {
 public:
  explicit MpiPendingOp(std::shared_ptr<void> task, std::function<void()> waiter)
      : task_(std::move(task)), waiter_(std::move(waiter)) {}
  ~MpiPendingOp() override {
    try {
      if (waiter_) waiter_();
    } catch (...) {
    }
  }
  void wait() override {
    auto w = std::move(waiter_);
    waiter_ = nullptr;
    if (w) w();
  }

 private:
  std::shared_ptr<void> task_;
  std::function<void()> waiter_;
};

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, bool adopt) {
  if (adopt)
    comm_ = comm;
  else
    check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  // The communication thread's duplicate is made now, while every rank constructs this object
  // at the same point, rather than at the first asynchronous call, whose position relative to
  // blocking collectives may differ between ranks.
  if (size_ > 1 && mpi::thread_multiple()) {
    check(MPI_Comm_dup(comm_, &async_comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(async_comm_, MPI_ERRORS_RETURN);
  }
}

MpiCommunicator::~MpiCommunicator() {
  stop_worker();
  if (!mpi::active()) return;  // finalised already: MPI released the handles
  if (async_comm_ != MPI_COMM_NULL) MPI_Comm_free(&async_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiCommunicator::all_reduce_raw(void* data, size_t n, CommType type, ReduceOp op) {
  mpi::CollectiveWatch watch("all_reduce");
  all_reduce_on(comm_, data, n, type, op);
}

void MpiCommunicator::all_gather_v_raw(const void* send, void* recv, const size_t* counts,
                                       CommType type) {
  mpi::CollectiveWatch watch("all_gather");
  const size_t es = comm_type_size(type);
  Layout l(counts, size_, "all_gather");
  char* mine = static_cast<char*>(recv) + size_t(l.displs[size_t(rank_)]) * es;
  const size_t my_bytes = counts[rank_] * es;
  if (send == mine) {
    check(MPI_Allgatherv(MPI_IN_PLACE, 0, mpi_type(type), recv, l.counts.data(), l.displs.data(),
                         mpi_type(type), comm_),
          "MPI_Allgatherv");
    return;
  }
  std::vector<char> copy;
  if (overlaps(send, my_bytes, recv, l.total * es)) {
    copy.assign(static_cast<const char*>(send), static_cast<const char*>(send) + my_bytes);
    send = copy.data();
  }
  check(MPI_Allgatherv(send, l.counts[size_t(rank_)], mpi_type(type), recv, l.counts.data(),
                       l.displs.data(), mpi_type(type), comm_),
        "MPI_Allgatherv");
}

void MpiCommunicator::reduce_scatter_v_raw(const void* send, void* recv, const size_t* counts,
                                           CommType type, ReduceOp op) {
  mpi::CollectiveWatch watch("reduce_scatter");
  const size_t es = comm_type_size(type);
  Layout l(counts, size_, "reduce_scatter");
  std::vector<char> copy;
  if (overlaps(send, l.total * es, recv, counts[rank_] * es)) {
    copy.assign(static_cast<const char*>(send), static_cast<const char*>(send) + l.total * es);
    send = copy.data();
  }
  check(MPI_Reduce_scatter(send, recv, l.counts.data(), mpi_type(type), mpi_op(op, type), comm_),
        "MPI_Reduce_scatter");
}

void MpiCommunicator::gather_v_raw(const void* send, void* recv, const size_t* counts,
                                   CommType type, int root) {
  mpi::CollectiveWatch watch("gather");
  if (root < 0 || root >= size_) throw InternalError("communicator: gather root out of range");
  const size_t es = comm_type_size(type);
  Layout l(counts, size_, "gather");
  std::vector<char> copy;
  if (rank_ == root && overlaps(send, counts[rank_] * es, recv, l.total * es)) {
    copy.assign(static_cast<const char*>(send),
                static_cast<const char*>(send) + counts[rank_] * es);
    send = copy.data();
  }
  check(MPI_Gatherv(send, l.counts[size_t(rank_)], mpi_type(type), recv, l.counts.data(),
                    l.displs.data(), mpi_type(type), root, comm_),
        "MPI_Gatherv");
}

void MpiCommunicator::broadcast_raw(void* data, size_t n, CommType type, int root) {
  mpi::CollectiveWatch watch("broadcast");
  const size_t es = comm_type_size(type);
  for (size_t off = 0; off < n; off += kChunk) {
    const int c = int(std::min(kChunk, n - off));
    check(MPI_Bcast(static_cast<char*>(data) + off * es, c, mpi_type(type), root, comm_),
          "MPI_Bcast");
  }
}

void MpiCommunicator::barrier() {
  mpi::CollectiveWatch watch("barrier");
  check(MPI_Barrier(comm_), "MPI_Barrier");
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  mpi::CollectiveWatch watch("split");
  MPI_Comm out = MPI_COMM_NULL;
  check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &out), "MPI_Comm_split");
  if (out == MPI_COMM_NULL) return nullptr;
  return std::make_unique<MpiCommunicator>(out, /*adopt=*/true);
}

std::unique_ptr<Communicator> MpiCommunicator::split_by_host() {
  mpi::CollectiveWatch watch("split_by_host");
  MPI_Comm out = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &out),
        "MPI_Comm_split_type");
  return std::make_unique<MpiCommunicator>(out, /*adopt=*/true);
}

std::unique_ptr<PendingOp> MpiCommunicator::start_all_reduce_raw(void* data, size_t n,
                                                                 CommType type, ReduceOp op) {
  if (async_comm_ == MPI_COMM_NULL) return Communicator::start_all_reduce_raw(data, n, type, op);
  auto task = std::make_shared<Task>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
    MPI_Comm c = async_comm_;
    task->run = [c, data, n, type, op] {
      mpi::CollectiveWatch watch("asynchronous all_reduce");
      all_reduce_on(c, data, n, type, op);
    };
    queue_.push_back(task);
  }
  cv_.notify_all();
  auto waiter = [task] {
    std::unique_lock<std::mutex> lock(task->mutex);
    task->cv.wait(lock, [&] { return task->done; });
    if (task->error) std::rethrow_exception(task->error);
  };
  return std::make_unique<MpiPendingOp>(task, waiter);
}

void MpiCommunicator::worker_loop() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping with nothing left
      task = queue_.front();
      queue_.pop_front();
    }
    try {
      task->run();
    } catch (...) {
      task->error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(task->mutex);
      task->done = true;
    }
    task->cv.notify_all();
  }
}

void MpiCommunicator::stop_worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

}  // namespace nn
