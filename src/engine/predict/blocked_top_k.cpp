// Exact top-K in column blocks, and the backend selection it shares with the whole-layer path
// (see blocked_top_k.h).
#include "predict/blocked_top_k.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "layers/variational_layer.h"

namespace nn {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// True when entry (sa, ia) ranks before (sb, ib): a real entry before padding, then the larger
// score, ties to the lower unit (-0 equals +0, as in math::top_k_entry_key; selections hold no
// NaN).
inline bool ranks_before(float sa, uint32_t ia, float sb, uint32_t ib) {
  if (ia == kNone) return false;
  if (ib == kNone) return true;
  return sa > sb || (sa == sb && ia < ib);
}

}  // namespace

std::string blocked_scoring_obstacle(Network& net, const std::string& name) {
  Layer& layer = net.layer(name);
  if (net.model_parallel()) return "the network has layers split over processes";
  auto* fc = dynamic_cast<FullyConnectedLayer*>(&layer);
  // A Variational layer samples from its products; only the plain products can be sliced.
  if (!fc || dynamic_cast<VariationalLayer*>(&layer)) return "it is not a fully connected layer";
  for (const Layer* other : net.order()) {
    const auto& sources = other->sources();
    const auto& skips = other->skips();
    if (std::find(sources.begin(), sources.end(), &layer) != sources.end() ||
        std::find(skips.begin(), skips.end(), &layer) != skips.end())
      return "layer '" + other->name() + "' reads its activations";
  }
  return fc->column_forward_obstacle();
}

uint32_t score_block_columns(int64_t setting, uint32_t rows, uint32_t units) {
  if (setting < kScoreBlockAuto) throw ArgumentError("score block: must be positive");
  if (setting == kScoreBlockFull || units == 0) return 0;
  uint64_t block = uint64_t(setting);
  if (setting == kScoreBlockAuto) {
    if (uint64_t(rows) * units * sizeof(float) <= kBlockedScoringBytes) return 0;
    block = kDefaultScoreBlock;
  }
  return block >= units ? 0 : uint32_t(block);
}

int64_t parse_score_block(const std::string& text) {
  if (text == "auto") return kScoreBlockAuto;
  if (text == "full") return kScoreBlockFull;
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || used == 0 || value <= 0 || value > kNone)
    throw ArgumentError(
        "--score-block: expected 'auto', 'full' or a positive number of columns, got '" + text +
        "'");
  return value;
}

void TopKSelector::select(Backend& be, const float* scores, uint32_t rows, uint32_t col_first,
                          uint32_t cols, uint32_t k, uint32_t valid_cols, uint64_t first_example,
                          const std::function<RowFilter(uint64_t)>& filter, TopK& out,
                          uint32_t stride) {
  const size_t n = size_t(rows) * k;
  out.index.resize(n);
  out.score.resize(n);
  if (n == 0) return;
  // The rows' filters as CSR, restricted to the columns at hand and counted from col_first.
  ex_ptr_.assign(1, 0);
  sc_ptr_.assign(1, 0);
  ex_index_.clear();
  sc_index_.clear();
  sc_value_.clear();
  const uint64_t col_end = uint64_t(col_first) + cols;
  for (uint32_t r = 0; r < rows; ++r) {
    if (filter) {
      const RowFilter f = filter(first_example + r);
      const uint32_t* ex_end = f.exclude + f.excluded;
      for (const uint32_t* p = std::lower_bound(f.exclude, ex_end, col_first);
           p < ex_end && *p < col_end; ++p)
        ex_index_.push_back(*p - col_first);
      const uint32_t* sc_end = f.scale_index + f.scaled;
      for (const uint32_t* p = std::lower_bound(f.scale_index, sc_end, col_first);
           p < sc_end && *p < col_end; ++p) {
        sc_index_.push_back(*p - col_first);
        sc_value_.push_back(f.scale_value[p - f.scale_index]);
      }
    }
    if (ex_index_.size() > kNone || sc_index_.size() > kNone)
      throw DataError(
          "top-K filters: more than 2^32 - 1 entries in one minibatch; use a smaller "
          "minibatch");
    ex_ptr_.push_back(static_cast<uint32_t>(ex_index_.size()));
    sc_ptr_.push_back(static_cast<uint32_t>(sc_index_.size()));
  }
  TopKFilter tf;
  if (!ex_index_.empty()) {
    d_ex_ptr_.assign(be, ex_ptr_);
    d_ex_index_.assign(be, ex_index_);
    tf.exclude_ptr = d_ex_ptr_.data();
    tf.exclude_index = d_ex_index_.data();
  }
  if (!sc_index_.empty()) {
    d_sc_ptr_.assign(be, sc_ptr_);
    d_sc_index_.assign(be, sc_index_);
    d_sc_value_.assign(be, sc_value_);
    tf.scale_ptr = d_sc_ptr_.data();
    tf.scale_index = d_sc_index_.data();
    tf.scale_value = d_sc_value_.data();
  }
  d_top_index_.resize(be, n);
  d_top_score_.resize(be, n);
  // Padded rows: the row length is the stride, and nothing past the layer's columns ranks.
  be.top_k_filtered(scores, rows, stride ? stride : cols, std::min(valid_cols, cols), k, tf,
                    d_top_score_.data(), d_top_index_.data());
  be.download(out.index.data(), d_top_index_.data(), n * sizeof(uint32_t));
  be.download(out.score.data(), d_top_score_.data(), n * sizeof(float));
  if (col_first > 0)
    for (uint32_t& i : out.index)
      if (i != kNone) i += col_first;
}

