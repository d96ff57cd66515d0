// MPI start-up, shutdown, abort and the collective watchdog (used by distributed/process.cpp). No
// MPI types appear here, so callers need not include <mpi.h>.
#pragma once

#include <memory>
#include <string>

#include "distributed/communicator.h"

namespace nn::mpi {

// Initialises MPI (MPI_THREAD_MULTIPLE requested) unless it already is; true if it did.
bool initialise(int* argc, char*** argv);
void finalise();
bool active();
// True when MPI granted MPI_THREAD_MULTIPLE (asynchronous collectives run on their own thread).
bool thread_multiple();
int world_rank();
int world_size();
std::shared_ptr<Communicator> make_world();
[[noreturn]] void abort_world(int status);
// Text between two ranks of the world, on a tag of its own: send_text returns once the text is
// sent or buffered; poll_text takes a message that has arrived, if any, without waiting.
void send_text(int to, const std::string& text);
bool poll_text(int* from, std::string* text);

// Marks a blocking collective in progress on this thread; the watchdog aborts the job when one
// stays in progress longer than collective_timeout_seconds().
class CollectiveWatch {
 public:
  explicit CollectiveWatch(const char* what);
  ~CollectiveWatch();
  CollectiveWatch(const CollectiveWatch&) = delete;
  CollectiveWatch& operator=(const CollectiveWatch&) = delete;

 private:
  unsigned long long id_ = 0;
};

}  // namespace nn::mpi
