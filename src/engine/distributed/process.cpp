// Launcher detection, the world communicator and job abort; the MPI-specific halves are in
// distributed/mpi/mpi_runtime.cpp (compiled only with NN_HAVE_MPI).
#include "distributed/process.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "core/cpu_count.h"
#include "core/error.h"
#ifdef NN_HAVE_MPI
#include "distributed/mpi/mpi_runtime.h"
#endif

namespace nn {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::mutex world_mutex;
std::shared_ptr<Communicator> world;

std::mutex checkpoint_mutex;
std::string newest_checkpoint;

// srun starts every task of a step itself; the tasks find each other only through a process
// management interface (PMIx or PMI2) that srun provides when asked (--mpi=pmix, or MpiDefault in
// slurm.conf). Without one, each task would be a job of its own: several identical trainings
// writing the same files. Refuse that, saying how to launch.
void refuse_srun_without_pmi() {
  const char* tasks = env("SLURM_STEP_NUM_TASKS");
  if (!tasks || std::atoi(tasks) < 2 || !env("SLURM_PROCID")) return;
  throw BackendError(
      "started by srun as task " + std::string(env("SLURM_PROCID")) + " of " + tasks +
      " without an MPI process-management interface, so the tasks cannot reach each other "
      "and each would run the whole job alone, writing the same files: launch with "
      "'srun --mpi=pmix' (or --mpi=pmi2, or MpiDefault=pmix in slurm.conf); 'srun --mpi=list' "
      "shows what this Slurm offers");
}

}  // namespace

bool launched_by_mpi() {
  return env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMI_RANK") || env("PMIX_RANK") ||
         env("MV2_COMM_WORLD_SIZE");
}

ProcessSession::ProcessSession(int* argc, char*** argv) {
  if (!launched_by_mpi()) {
    refuse_srun_without_pmi();
    return;
  }
#ifdef NN_HAVE_MPI
  initialised_here_ = mpi::initialise(argc, argv);
#else
  // A launcher started several copies of a build that cannot talk to each other: each would
  // train alone and overwrite the same files, so refuse instead.
  const char* n = env("OMPI_COMM_WORLD_SIZE");
  if (!n) n = env("PMI_SIZE");
  if (n && std::atoi(n) > 1)
    throw BackendError("started by an MPI launcher with " + std::string(n) +
                       " processes, but this build has no MPI support (rebuild with "
                       "libopenmpi-dev installed and -DNN_ENABLE_MPI=ON)");
#endif
}

ProcessSession::~ProcessSession() {
  {
    std::lock_guard<std::mutex> lock(world_mutex);
    world.reset();
  }
#ifdef NN_HAVE_MPI
  if (initialised_here_) mpi::finalise();
#endif
}

void note_checkpoint(const std::string& path) {
  std::lock_guard<std::mutex> lock(checkpoint_mutex);
  newest_checkpoint = path;
}

std::string last_checkpoint() {
  std::lock_guard<std::mutex> lock(checkpoint_mutex);
  return newest_checkpoint;
}

bool mpi_active() {
#ifdef NN_HAVE_MPI
  return mpi::active();
#else
  return false;
#endif
}

std::shared_ptr<Communicator> world_communicator() {
  std::lock_guard<std::mutex> lock(world_mutex);
  if (!world) {
#ifdef NN_HAVE_MPI
    if (mpi::active()) world = mpi::make_world();
#endif
    if (!world) world = std::make_shared<LocalCommunicator>();
  }
  return world;
}

int world_rank() {
#ifdef NN_HAVE_MPI
  if (mpi::active()) return mpi::world_rank();
#endif
  return 0;
}

int world_size() {
#ifdef NN_HAVE_MPI
  if (mpi::active()) return mpi::world_size();
#endif
  return 1;
}

void send_text(int to_rank, const std::string& text) {
  if (to_rank < 0 || to_rank >= world_size() || world_size() < 2)
    throw BackendError("no rank " + std::to_string(to_rank) + " to send to: the job has " +
                       std::to_string(world_size()) + " rank(s)");
#ifdef NN_HAVE_MPI
  mpi::send_text(to_rank, text);
#else
  (void)text;
#endif
}

std::optional<std::pair<int, std::string>> poll_text() {
#ifdef NN_HAVE_MPI
  if (mpi::active()) {
    int from = 0;
    std::string text;
    if (mpi::poll_text(&from, &text)) return std::make_pair(from, std::move(text));
  }
#endif
  return std::nullopt;
}

int ranks_on_this_host() {
  if (world_size() <= 1) return 1;
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE"})
    if (const char* v = env(name)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  return world_communicator()->split_by_host()->size();
}

int default_thread_count() {
  if (world_size() <= 1) return available_cpus();
  // Each CPU this rank may run on counts 1/k when k ranks of this host may run on it: exact for
  // no binding (every rank sees every CPU), binding to cores, and binding to shared sockets.
  auto host = world_communicator()->split_by_host();
  const std::vector<uint64_t> mine = cpu_affinity_mask();
  std::vector<uint64_t> all(mine.size() * size_t(host->size()));
  host->all_gather(mine.data(), mine.size(), all.data());
  double share = 0.0;
  for (size_t w = 0; w < mine.size(); ++w)
    for (int bit = 0; bit < 64; ++bit) {
      const uint64_t m = uint64_t(1) << bit;
      if (!(mine[w] & m)) continue;
      int sharers = 0;
      for (int r = 0; r < host->size(); ++r)
        sharers += (all[size_t(r) * mine.size() + w] & m) ? 1 : 0;
      share += 1.0 / double(sharers);
    }
  return std::max(1, int(share + 1e-6));
}

std::string rank_prefix() {
  return world_size() > 1 ? "rank " + std::to_string(world_rank()) + ": " : std::string();
}

void abort_job(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef NN_HAVE_MPI
  if (mpi::active() && mpi::world_size() > 1) mpi::abort_world(status);
#endif
  std::exit(status);
}

}  // namespace nn