void merge_block_top_k(TopK& running, const TopK& block, uint32_t rows, uint32_t k) {
  NN_CHECK(running.index.size() == size_t(rows) * k && block.index.size() == size_t(rows) * k,
           "top-K merge of selections of other sizes");
  std::vector<uint32_t> index(k);
  std::vector<float> score(k);
  for (uint32_t r = 0; r < rows; ++r) {
    uint32_t* ri = &running.index[size_t(r) * k];
    float* rs = &running.score[size_t(r) * k];
    const uint32_t* bi = &block.index[size_t(r) * k];
    const float* bs = &block.score[size_t(r) * k];
    // Most blocks have nothing better than the running row's worst entry: skip them at once.
    if (bi[0] == kNone || (ri[k - 1] != kNone && !ranks_before(bs[0], bi[0], rs[k - 1], ri[k - 1])))
      continue;
    uint32_t a = 0, b = 0;
    for (uint32_t j = 0; j < k; ++j) {
      const bool take_block = b < k && (a >= k || ranks_before(bs[b], bi[b], rs[a], ri[a]));
      if (take_block) {
        index[j] = bi[b];
        score[j] = bs[b++];
      } else {
        index[j] = ri[a];
        score[j] = rs[a++];
      }
    }
    std::copy(index.begin(), index.end(), ri);
    std::copy(score.begin(), score.end(), rs);
  }
}

void BlockedTopK::run(Backend& be, uint32_t rows, uint32_t units, uint32_t block, uint32_t tile,
                      uint32_t k, uint32_t valid_cols, uint64_t first_example,
                      const std::function<RowFilter(uint64_t)>& filter,
                      const std::function<void(uint32_t, uint32_t, float*)>& score, TopK& out) {
  NN_CHECK(block > 0, "a score block of no columns");
  const size_t n = size_t(rows) * k;
  out.index.assign(n, kNone);
  out.score.assign(n, -std::numeric_limits<float>::infinity());
  if (n == 0 || units == 0) return;
  const uint32_t valid = std::min(valid_cols, units);
  // Blocks start at multiples of the tile and end at one or at the layer's last unit, and a last
  // block narrower than a tile joins the one before: with the backend's gemm tile, every product
  // a block needs is then cut into the same tiles as the whole layer's
  // (Backend::gemm_column_tile), so the scores have its bits. Blocks end at the layer's last
  // unit, not at valid_cols, for that reason; the selection ignores the columns past valid_cols.
  tile = std::max<uint32_t>(1, tile);
  const uint64_t width = (uint64_t(block) + tile - 1) / tile * tile;
  const uint64_t widest = std::min<uint64_t>(units, width + tile - 1);
  scores_.resize(be, size_t(rows) * widest);
  for (uint64_t at = 0; at < valid;) {
    uint64_t end = std::min<uint64_t>(units, at + width);
    if (units - end < tile) end = units;
    const uint32_t first = uint32_t(at), cols = uint32_t(end - at);
    score(first, cols, scores_.data());
    const uint32_t valid_here = uint32_t(std::min<uint64_t>(cols, valid - at));
    selector_.select(be, scores_.data(), rows, first, cols, k, valid_here, first_example, filter,
                     block_top_);
    merge_block_top_k(out, block_top_, rows, k);
    at = end;
  }
}

}  // namespace nn
