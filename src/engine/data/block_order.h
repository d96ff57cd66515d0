// The epoch order of streaming training (docs/large-datasets.md, "Streaming training"): the
// examples are cut into chunks of consecutive examples, a seeded permutation of the chunks is
// grouped into windows, and each window's examples are shuffled among themselves. Only a window
// at a time (two while the next is read) needs to be in memory. The in-memory full shuffle is
// the special case of one window holding every chunk: the same seed gives the same order.
#pragma once

#include <cstdint>
#include <vector>

#include "core/random.h"

namespace nn {

struct BlockLayout {
  uint64_t examples = 0;
  uint64_t chunk = 1;          // examples per chunk (the last may be shorter)
  uint64_t window_chunks = 1;  // chunks per window (the last may have fewer)
  uint64_t chunks() const { return (examples + chunk - 1) / chunk; }
  uint64_t windows() const { return (chunks() + window_chunks - 1) / window_chunks; }
  uint64_t window_examples() const { return chunk * window_chunks; }
};

// Fisher-Yates from the last position down, one rng.below(i + 1) per position: the shuffle of
// in-memory training and of each window.
void shuffle_in_place(uint32_t* ids, uint64_t count, Rng& rng);

// The epoch's chunk permutation, drawn from its own generator seeded with `key` (so that the
// draws of the within-window shuffles do not depend on the number of chunks). Identity when
// `shuffle` is false or there is one window (its examples are shuffled whole anyway).
std::vector<uint64_t> chunk_permutation(const BlockLayout& layout, uint64_t key, bool shuffle);

// Window w's examples in ascending order: those of chunks perm[w * window_chunks, ...).
std::vector<uint32_t> window_examples(const BlockLayout& layout, const std::vector<uint64_t>& perm,
                                      uint64_t w);

}  // namespace nn
