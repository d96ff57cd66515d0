// The NCCL call plans of the variable-count collectives (nccl_plan.h). Every rank derives the
// same sequence of collective calls from the same counts: empty blocks are skipped on all ranks
// alike, so the calls always match.
#include "distributed/nccl_plan.h"

namespace nn {
namespace {

struct Layout {
  std::vector<size_t> offset;
  bool equal = true;
  Layout(const size_t* counts, int ranks) : offset(size_t(ranks)) {
    size_t total = 0;
    for (int q = 0; q < ranks; ++q) {
      offset[size_t(q)] = total;
      total += counts[q];
      equal = equal && counts[q] == counts[0];
    }
  }
};

NcclCall call(NcclCall::Kind kind, int peer, bool from_recv, size_t src, size_t dst, size_t count) {
  NcclCall c;
  c.kind = kind;
  c.peer = peer;
  c.from_recv = from_recv;
  c.src = src;
  c.dst = dst;
  c.count = count;
  return c;
}

}  // namespace

NcclPlan plan_all_gather(const size_t* counts, int ranks, int rank) {
  NcclPlan plan;
  const Layout l(counts, ranks);
  if (l.equal) {
    if (counts[0]) plan.calls.push_back(call(NcclCall::AllGather, -1, false, 0, 0, counts[0]));
    return plan;
  }
  // Each rank broadcasts its block into its place; the others name their own copy of that block
  // as the (unused) source.
  plan.grouped = true;
  for (int q = 0; q < ranks; ++q) {
    if (!counts[q]) continue;
    const size_t at = l.offset[size_t(q)];
    plan.calls.push_back(q == rank ? call(NcclCall::Broadcast, q, false, 0, at, counts[q])
                                   : call(NcclCall::Broadcast, q, true, at, at, counts[q]));
  }
  return plan;
}

NcclPlan plan_reduce_scatter(const size_t* counts, int ranks, int rank) {
  NcclPlan plan;
  const Layout l(counts, ranks);
  if (l.equal) {
    if (counts[0]) plan.calls.push_back(call(NcclCall::ReduceScatter, -1, false, 0, 0, counts[0]));
    return plan;
  }
  // One reduce per block, rooted at the rank that receives it (dst is used on the root only).
  plan.grouped = true;
  for (int q = 0; q < ranks; ++q) {
    if (!counts[q]) continue;
    plan.calls.push_back(call(NcclCall::Reduce, q, false, l.offset[size_t(q)], 0, counts[q]));
  }
  (void)rank;
  return plan;
}

NcclPlan plan_gather(const size_t* counts, int ranks, int rank, int root) {
  NcclPlan plan;
  const Layout l(counts, ranks);
  if (rank != root) {
    if (counts[rank]) plan.calls.push_back(call(NcclCall::Send, root, false, 0, 0, counts[rank]));
    return plan;
  }
  plan.grouped = true;
  for (int q = 0; q < ranks; ++q)
    if (q != root && counts[q])
      plan.calls.push_back(call(NcclCall::Recv, q, false, 0, l.offset[size_t(q)], counts[q]));
  if (counts[root])
    plan.calls.push_back(call(NcclCall::Copy, -1, false, 0, l.offset[size_t(root)], counts[root]));
  return plan;
}

}  // namespace nn
