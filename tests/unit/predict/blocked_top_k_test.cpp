// Blocked top-K (predict/blocked_top_k.h) against the whole-row selection, on every backend
// (fixture BackendTest: /cpu, and /cuda in CUDA builds, skipped without a device): random scores
// with many ties, -0, -inf and NaN, rows left empty (all NaN, or every column excluded),
// exclusion lists (duplicates, columns past the valid ones) and multipliers (a column listed
// twice, zero and negative factors), blocks of 1 column to more than the row, K larger than a
// block and larger than the row; the running merge's tie rule on a hand-made case; the setting's
// rule; and Predictor::run_top_k with a layer scored in blocks against the same predictor
// scoring it whole, scores bit for bit on the CPU and within 1e-5 on CUDA (exclusions and
// multipliers, a short last batch, valid columns short of the layer), plus the layers that cannot
// be blocked.
#include "predict/blocked_top_k.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <vector>

#include "backend/backend_test_util.h"
#include "core/error.h"
#include "core/random.h"
#include "model/model_test_util.h"
#include "predict/predictor.h"

namespace nn {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Per-row filter lists (ascending, global columns) as RowFilter views.
struct RowLists {
  std::vector<std::vector<uint32_t>> exclude, scale_index;
  std::vector<std::vector<float>> scale_value;
  explicit RowLists(uint32_t rows) : exclude(rows), scale_index(rows), scale_value(rows) {}
  RowFilter view(uint64_t r) const {
    RowFilter f;
    f.exclude = exclude[r].data();
    f.excluded = exclude[r].size();
    f.scale_index = scale_index[r].data();
    f.scale_value = scale_value[r].data();
    f.scaled = scale_index[r].size();
    return f;
  }
};

// Scores drawn from few values (so ties are everywhere), with -0, -inf and NaN among them; row 1
// all NaN, row 2 every column excluded (rows left empty).
std::vector<float> random_scores(Rng& rng, uint32_t rows, uint32_t cols) {
  std::vector<float> x(size_t(rows) * cols);
  for (float& v : x) {
    const uint64_t pick = rng.below(20);
    if (pick == 0)
      v = kNan;
    else if (pick == 1)
      v = -0.0f;
    else if (pick == 2)
      v = -kInf;
    else
      v = float(rng.below(7)) * 0.25f - 0.5f;
  }
  for (uint32_t c = 0; c < cols; ++c) x[size_t(1) * cols + c] = kNan;
  return x;
}

RowLists random_filters(Rng& rng, uint32_t rows, uint32_t cols, bool exclude, bool scale) {
  RowLists f(rows);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t c = 0; c < cols; ++c) {
      if (exclude && (r == 2 || rng.below(5) == 0)) {
        f.exclude[r].push_back(c);
        if (rng.below(4) == 0) f.exclude[r].push_back(c);  // duplicates are allowed
      }
      if (scale && rng.below(4) == 0) {
        const float factors[] = {2.0f, 0.5f, 0.0f, -1.0f, 1.5f};
        const int times = rng.below(3) == 0 ? 2 : 1;  // a column listed twice multiplies twice
        for (int t = 0; t < times; ++t) {
          f.scale_index[r].push_back(c);
          f.scale_value[r].push_back(factors[rng.below(5)]);
        }
      }
    }
  }
  return f;
}

class BlockedTopKTest : public test::BackendTest {};

TEST_P(BlockedTopKTest, EqualsTheWholeRowSelection) {
  auto backend = this->backend();
  Backend& be = *backend;
  Rng rng(17);
  const uint32_t rows = 9, cols = 70;
  const std::vector<float> x = random_scores(rng, rows, cols);
  const auto dx = test::to_device(be, x);
  struct Filters {
    bool exclude, scale;
  };
  int compared = 0;
  for (Filters fl :
       {Filters{false, false}, Filters{true, false}, Filters{false, true}, Filters{true, true}}) {
    const RowLists lists = random_filters(rng, rows, cols, fl.exclude, fl.scale);
    const auto filter = [&](uint64_t e) { return lists.view(e); };
    for (uint32_t valid : {cols, cols - 11}) {
      for (uint32_t k : {1u, 5u, 10u, cols + 3}) {
        TopK whole;
        TopKSelector selector;
        selector.select(be, dx.data(), rows, 0, cols, k, valid, 0, filter, whole);
        for (uint32_t block : {1u, 3u, 7u, 16u, 64u, cols - 1, cols, cols + 5}) {
          TopK blocked;
          BlockedTopK run;
          std::vector<float> part;
          run.run(
              be, rows, cols, block, /*tile=*/1, k, valid, 0, filter,
              [&](uint32_t first, uint32_t n, float* out) {
                ASSERT_LE(first + n, cols);
                part.resize(size_t(rows) * n);
                for (uint32_t r = 0; r < rows; ++r)
                  for (uint32_t c = 0; c < n; ++c)
                    part[size_t(r) * n + c] = x[size_t(r) * cols + first + c];
                be.upload(out, part.data(), part.size() * sizeof(float));
              },
              blocked);
          ASSERT_EQ(blocked.index, whole.index)
              << "exclude " << fl.exclude << " scale " << fl.scale << " valid " << valid << " k "
              << k << " block " << block;
          // Bits, so that -0 and +0 count as different scores.
          for (size_t i = 0; i < whole.score.size(); ++i)
            ASSERT_EQ(std::signbit(blocked.score[i]), std::signbit(whole.score[i])) << i;
          ASSERT_EQ(blocked.score, whole.score);
          ++compared;
        }
        // The empty rows stay empty; the other rows have candidates (not all padding).
        for (uint32_t j = 0; j < k; ++j) EXPECT_EQ(whole.index[size_t(1) * k + j], kNone);
        if (fl.exclude)
          for (uint32_t j = 0; j < k; ++j) EXPECT_EQ(whole.index[size_t(2) * k + j], kNone);
        EXPECT_NE(whole.index[0], kNone);
      }
    }
  }
  EXPECT_EQ(compared, 4 * 2 * 4 * 8);
}

