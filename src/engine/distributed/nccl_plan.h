// The NCCL calls behind the Communicator's all-gather, reduce-scatter and gather, as data: NCCL has
// no variable-count form of them, so each becomes a group of broadcasts, reduces or sends and
// receives with offsets worked out here. distributed/nccl/ executes these plans call by call; host
// tests run them through a simulator of NCCL's semantics over several ranks (tests/unit/dist), so
// the offsets, the skipped empty blocks and the agreement between ranks are checked without a GPU.
#pragma once

#include <cstddef>
#include <vector>

namespace nn {

struct NcclCall {
  enum Kind {
    AllGather,      // ncclAllGather(src, dst, count): rank q's src lands at dst + q * count
    ReduceScatter,  // ncclReduceScatter(src, dst, count): block `rank` of the reduction to dst
    Broadcast,      // ncclBroadcast(src, dst, count, root): root's src to every rank's dst
    Reduce,         // ncclReduce(src, dst, count, root): the reduction to root's dst
    Send,           // ncclSend(src, count, peer)
    Recv,           // ncclRecv(dst, count, peer)
    Copy            // device copy src -> dst on this rank (skipped when they are the same)
  };
  Kind kind = Copy;
  int peer = -1;           // root (Broadcast, Reduce) or the other rank (Send, Recv)
  bool from_recv = false;  // src is in the receive buffer (else in the send buffer)
  size_t src = 0;          // element offset of the source
  size_t dst = 0;          // element offset in the receive buffer (unused by Send)
  size_t count = 0;        // elements
};

struct NcclPlan {
  std::vector<NcclCall> calls;  // in order; Copy calls come last
  bool grouped = false;         // the non-Copy calls go between ncclGroupStart and ncclGroupEnd
};

// Every rank's counts[q] elements gathered to every rank's receive buffer at q's offset.
NcclPlan plan_all_gather(const size_t* counts, int ranks, int rank);
// The send buffer holds sum(counts) elements; rank q receives the reduction of block q.
NcclPlan plan_reduce_scatter(const size_t* counts, int ranks, int rank);
// As plan_all_gather, but only `root` receives.
NcclPlan plan_gather(const size_t* counts, int ranks, int rank, int root);

}  // namespace nn
