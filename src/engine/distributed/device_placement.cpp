// Device and communicator placement of a rank (see device_placement.h). The NCCL communicator
// itself is in distributed/nccl/ (compiled only when CUDA and NCCL are found: NN_HAVE_NCCL).
#include "distributed/device_placement.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/device_probe.h"
#include "backend/cuda_module.h"
#include "core/error.h"
#include "distributed/process.h"

namespace nn {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// The CUDA device a backend runs on, or -1 for a host backend. Only a backend of the CUDA
// module can be CUDA's, so the module is loaded already when one exists.
int device_of(const Backend& backend) {
  if (backend.name() != "cuda") return -1;
  const CudaModule* m = cuda_module();
  return m ? m->device_of(backend) : -1;
}

// The physical GPU of a CUDA backend (its UUID, so ranks that each see "device 0" through
// CUDA_VISIBLE_DEVICES are told apart), or "" for a host backend.
std::string gpu_identity(const Backend& backend) {
  if (backend.name() != "cuda") return "";
  const CudaModule* m = cuda_module();
  return m ? m->gpu_identity(backend) : "";
}

// Strings of every rank to rank 0, rank order (empty vector elsewhere).
std::vector<std::string> gather_strings(Communicator& c, const std::string& mine) {
  const uint64_t n = mine.size();
  std::vector<uint64_t> sizes(size_t(c.size()));
  c.all_gather(&n, 1, sizes.data());
  std::vector<size_t> counts(sizes.begin(), sizes.end());
  size_t total = 0;
  for (size_t s : counts) total += s;
  const bool root = c.rank() == 0;
  std::string all(root ? total : 0, '\0');
  c.gather_v(mine.data(), root && total ? &all[0] : nullptr, counts, 0);
  std::vector<std::string> out;
  if (!root) return out;
  size_t off = 0;
  for (size_t s : counts) {
    out.push_back(all.substr(off, s));
    off += s;
  }
  return out;
}

}  // namespace

int local_rank_from_environment() {
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
        "SLURM_LOCALID", "PMIX_LOCAL_RANK", "PALS_LOCAL_RANKID"})
    if (const char* v = env(name)) {
      char* end = nullptr;
      const long r = std::strtol(v, &end, 10);
      if (end != v && *end == '\0' && r >= 0) return int(r);
    }
  return -1;
}

int local_rank() {
  if (world_size() <= 1) return 0;
  const int r = local_rank_from_environment();
  if (r >= 0) return r;
  return world_communicator()->split_by_host()->rank();
}

int device_for_local_rank(int local_rank, int device_count) {
  if (device_count <= 0 || local_rank < 0) return 0;
  return local_rank % device_count;
}

int default_device() {
  return device_for_local_rank(local_rank(), cuda_device_count());
}

int resolve_device(int requested) {
  if (requested >= 0) return requested;
  return device_for_local_rank(std::max(0, local_rank_from_environment()), cuda_device_count());
}

bool gpus_shared(const std::vector<std::string>& identities) {
  for (size_t i = 0; i < identities.size(); ++i)
    for (size_t j = i + 1; j < identities.size(); ++j)
      if (!identities[i].empty() && identities[i] == identities[j]) return true;
  return false;
}

bool nccl_built() {
  const CudaModule* m = cuda_module();
  return m && m->make_nccl_communicator;
}

CommunicatorChoice choose_backend_communicator(const std::string& backend, int ranks,
                                               bool nccl_built, const char* nccl_setting) {
  if (ranks <= 1) return {false, "one rank: no collectives over backend buffers"};
  if (backend != "cuda")
    return {false, "backend " + backend + " keeps its arrays in host memory: MPI directly"};
  if (!nccl_built)
    return {false, "this build has no NCCL: CUDA buffers staged through host memory over MPI"};
  if (nccl_setting && std::strcmp(nccl_setting, "0") == 0)
    return {false, "NN_NCCL=0: CUDA buffers staged through host memory over MPI"};
  return {true, "CUDA backend with " + std::to_string(ranks) + " ranks: NCCL on device buffers"};
}

std::unique_ptr<Communicator> make_backend_communicator(Backend& backend, Communicator& host,
                                                        std::string* note) {
  CommunicatorChoice choice = choose_backend_communicator(
      backend.name(), host.size(), backend.name() == "cuda" && nccl_built(), env("NN_NCCL"));
  // Every rank must agree, and NCCL refuses two ranks on one device: ranks of a host compare
  // their devices, then the world takes the minimum of the votes.
  int32_t vote = choice.nccl ? 1 : 0;
  if (host.size() > 1) {
    auto local = host.split_by_host();
    const std::vector<std::string> gpus = gather_strings(*local, gpu_identity(backend));
    // Rank 0 of the host sees every rank's GPU; it tells the others whether two share one.
    int32_t shared = gpus_shared(gpus) ? 1 : 0;
    local->broadcast(&shared, 1, 0);
    if (vote && shared)
      choice = {false,
                "two ranks of a host share a CUDA device, which NCCL refuses: staged "
                "through host memory over MPI (give each rank its own device)"};
    if (shared) vote = 0;
    int32_t agreed = vote;
    host.all_reduce_min(&agreed, 1);
    if (vote && !agreed)
      choice = {false,
                "another rank cannot use NCCL (a CPU backend, or devices shared): staged "
                "through host memory over MPI"};
    vote = agreed;
  }
  if (note) *note = choice.reason;
  if (!vote) return nullptr;
  const CudaModule* m = cuda_module();
  if (!m || !m->make_nccl_communicator) throw InternalError("NCCL chosen in a build without NCCL");
  return m->make_nccl_communicator(backend, host);
}

std::vector<std::string> describe_placement(Communicator& host, const Backend& backend,
                                            const Communicator* backend_comm) {
  std::string line =
      "rank " + std::to_string(host.rank()) + " on " + host_name() + ": backend " + backend.name();
  const int device = device_of(backend);
  if (device >= 0) line += " device " + std::to_string(device);
  line += ", backend buffers over " + (backend_comm ? backend_comm->name() : host.name()) +
          (backend_comm || backend.name() == "cpu" ? "" : " (host staging)") +
          ", host collectives over " + host.name();
  return gather_strings(host, line);
}

}  // namespace nn
