// One process per GPU: which CUDA device a rank uses, and which communicator carries the
// collectives over a backend's buffers (gradient reduction). With the CUDA backend and more than
// one rank that is a NCCL communicator (distributed/nccl/, device buffers on the backend's stream),
// bootstrapped over the host communicator; otherwise the host communicator itself, which the
// model code feeds through host staging copies. Host-side collectives (losses, log merging, the
// predictor's top-K merge) always stay on the host communicator.
//
// The pure rules (device_for_local_rank, choose_backend_communicator) are separate from the
// collective and CUDA parts so they are tested without a GPU.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "distributed/communicator.h"

namespace nn {

// The node-local rank the launcher announced (OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID,
// MV2_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, PMIX... in that order), or -1 when none did.
int local_rank_from_environment();
// This process's rank among the job's ranks on this host: the launcher's word when it gave one,
// else the rank in a shared-memory split of the world (collective then); 0 without MPI.
int local_rank();

// The device a rank uses when the user gave none: local rank modulo the devices this host has
// (round robin when there are more ranks than devices); 0 without devices.
int device_for_local_rank(int local_rank, int device_count);
// device_for_local_rank(local_rank(), cuda_device_count()): the --device default of the tools.
int default_device();

// `requested` when >= 0, else the default device from the launcher's local-rank variable alone
// (never collective, so a call on one rank is safe; 0 when no variable says). For the library API.
int resolve_device(int requested);

// Which communicator carries collectives over a backend's buffers.
struct CommunicatorChoice {
  bool nccl = false;   // true: a NCCL communicator on the backend's device and stream
  std::string reason;  // why (for the log line)
};
// The rule: NCCL when the backend is "cuda", there is more than one rank, this build has NCCL,
// and NN_NCCL (nccl_setting; null when unset) is not "0". `backend` is Backend::name().
CommunicatorChoice choose_backend_communicator(const std::string& backend, int ranks,
                                               bool nccl_built, const char* nccl_setting);
// True when two ranks of a host hold the same GPU: `identities` are the ranks' GPU UUIDs ("" for
// a rank on a host backend, which shares nothing). NCCL refuses such a communicator.
bool gpus_shared(const std::vector<std::string>& identities);
// True when this build compiled the NCCL communicator (NCCL and CUDA were found).
bool nccl_built();

// Collective over `host`: the communicator for `backend`'s buffers, or null when `host` itself
// is to be used (through host staging). Every rank must call it, whatever its backend; NCCL is
// used only when every rank chose it and no two ranks of a host share a device (NCCL refuses
// that), so the ranks always agree. *note says which was chosen and why.
std::unique_ptr<Communicator> make_backend_communicator(Backend& backend, Communicator& host,
                                                        std::string* note = nullptr);

// Collective over `host`: one line per rank saying its host, backend, device and the
// communicators it uses ("rank 1 on gpu-7: backend cuda device 1, backend buffers over nccl, host
// collectives over mpi"), gathered to rank 0 (empty elsewhere).
std::vector<std::string> describe_placement(Communicator& host, const Backend& backend,
                                            const Communicator* backend_comm);

}  // namespace nn