NN_INSTANTIATE_ON_BACKENDS(BlockedTopKTest);

TEST(BlockedTopK, MergeKeepsTheLowerUnitOnTiesAndPadsShortRows) {
  // Row 0: a tie between the running entry (unit 2) and the block's (unit 10) at 5; row 1: the
  // block brings nothing; row 2: the running row is empty.
  TopK running{{2, 4, 0, kNone, 3, kNone}, {5.0f, 3.0f, 1.0f, -kInf, 0.0f, -kInf}};
  const TopK block{{10, 11, kNone, kNone, 12, 13}, {5.0f, 4.0f, -kInf, -kInf, -0.0f, -1.0f}};
  merge_block_top_k(running, block, 3, 2);
  EXPECT_EQ(running.index, (std::vector<uint32_t>{2, 10, 0, kNone, 3, 12}));
  EXPECT_EQ(running.score, (std::vector<float>{5.0f, 5.0f, 1.0f, -kInf, 0.0f, -0.0f}));
  EXPECT_TRUE(std::signbit(running.score[5]));
}

TEST(BlockedTopK, TheSettingDecidesTheBlockColumns) {
  // Automatic: blocks once rows x units x 4 bytes passes the threshold.
  const uint32_t wide = uint32_t(kBlockedScoringBytes / sizeof(float) / 1024) + 1;
  EXPECT_EQ(score_block_columns(kScoreBlockAuto, 1024, wide), kDefaultScoreBlock);
  EXPECT_EQ(score_block_columns(kScoreBlockAuto, 1024, wide - 1), 0u);
  EXPECT_EQ(score_block_columns(kScoreBlockAuto, 10000, 1000000), kDefaultScoreBlock);
  EXPECT_EQ(score_block_columns(kScoreBlockAuto, 100000, 8192), 0u);  // one block: the layer
  EXPECT_EQ(score_block_columns(kScoreBlockFull, 1024, 1000000), 0u);
  EXPECT_EQ(score_block_columns(300, 1, 1000), 300u);
  EXPECT_EQ(score_block_columns(1000, 1, 1000), 0u);  // one block is the whole layer
  EXPECT_EQ(parse_score_block("auto"), kScoreBlockAuto);
  EXPECT_EQ(parse_score_block("full"), kScoreBlockFull);
  EXPECT_EQ(parse_score_block("4096"), 4096);
  for (const char* bad : {"0", "-3", "12x", "", "99999999999"})
    EXPECT_THROW(parse_score_block(bad), ArgumentError) << bad;
}

// A network whose output layer is wide enough for several blocks.
test::Fixture make_fixture(const std::string& activation, std::unique_ptr<Backend> be,
                           uint32_t examples, uint32_t out) {
  const std::string json =
      R"({"Name": "p", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in", "Sparse": true},
      {"Name": "H", "Kind": "Hidden", "N": 24, "Source": "In", "Activation": "Tanh"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "Source": "H", "DataSet": "out",
       "Activation": ")" +
      activation + R"("}]})";
  std::vector<ExampleSet> sets{
      test::sparse_set("in", 50, test::random_rows(3, examples, 50, 5)),
      test::sparse_set("out", out, test::random_rows(4, examples, out, 3))};
  return test::Fixture(json, std::move(sets), 7, std::move(be));
}

using Rankings = std::map<uint64_t, std::pair<std::vector<uint32_t>, std::vector<float>>>;

Rankings rank(test::Fixture& f, uint32_t minibatch, ScoreBlocks blocks, uint32_t k, uint32_t valid,
              const std::function<RowFilter(uint64_t)>& filter) {
  Predictor predictor(*f.net, f.bound, minibatch, nullptr, std::move(blocks));
  Rankings got;
  predictor.run_top_k("Out", k, valid, filter, [&](uint64_t first, uint32_t rows, const TopK& top) {
    for (uint32_t r = 0; r < rows; ++r)
      got[first + r] = {
          std::vector<uint32_t>(top.index.begin() + r * k, top.index.begin() + (r + 1) * k),
          std::vector<float>(top.score.begin() + r * k, top.score.begin() + (r + 1) * k)};
  });
  return got;
}

