// Block shuffle of streaming training (see block_order.h).
#include "data/block_order.h"

#include <algorithm>
#include <numeric>

namespace nn {

void shuffle_in_place(uint32_t* ids, uint64_t count, Rng& rng) {
  for (uint64_t i = count - 1; count > 1 && i > 0; --i) std::swap(ids[i], ids[rng.below(i + 1)]);
}

std::vector<uint64_t> chunk_permutation(const BlockLayout& layout, uint64_t key, bool shuffle) {
  std::vector<uint64_t> perm(layout.chunks());
  std::iota(perm.begin(), perm.end(), uint64_t(0));
  if (!shuffle || layout.windows() <= 1) return perm;
  Rng rng(mix64(key ^ 0x43484e4b53ull));
  for (uint64_t i = perm.size() - 1; i > 0; --i) std::swap(perm[i], perm[rng.below(i + 1)]);
  return perm;
}

std::vector<uint32_t> window_examples(const BlockLayout& layout, const std::vector<uint64_t>& perm,
                                      uint64_t w) {
  const uint64_t lo = w * layout.window_chunks;
  const uint64_t hi = std::min<uint64_t>(perm.size(), lo + layout.window_chunks);
  std::vector<uint64_t> chunks(perm.begin() + lo, perm.begin() + hi);
  std::sort(chunks.begin(), chunks.end());
  std::vector<uint32_t> ids;
  for (uint64_t c : chunks) {
    const uint64_t first = c * layout.chunk;
    const uint64_t last = std::min(layout.examples, first + layout.chunk);
    for (uint64_t e = first; e < last; ++e) ids.push_back(uint32_t(e));
  }
  return ids;
}

}  // namespace nn
