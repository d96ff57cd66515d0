// The parts of the NCCL set-up that need no GPU: the local-rank-to-device rule, the choice of the
// communicator for a backend's buffers, and the bootstrap broadcast of the unique id over the host
// communicator. Run as one process and under `mpirun -np 2/3` (CTest mpi.collectives.np*).
#include "distributed/device_placement.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/device_probe.h"
#include "core/error.h"
#include "distributed/bootstrap_id.h"
#include "distributed/process.h"
#ifdef NN_HAVE_NCCL
#include <nccl.h>
#endif

namespace nn {
namespace {

TEST(DevicePlacement, DeviceFollowsTheLocalRankRoundRobin) {
  EXPECT_EQ(device_for_local_rank(0, 1), 0);
  EXPECT_EQ(device_for_local_rank(0, 8), 0);
  EXPECT_EQ(device_for_local_rank(5, 8), 5);
  EXPECT_EQ(device_for_local_rank(7, 8), 7);
  EXPECT_EQ(device_for_local_rank(8, 8), 0);  // more ranks than devices: wraps (shared device)
  EXPECT_EQ(device_for_local_rank(3, 2), 1);
  EXPECT_EQ(device_for_local_rank(3, 0), 0);   // no device: 0 (the CPU backend ignores it)
  EXPECT_EQ(device_for_local_rank(-1, 4), 0);  // unknown local rank
}

// Sets launcher variables for the scope of a test and restores them afterwards (the real ones
// are set under mpirun).
class EnvScope {
 public:
  explicit EnvScope(const std::vector<const char*>& names) {
    for (const char* n : names) {
      const char* v = std::getenv(n);
      saved_[n] = v ? std::optional<std::string>(v) : std::nullopt;
      unsetenv(n);
    }
  }
  ~EnvScope() {
    for (const auto& [n, v] : saved_)
      if (v)
        setenv(n.c_str(), v->c_str(), 1);
      else
        unsetenv(n.c_str());
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST(DevicePlacement, LocalRankFromTheLauncher) {
  EnvScope scope({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                  "SLURM_LOCALID", "PMIX_LOCAL_RANK", "PALS_LOCAL_RANKID"});
  EXPECT_EQ(local_rank_from_environment(), -1);
  setenv("SLURM_LOCALID", "3", 1);
  EXPECT_EQ(local_rank_from_environment(), 3);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);  // Open MPI's word comes first
  EXPECT_EQ(local_rank_from_environment(), 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "x1", 1);  // not a number: the next variable
  EXPECT_EQ(local_rank_from_environment(), 3);
  EXPECT_EQ(resolve_device(-1), device_for_local_rank(3, cuda_device_count()));  // the API's
  EXPECT_EQ(resolve_device(5), 5);                                               // given: kept
  unsetenv("SLURM_LOCALID");
  EXPECT_EQ(local_rank_from_environment(), -1);
  EXPECT_EQ(resolve_device(-1), 0);  // no word from a launcher: never collective, device 0
}

TEST(DevicePlacement, LocalRankOnOneHostIsTheWorldRank) {
  // Every rank of these tests runs on this host: with or without the launcher's variable (the
  // fallback splits the world by shared memory), the local rank is the world rank.
  EXPECT_EQ(local_rank(), world_rank());
  {
    EnvScope scope({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                    "SLURM_LOCALID", "PMIX_LOCAL_RANK", "PALS_LOCAL_RANKID"});
    EXPECT_EQ(local_rank(), world_rank());
  }
  EXPECT_EQ(default_device(), device_for_local_rank(world_rank(), cuda_device_count()));
}

TEST(DevicePlacement, ChoiceOfTheCommunicatorForBackendBuffers) {
  auto c = choose_backend_communicator("cuda", 2, true, nullptr);
  EXPECT_TRUE(c.nccl) << c.reason;
  EXPECT_NE(c.reason.find("NCCL"), std::string::npos);
  EXPECT_TRUE(choose_backend_communicator("cuda", 8, true, "1").nccl);
  // One rank: nothing to reduce.
  EXPECT_FALSE(choose_backend_communicator("cuda", 1, true, nullptr).nccl);
  // The CPU backend's arrays are host memory: MPI takes them as they are.
  c = choose_backend_communicator("cpu", 4, true, nullptr);
  EXPECT_FALSE(c.nccl);
  EXPECT_NE(c.reason.find("host memory"), std::string::npos) << c.reason;
  // No NCCL in the build, or switched off: CUDA buffers are staged through host memory.
  c = choose_backend_communicator("cuda", 2, false, nullptr);
  EXPECT_FALSE(c.nccl);
  EXPECT_NE(c.reason.find("no NCCL"), std::string::npos) << c.reason;
  c = choose_backend_communicator("cuda", 2, true, "0");
  EXPECT_FALSE(c.nccl);
  EXPECT_NE(c.reason.find("NN_NCCL=0"), std::string::npos) << c.reason;
}

TEST(DevicePlacement, SharedGpusAreFoundByIdentityNotIndex) {
  EXPECT_FALSE(gpus_shared({}));
  EXPECT_FALSE(gpus_shared({"uuid-a"}));
  EXPECT_FALSE(gpus_shared({"uuid-a", "uuid-b", "uuid-c"}));
  EXPECT_TRUE(gpus_shared({"uuid-a", "uuid-b", "uuid-a"}));
  EXPECT_FALSE(gpus_shared({"", "", "uuid-a"}));  // CPU ranks share no GPU
  EXPECT_TRUE(gpus_shared({"", "uuid-x", "uuid-x"}));
}

TEST(DevicePlacement, CpuBackendKeepsTheHostCommunicator) {
  auto world = world_communicator();
  auto cpu = make_backend("cpu", 1);
  std::string note;
  auto comm = make_backend_communicator(*cpu, *world, &note);  // collective
  EXPECT_EQ(comm, nullptr);
  EXPECT_FALSE(note.empty());
  const auto lines = describe_placement(*world, *cpu, comm.get());
  if (world->rank() == 0) {
    ASSERT_EQ(lines.size(), size_t(world->size()));
    for (int r = 0; r < world->size(); ++r) {
      EXPECT_EQ(lines[size_t(r)].rfind("rank " + std::to_string(r) + " on ", 0), 0u)
          << lines[size_t(r)];
      EXPECT_NE(lines[size_t(r)].find("backend cpu"), std::string::npos);
      EXPECT_NE(lines[size_t(r)].find("backend buffers over " + world->name()), std::string::npos);
    }
  } else {
    EXPECT_TRUE(lines.empty());
  }
}

TEST(DevicePlacement, BootstrapIdReachesEveryRank) {
  auto world = world_communicator();
  // Rank 0's bytes differ from what any other rank starts with, so a missing broadcast shows.
  std::vector<unsigned char> id(128);
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<unsigned char>(world->rank() * 31 + 1);
  broadcast_unique_id(*world, id.data(), id.size(), [](void* p) {
    auto* b = static_cast<unsigned char*>(p);
    for (size_t i = 0; i < 128; ++i) b[i] = static_cast<unsigned char>(i * 7 + 3);
  });
  for (size_t i = 0; i < id.size(); ++i)
    EXPECT_EQ(id[i], static_cast<unsigned char>(i * 7 + 3)) << i;
}

TEST(DevicePlacement, BootstrapFailureOnRankZeroEndsEveryRank) {
  auto world = world_communicator();
  std::vector<char> id(128);
  try {
    broadcast_unique_id(*world, id.data(), id.size(),
                        [](void*) { throw BackendError("ncclGetUniqueId: no network"); });
    FAIL() << "expected BackendError on rank " << world->rank();
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0: ncclGetUniqueId: no network"), std::string::npos)
        << e.what();
  }
  world->barrier();  // the communicator is still usable afterwards
}

#ifdef NN_HAVE_NCCL
// The real id: ncclGetUniqueId needs no GPU (it sets up NCCL's bootstrap socket), so the id
// broadcast of the NCCL communicator's start-up is checked here up to ncclCommInitRank.
TEST(DevicePlacement, NcclUniqueIdBroadcastOverTheHostCommunicator) {
  auto world = world_communicator();
  ncclUniqueId id;
  std::memset(&id, world->rank() + 1, sizeof id);
  ncclResult_t made = ncclSuccess;
  try {
    broadcast_unique_id(*world, &id, sizeof id, [&](void* p) {
      made = ncclGetUniqueId(static_cast<ncclUniqueId*>(p));
      if (made != ncclSuccess) throw BackendError(ncclGetErrorString(made));
    });
  } catch (const BackendError& e) {
    GTEST_SKIP() << "ncclGetUniqueId failed on this machine (" << e.what()
                 << "); the id broadcast is covered by BootstrapIdReachesEveryRank";
  }
  std::vector<char> all(sizeof id * size_t(world->size()));
  world->all_gather(reinterpret_cast<const char*>(&id), sizeof id, all.data());
  for (int r = 1; r < world->size(); ++r)
    EXPECT_EQ(std::memcmp(all.data(), all.data() + sizeof id * size_t(r), sizeof id), 0) << r;
  // Not all bytes equal to a rank's fill pattern: it was made, not left as it was.
  bool varied = false;
  for (size_t i = 1; i < sizeof id; ++i) varied |= id.internal[i] != id.internal[0];
  EXPECT_TRUE(varied);
}
#endif

}  // namespace
}  // namespace nn