// "" when equal, else the first difference (the whole maps would flood the log).
std::string first_difference(const Rankings& got, const Rankings& want) {
  if (got.size() != want.size()) return "examples " + std::to_string(got.size());
  for (const auto& [e, w] : want) {
    const auto& g = got.at(e);
    for (size_t j = 0; j < w.first.size(); ++j)
      if (g.first[j] != w.first[j] || g.second[j] != w.second[j] ||
          std::signbit(g.second[j]) != std::signbit(w.second[j])) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "example %llu rank %zu: unit %u score %.9g, want %u %.9g",
                      (unsigned long long)e, j, g.first[j], g.second[j], w.first[j], w.second[j]);
        return buf;
      }
  }
  return "";
}

// "" when `got` ranks as `want` does within relative tolerance `tol`: scores at each rank agree,
// and a unit may stand at another rank only beside a near-tie (cuBLAS promises no bits for a
// product over a column slice against the whole matrix, so scores move in the last bits).
std::string first_difference_within(const Rankings& got, const Rankings& want, float tol) {
  if (got.size() != want.size()) return "examples " + std::to_string(got.size());
  auto close = [tol](float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (a == b) return true;  // equal infinities too
    return std::fabs(a - b) <= tol * std::max(1.0f, std::fabs(b));
  };
  for (const auto& [e, w] : want) {
    const auto& g = got.at(e);
    for (size_t j = 0; j < w.first.size(); ++j) {
      bool ok = close(g.second[j], w.second[j]);
      if (ok && g.first[j] != w.first[j]) {
        // A swap: the wanted unit is elsewhere in the list with a score within the tolerance.
        ok = false;
        for (size_t i = 0; i < g.first.size(); ++i)
          if (g.first[i] == w.first[j] && close(g.second[i], w.second[j])) ok = true;
        ok = ok || w.first[j] == kNone;
      }
      if (!ok) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "example %llu rank %zu: unit %u score %.9g, want %u %.9g",
                      (unsigned long long)e, j, g.first[j], g.second[j], w.first[j], w.second[j]);
        return buf;
      }
    }
  }
  return "";
}

class BlockedPredictorTest : public test::BackendTest {};

TEST_P(BlockedPredictorTest, RunTopKInBlocksEqualsTheWholeLayer) {
  const uint32_t examples = 37, out = 2100;
  for (const char* activation : {"Sigmoid", "Linear"}) {
    test::Fixture f = make_fixture(activation, backend(), examples, out);
    Rng rng(5);
    const RowLists excl = random_filters(rng, examples, out, true, false);
    const RowLists mult = random_filters(rng, examples, out, false, true);
    for (const RowLists* lists : {static_cast<const RowLists*>(nullptr), &excl, &mult}) {
      std::function<RowFilter(uint64_t)> filter;
      if (lists) filter = [lists](uint64_t e) { return lists->view(e); };
      for (uint32_t k : {10u, 150u}) {
        const Rankings whole = rank(f, 16, {}, k, out - 5, filter);
        ASSERT_EQ(whole.size(), examples);
        // On the CPU backend blocks are whole gemm tiles (512 columns): 100 becomes 512 (4
        // blocks, the last taking in the 52 columns past 2048) and 1000 becomes 1024 (2 blocks).
        // Elsewhere they are as asked: 100 columns, 21 blocks.
        for (uint32_t block : {100u, 1000u}) {
          const Rankings blocked = rank(f, 16, ScoreBlocks{"Out", block}, k, out - 5, filter);
          // The CPU's gemm computes a block's columns as the whole product does (same tiles,
          // same order): bit for bit. cuBLAS may pick another kernel for a slice: within 1e-5.
          const std::string difference = backend()->name() == "cpu"
                                             ? first_difference(blocked, whole)
                                             : first_difference_within(blocked, whole, 1e-5f);
          EXPECT_EQ(difference, "")
              << activation << " k " << k << " block " << block
              << (lists == &excl ? " exclude" : "") << (lists == &mult ? " multiply" : "");
        }
      }
    }
  }
}

TEST_P(BlockedPredictorTest, OnlyPlainColumnwiseLayersAreBlocked) {
  test::Fixture soft = make_fixture("SoftMax", backend(), 5, 40);
  EXPECT_NE(blocked_scoring_obstacle(*soft.net, "Out"), "");
  EXPECT_THROW(Predictor(*soft.net, soft.bound, 4, nullptr, ScoreBlocks{"Out", 8}), ConfigError);
  EXPECT_NE(blocked_scoring_obstacle(*soft.net, "H"), "");  // Out reads it
  test::Fixture sig = make_fixture("Sigmoid", backend(), 5, 40);
  EXPECT_EQ(blocked_scoring_obstacle(*sig.net, "Out"), "");
  Predictor predictor(*sig.net, sig.bound, 4, nullptr, ScoreBlocks{"Out", 8});
  // Its scores are never held whole, so they cannot be handed over.
  EXPECT_THROW(predictor.run("Out", [](uint64_t, uint32_t, const float*) {}), ConfigError);
}

NN_INSTANTIATE_ON_BACKENDS(BlockedPredictorTest);

}  // namespace
}  // namespace nn
