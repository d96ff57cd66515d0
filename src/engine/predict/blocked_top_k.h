// Exact top-K of a very wide layer without its whole [rows x units] scores: the layer is scored
// a block of columns at a time, each block's top K selected on the backend (after the rows'
// filters) and merged on the host into each row's running top K. Memory: O(rows x block) for
// the block's scores plus O(rows x K) for the selections, instead of O(rows x units). The
// result is Backend::top_k_filtered's over the whole row, entry for entry: the global top K is
// within the union of the blocks' top K, and the merge keeps the same order (descending score,
// ties to the lower column). Also here: the rule that decides when a layer is scored so
// (score_block_columns) and the selection of one matrix of scores on the backend (TopKSelector,
// shared with the whole-layer path).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/device_array.h"
#include "model/network.h"

namespace nn {

struct TopK {
  std::vector<uint32_t> index;  // rows * k, UINT32_MAX when a row has fewer candidates
  std::vector<float> score;
};

// One example's filters for Predictor::run_top_k, in the scored layer's unit numbers, in host
// memory that stays valid until the next call of the filter function: columns to leave out and
// score multipliers, each list ascending (the Backend::top_k_filtered contract).
struct RowFilter {
  const uint32_t* exclude = nullptr;
  size_t excluded = 0;
  const uint32_t* scale_index = nullptr;
  const float* scale_value = nullptr;
  size_t scaled = 0;
};

// The score block setting: kScoreBlockAuto picks (score_block_columns), kScoreBlockFull keeps
// the whole layer, and any other value is the columns per block.
constexpr int64_t kScoreBlockAuto = -1;
constexpr int64_t kScoreBlockFull = 0;
// Automatic blocking starts when one minibatch's scores of the layer would take more than this
// many bytes, and then scores kDefaultScoreBlock columns at a time (a multiple of the CPU
// backend's gemm tile).
constexpr uint64_t kBlockedScoringBytes = uint64_t(64) << 20;
constexpr uint32_t kDefaultScoreBlock = 8192;

// Why layer `name` of `net` cannot be scored in column blocks ("" when it can): it must be a
// plain fully connected layer that no other layer reads, computable a slice of columns at a
// time (FullyConnectedLayer::column_forward_obstacle), in a network without split layers.
std::string blocked_scoring_obstacle(Network& net, const std::string& name);

// Columns per block for `setting` (kScoreBlockAuto, kScoreBlockFull or a count), a minibatch of
// `rows` rows and a layer of `units` units; 0 means the whole layer at once (no blocking: the
// setting asks for it, automatic blocking would not save memory, or a block would cover the
// layer anyway).
uint32_t score_block_columns(int64_t setting, uint32_t rows, uint32_t units);

// Parses a --score-block value: "auto", "full" or a positive count. Throws ArgumentError.
int64_t parse_score_block(const std::string& text);

// Selects each row's k best of a matrix of scores on the backend, after the rows' filters: the
// filter lists (global unit numbers) are cut to the matrix's columns, copied to the backend as
// CSR, and Backend::top_k_filtered runs; only rows * k results are read back. Keeps its buffers
// from call to call.
class TopKSelector {
 public:
  // scores: [rows][cols] in backend memory (rows `stride` floats apart, 0: cols; a padded
  // layer's), holding units [col_first, col_first + cols); only its first valid_cols columns
  // may be ranked. The filters are those of examples first_example + 0 .. rows - 1 (null:
  // none). out gets rows * k global unit numbers (UINT32_MAX past a row's candidates) and their
  // filtered scores (-inf there).
  void select(Backend& be, const float* scores, uint32_t rows, uint32_t col_first, uint32_t cols,
              uint32_t k, uint32_t valid_cols, uint64_t first_example,
              const std::function<RowFilter(uint64_t)>& filter, TopK& out, uint32_t stride = 0);

 private:
  std::vector<uint32_t> ex_ptr_, ex_index_, sc_ptr_, sc_index_;
  std::vector<float> sc_value_;
  DeviceArray<uint32_t> d_ex_ptr_, d_ex_index_, d_sc_ptr_, d_sc_index_, d_top_index_;
  DeviceArray<float> d_sc_value_, d_top_score_;
};

// Merges a block's selection into the running one, per row (both rows * k, best first, padded
// with UINT32_MAX): the k best of both, larger score first, ties to the lower unit. Every unit
// of `block` must come after every unit of `running` (blocks are visited left to right), which
// is what makes equal scores keep the running entry, as a whole-row selection would.
void merge_block_top_k(TopK& running, const TopK& block, uint32_t rows, uint32_t k);

// Runs the blocked selection for one minibatch. Keeps the block's scores and selections from
// call to call (rows x block floats, rows x k entries).
class BlockedTopK {
 public:
  // Each row's k best units among [0, valid_cols) of a layer of `units` units, about `block`
  // columns at a time: score(first, cols, out) writes units [first, first + cols) of every row
  // into out ([rows][cols], backend memory). Blocks are `block` rounded up to a multiple of
  // `tile` (the backend's Backend::gemm_column_tile, so that scores computed by products over a
  // block have the bits of the whole layer's; 0 or 1: any width), start at multiples of it, and
  // the last one takes in a remainder narrower than a tile: at most block + 2 * tile - 2
  // columns. Blocks wholly past valid_cols are not scored. Filters and out as
  // TopKSelector::select (global unit numbers).
  void run(Backend& be, uint32_t rows, uint32_t units, uint32_t block, uint32_t tile, uint32_t k,
           uint32_t valid_cols, uint64_t first_example,
           const std::function<RowFilter(uint64_t)>& filter,
           const std::function<void(uint32_t first, uint32_t cols, float* out)>& score, TopK& out);

 private:
  TopKSelector selector_;
  DeviceArray<float> scores_;
  TopK block_top_;
};

}  // namespace nn
