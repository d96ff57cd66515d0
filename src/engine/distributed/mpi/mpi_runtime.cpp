// MPI initialisation and finalisation, MPI_Abort, and the watchdog thread that turns a rank that
// stopped answering into a job abort with a message instead of a hang.
#include "distributed/mpi/mpi_runtime.h"

#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "distributed/mpi/mpi_communicator.h"
#include "distributed/process.h"

namespace nn::mpi {
namespace {

int provided_level = MPI_THREAD_SINGLE;

using Clock = std::chrono::steady_clock;

// In-flight blocking collectives (id -> start, name) and the thread that watches them.
class Watchdog {
 public:
  ~Watchdog() { stop(); }
  unsigned long long enter(const char* what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!started_ && timeout_ > 0) {
      started_ = true;
      thread_ = std::thread([this] { loop(); });
    }
    const unsigned long long id = ++next_id_;
    active_.emplace(id, Entry{Clock::now(), what});
    return id;
  }
  void leave(unsigned long long id) {
    std::lock_guard<std::mutex> lock(mutex_);
    active_.erase(id);
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    started_ = false;
    stopping_ = false;
  }

 private:
  struct Entry {
    Clock::time_point start;
    const char* what;
  };
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      for (const auto& [id, e] : active_) {
        const double waited = std::chrono::duration<double>(Clock::now() - e.start).count();
        if (waited < timeout_) continue;
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        std::fprintf(stderr,
                     "nn: rank %d: error: %s waited %.0f s for the other ranks "
                     "(NN_MPI_TIMEOUT=%g); another rank has stopped or hung: aborting the job\n",
                     rank, e.what, waited, timeout_);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
  std::map<unsigned long long, Entry> active_;
  unsigned long long next_id_ = 0;
  bool started_ = false, stopping_ = false;
  double timeout_ = collective_timeout_seconds();
};

Watchdog& watchdog() {
  static Watchdog w;
  return w;
}

}  // namespace

bool initialise(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) {
    MPI_Query_thread(&provided_level);
    return false;
  }
  if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided_level) != MPI_SUCCESS)
    throw BackendError("MPI_Init_thread failed");
  return true;
}

void finalise() {
  watchdog().stop();
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

bool active() {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) return false;
  MPI_Finalized(&finalised);
  return !finalised;
}

bool thread_multiple() {
  if (active()) MPI_Query_thread(&provided_level);
  return provided_level >= MPI_THREAD_MULTIPLE;
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

std::shared_ptr<Communicator> make_world() {
  return std::make_shared<MpiCommunicator>(MPI_COMM_WORLD);
}

void abort_world(int status) {
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);  // MPI_Abort does not return; keep [[noreturn]] honest if it does
}

CollectiveWatch::CollectiveWatch(const char* what) {
  id_ = watchdog().enter(what);
}
CollectiveWatch::~CollectiveWatch() {
  watchdog().leave(id_);
}

}  // namespace nn::mpi
