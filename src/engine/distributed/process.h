// Process-level multi-process start-up, shared by every tool: initialises MPI when the process
// was started by an MPI launcher (mpirun, srun with PMI), hands out the world Communicator, and
// ends the whole job when one rank fails. Without MPI (not launched by one, or a build without
// MPI) everything here describes a single process and the tools run exactly as before.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "distributed/communicator.h"

namespace nn {

// True when the environment says an MPI launcher started this process (OMPI_COMM_WORLD_SIZE,
// PMI_SIZE/PMI_RANK, PMIX_RANK, MV2_COMM_WORLD_SIZE); MPI is then initialised by ProcessSession.
bool launched_by_mpi();

// RAII for one tool run: initialises MPI if the process was launched by MPI and nobody has
// initialised it yet (requesting MPI_THREAD_MULTIPLE, so gradient reduction can overlap the
// backward pass); finalises only what it initialised. Throws BackendError when the environment
// says "MPI" but this build has no MPI support.
class ProcessSession {
 public:
  ProcessSession(int* argc, char*** argv);
  ~ProcessSession();
  ProcessSession(const ProcessSession&) = delete;
  ProcessSession& operator=(const ProcessSession&) = delete;

 private:
  bool initialised_here_ = false;
};

// True when MPI is initialised (by us or by the embedding program) and not yet finalised.
bool mpi_active();
// The communicator over every process of the job: MPI's world when MPI is active, otherwise a
// LocalCommunicator. One shared object per process.
std::shared_ptr<Communicator> world_communicator();
int world_rank();  // 0 without MPI
int world_size();  // 1 without MPI
// Number of ranks of this job on this host (OMPI_COMM_WORLD_LOCAL_SIZE / MPI_LOCALNRANKS, else a
// shared-memory split of the world; 1 without MPI).
int ranks_on_this_host();
// Threads for a process's CPU backend and host loops when the user gave none: the CPUs in its
// affinity mask shared among the job's ranks on this host (at least 1), so `mpirun -np 2` on 2
// cores runs one thread per rank. Collective over the world communicator under MPI.
int default_thread_count();
// Text messages between ranks, for programs that coordinate their ranks themselves (nn-tune):
// in order between any two ranks. Without MPI there is no other rank: send_text throws
// BackendError and poll_text finds nothing.
void send_text(int to_rank, const std::string& text);
std::optional<std::pair<int, std::string>> poll_text();
// "rank 3: " when the job has more than one rank, "" otherwise (prefix for messages).
std::string rank_prefix();

// Ends every process of the job with `status` (MPI_Abort under MPI, std::exit otherwise). For
// tools only, after they have printed the reason; the library itself never calls it.
[[noreturn]] void abort_job(int status);

// A collective that waits longer than this for the other ranks means one of them has stopped or
// hung: the waiting rank prints which operation timed out and aborts the job. Read from
// NN_MPI_TIMEOUT (seconds, default 300, 0 disables) at start-up; tests shorten it.
double collective_timeout_seconds();
// A rank whose heartbeats (distributed/mpi/rank_heartbeat.h) have not arrived for this long is
// lost (killed, stopped, cut off): the rank that watches it names it and aborts the job, whatever
// the others are doing. Read from NN_MPI_RANK_TIMEOUT (seconds, default 60, 0 disables).
double rank_silence_timeout_seconds();

// The newest checkpoint this process wrote or resumed from, named by the message of a job that
// ends because a rank was lost ("" before the first). The training run records it.
void note_checkpoint(const std::string& path);
std::string last_checkpoint();

}  // namespace nn
