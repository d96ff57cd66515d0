// MPI initialisation and finalisation, MPI_Abort, and the watchdog thread that turns a rank that
// stopped answering (silent heartbeats, or a collective that never completes) into a job abort
// with a message naming it, instead of a hang.
#include "distributed/mpi/mpi_runtime.h"

#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.h"
#include "distributed/mpi/mpi_communicator.h"
#include "distributed/mpi/rank_heartbeat.h"
#include "distributed/process.h"

namespace nn::mpi {
namespace {

int provided_level = MPI_THREAD_SINGLE;

using Clock = std::chrono::steady_clock;
constexpr unsigned kAbortGraceSeconds = 15;

// In-flight blocking collectives (id -> start, name), the heartbeats of the other ranks
// (distributed/mpi/rank_heartbeat.h), and the thread that watches both. The thread starts with
// the heartbeats when this process initialised MPI for a job of several ranks (start_heartbeats),
// else at the first collective.
class Watchdog {
 public:
  ~Watchdog() { stop(); }
  // Collective: every rank calls it right after MPI_Init_thread.
  void start_heartbeats() {
    if (rank_timeout_ <= 0 || !thread_multiple()) return;
    heartbeat_ = std::make_unique<RankHeartbeat>();
    if (heartbeat_->watched_rank() < 0) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      start_thread();
    }
    stop_for_test();
  }
  unsigned long long enter(const char* what) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (timeout_ > 0) start_thread();
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
    if (heartbeat_) heartbeat_->close();  // after the thread: it is the heartbeats' only user
    std::lock_guard<std::mutex> lock(mutex_);
    started_ = false;
    stopping_ = false;
  }

 private:
  struct Entry {
    Clock::time_point start;
    const char* what;
  };
  void start_thread() {
    if (started_) return;
    started_ = true;
    thread_ = std::thread([this] { loop(); });
  }
  // Test hook for any tool (tests/tools/mpi_lost_rank_predict.sh): NN_TEST_STOP_RANK=R stops
  // rank R with SIGSTOP (the whole process, its heartbeats included) as soon as its heartbeats
  // have started, as a rank whose machine froze, so that the other ranks' watchdogs are tested
  // in every tool, deterministically (nn-train has step-exact failures of its own,
  // NN_TEST_FAIL_MODE).
  static void stop_for_test() {
    const char* rank = std::getenv("NN_TEST_STOP_RANK");
    if (!rank || !*rank) return;
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (std::atoi(rank) == me) kill(getpid(), SIGSTOP);
  }
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200));
      if (stopping_) break;
      if (heartbeat_) check_heartbeat();
      if (timeout_ <= 0) continue;
      for (const auto& [id, e] : active_) {
        const double waited = std::chrono::duration<double>(Clock::now() - e.start).count();
        if (waited < timeout_) continue;
        abort_with(
            "%s waited %.0f s for the other ranks (NN_MPI_TIMEOUT=%g); another rank "
            "has stopped or hung",
            e.what, waited, timeout_);
      }
    }
  }
  void check_heartbeat() {
    const double silent = heartbeat_->poll();
    if (silent < rank_timeout_) return;
    const std::string host = heartbeat_->watched_host();
    abort_with(
        "rank %d%s%s%s has not been heard from for %.0f s (NN_MPI_RANK_TIMEOUT=%g): it "
        "was killed, stopped or cut off from the others",
        heartbeat_->watched_rank(), host.empty() ? "" : " (on ", host.c_str(),
        host.empty() ? "" : ")", silent, rank_timeout_);
  }
  // Prints "nn: rank R: error: <what>: aborting the job" and the last checkpoint, then ends
  // every rank of the job.
  template <typename... Args>
  [[noreturn]] void abort_with(const char* format, Args... args) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char what[1024];
    std::snprintf(what, sizeof what, format, args...);
    const std::string checkpoint = last_checkpoint();
    std::fprintf(stderr, "nn: rank %d: error: %s: aborting the job; %s\n", rank, what,
                 checkpoint.empty() ? "no checkpoint was written"
                                    : ("the last checkpoint is " + checkpoint +
                                       ", from which the same command with --resume continues")
                                          .c_str());
    std::fflush(stderr);
    // MPI_Abort asks the launcher to end every rank; a launcher this rank is cut off from never
    // answers, so the process ends itself a little later (SIGALRM's default action) rather
    // than wait with it.
    std::signal(SIGALRM, SIG_DFL);
    alarm(kAbortGraceSeconds);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;
  std::map<unsigned long long, Entry> active_;
  unsigned long long next_id_ = 0;
  bool started_ = false, stopping_ = false;
  double timeout_ = collective_timeout_seconds();
  double rank_timeout_ = rank_silence_timeout_seconds();
  std::unique_ptr<RankHeartbeat> heartbeat_;
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
  watchdog().start_heartbeats();
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

namespace {
constexpr int kTextTag = 9114;  // apart from the collectives' and the heartbeats' (own comm)
}  // namespace

void send_text(int to, const std::string& text) {
  MPI_Send(text.data(), int(text.size()), MPI_CHAR, to, kTextTag, MPI_COMM_WORLD);
}

bool poll_text(int* from, std::string* text) {
  int arrived = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kTextTag, MPI_COMM_WORLD, &arrived, &status);
  if (!arrived) return false;
  int size = 0;
  MPI_Get_count(&status, MPI_CHAR, &size);
  text->assign(size_t(size), '\0');
  MPI_Recv(text->data(), size, MPI_CHAR, status.MPI_SOURCE, kTextTag, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  *from = status.MPI_SOURCE;
  return true;
}

CollectiveWatch::CollectiveWatch(const char* what) {
  id_ = watchdog().enter(what);
}
CollectiveWatch::~CollectiveWatch() {
  watchdog().leave(id_);
}

}  // namespace nn::mpi
