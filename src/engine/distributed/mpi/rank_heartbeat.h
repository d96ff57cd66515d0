// Liveness of the other ranks of an MPI job, independent of what the training is doing: ranks
// form a ring, each sends a small message to the rank before it about once a second and listens
// for the rank after it. A rank that has been silent for longer than the limit is lost (killed,
// stopped with SIGSTOP, or cut off from the network), and the rank that watches it names it.
// Driven by the watchdog thread of distributed/mpi/mpi_runtime.cpp; needs MPI_THREAD_MULTIPLE.
#pragma once

#include <mpi.h>

#include <chrono>
#include <string>
#include <vector>

namespace nn::mpi {

class RankHeartbeat {
 public:
  // Collective over MPI_COMM_WORLD (duplicates it, so heartbeats never match the job's own
  // messages); call from every rank at start-up. A job of one rank has nobody to watch.
  RankHeartbeat();
  ~RankHeartbeat();
  RankHeartbeat(const RankHeartbeat&) = delete;
  RankHeartbeat& operator=(const RankHeartbeat&) = delete;

  // Sends this rank's heartbeat when one is due and takes in the watched rank's. Returns the
  // seconds since the watched rank was last heard from (0 when it said goodbye or there is
  // none). Never blocks.
  double poll();
  // The rank this one listens for (-1: none).
  int watched_rank() const { return watched_; }
  // The host the watched rank runs on (MPI_Get_processor_name), "" when unknown.
  std::string watched_host() const;
  // Tells the watcher this rank is finishing (so its silence from now on is not a failure),
  // takes in the watched rank's messages up to its goodbye (while it is still heard from), and
  // cancels the pending receive, so no heartbeat is in flight at MPI_Finalize. Call before
  // MPI_Finalize; idempotent.
  void close();

 private:
  using Clock = std::chrono::steady_clock;
  void post_receive();
  // Takes in the watched rank's message if one has arrived (a goodbye marks it finished, a
  // heartbeat re-posts the receive); false when none has.
  bool take_message();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int watched_ = -1, watcher_ = -1;
  MPI_Request receive_ = MPI_REQUEST_NULL, send_ = MPI_REQUEST_NULL;
  int incoming_ = 0, outgoing_ = 0;
  std::vector<char> hosts_;  // every rank's processor name, kHostChars each
  bool watched_finished_ = false, closed_ = false;
  Clock::time_point last_heard_ = Clock::now(), last_sent_;
};

}  // namespace nn::mpi
