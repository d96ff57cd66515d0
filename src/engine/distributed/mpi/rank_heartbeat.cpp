// The ring of heartbeats between ranks (distributed/mpi/rank_heartbeat.h).
#include "distributed/mpi/rank_heartbeat.h"

#include <cstring>
#include <thread>

namespace nn::mpi {
namespace {

constexpr int kTag = 7;
constexpr int kAlive = 1, kGoodbye = 2;
constexpr double kPeriodSeconds = 1.0;
constexpr int kHostChars = MPI_MAX_PROCESSOR_NAME;
constexpr int kGoodbyeWaitSeconds = 10;

}  // namespace

RankHeartbeat::RankHeartbeat() {
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (size < 2) return;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
  char host[kHostChars] = {};
  int length = 0;
  MPI_Get_processor_name(host, &length);
  hosts_.assign(static_cast<size_t>(size) * kHostChars, '\0');
  MPI_Allgather(host, kHostChars, MPI_CHAR, hosts_.data(), kHostChars, MPI_CHAR, comm_);
  watched_ = (rank + 1) % size;
  watcher_ = (rank + size - 1) % size;
  last_heard_ = Clock::now();
  last_sent_ = last_heard_ - std::chrono::seconds(10);
  post_receive();
}

RankHeartbeat::~RankHeartbeat() {
  close();
}

std::string RankHeartbeat::watched_host() const {
  if (watched_ < 0) return "";
  const char* name = hosts_.data() + static_cast<size_t>(watched_) * kHostChars;
  return std::string(name, strnlen(name, kHostChars));
}

void RankHeartbeat::post_receive() {
  MPI_Irecv(&incoming_, 1, MPI_INT, watched_, kTag, comm_, &receive_);
}

bool RankHeartbeat::take_message() {
  int done = 0;
  MPI_Test(&receive_, &done, MPI_STATUS_IGNORE);
  if (!done) return false;
  if (incoming_ == kGoodbye)
    watched_finished_ = true;
  else
    post_receive();
  return true;
}

double RankHeartbeat::poll() {
  if (comm_ == MPI_COMM_NULL || closed_) return 0.0;
  const Clock::time_point now = Clock::now();
  // Receive everything that has arrived (a rank that was slow to be scheduled may have sent
  // several).
  for (int i = 0; i < 64 && !watched_finished_ && take_message(); ++i) last_heard_ = now;
  // One heartbeat in flight at a time: a watcher that stopped reading (it is stopped itself)
  // must not make this rank pile up messages.
  if (std::chrono::duration<double>(now - last_sent_).count() >= kPeriodSeconds) {
    int done = 1;
    if (send_ != MPI_REQUEST_NULL) MPI_Test(&send_, &done, MPI_STATUS_IGNORE);
    if (done) {
      outgoing_ = kAlive;
      MPI_Isend(&outgoing_, 1, MPI_INT, watcher_, kTag, comm_, &send_);
      last_sent_ = now;
    }
  }
  if (watched_finished_) return 0.0;
  return std::chrono::duration<double>(now - last_heard_).count();
}

void RankHeartbeat::close() {
  if (comm_ == MPI_COMM_NULL || closed_) return;
  closed_ = true;
  // The goodbye goes out after any heartbeat still in flight (messages between two ranks on one
  // communicator and tag arrive in order); a small message completes locally, so neither wait
  // depends on the watcher.
  if (send_ != MPI_REQUEST_NULL) MPI_Wait(&send_, MPI_STATUS_IGNORE);
  outgoing_ = kGoodbye;
  MPI_Send(&outgoing_, 1, MPI_INT, watcher_, kTag, comm_);
  // Take in what the watched rank still sends, up to its goodbye, before MPI_Finalize: a
  // heartbeat left undelivered when its receiver has finalised sends Open MPI's TCP transport
  // reconnecting to a process that is gone, and MPI_Finalize then hangs (seen with one rank per
  // host under srun). A watched rank still at work sends a heartbeat every second; one silent
  // for kGoodbyeWaitSeconds died or hangs, and is waited for no longer.
  Clock::time_point heard = Clock::now();
  while (!watched_finished_ && receive_ != MPI_REQUEST_NULL &&
         Clock::now() - heard < std::chrono::seconds(kGoodbyeWaitSeconds)) {
    if (take_message())
      heard = Clock::now();
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (receive_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&receive_);
    MPI_Wait(&receive_, MPI_STATUS_IGNORE);
  }
}

}  // namespace nn::mpi
