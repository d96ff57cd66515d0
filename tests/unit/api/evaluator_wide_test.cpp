// Evaluator::top_k over an output layer too wide to score whole (a chunk's scores past
// predict/blocked_top_k.h's 64 MiB): scored in column blocks, its rankings and scores equal a
// selection over the whole layer's outputs() on the host, bit for bit, with and without
// exclusions, over a full chunk and a short last one; outputs() still works after it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "nn/nn.h"
#include "predict/blocked_top_k.h"

namespace nn::api {
namespace {

constexpr uint32_t kIn = 40, kOut = 70000, kRows = 300, kChunk = 256, kK = 10;

const char* kWide = R"({ "Name": "wide", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Tanh" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "Sigmoid" } ] })";

// The k best of each row of `scores` on the host: larger first, ties to the lower unit, NaN
// and excluded units left out, padding UINT32_MAX / -inf.
void reference(const std::vector<float>& scores, const std::vector<std::vector<uint32_t>>& excl,
               std::vector<uint32_t>& index, std::vector<float>& score) {
  index.assign(size_t(kRows) * kK, std::numeric_limits<uint32_t>::max());
  score.assign(index.size(), -std::numeric_limits<float>::infinity());
  std::vector<uint32_t> cand;
  for (uint32_t r = 0; r < kRows; ++r) {
    const float* s = &scores[size_t(r) * kOut];
    cand.clear();
    for (uint32_t c = 0; c < kOut; ++c)
      if (!std::isnan(s[c]) && !std::binary_search(excl[r].begin(), excl[r].end(), c))
        cand.push_back(c);
    const size_t take = std::min<size_t>(kK, cand.size());
    std::partial_sort(cand.begin(), cand.begin() + take, cand.end(), [s](uint32_t a, uint32_t b) {
      return s[a] > s[b] || (s[a] == s[b] && a < b);
    });
    for (size_t j = 0; j < take; ++j) {
      index[size_t(r) * kK + j] = cand[j];
      score[size_t(r) * kK + j] = s[cand[j]];
    }
  }
}

TEST(EvaluatorWide, TopKInColumnBlocksEqualsTheWholeLayer) {
  // The premise: a chunk of this layer is scored in blocks.
  ASSERT_GT(score_block_columns(kScoreBlockAuto, kChunk, kOut), 0u);
  auto m =
      Model::from_json(kWide, {{"input", {kIn, 1, 1, true}}, {"output", {kOut}}}, 5, {"cpu", 2});
  std::mt19937 rng(9);
  std::vector<uint64_t> row_ptr{0};
  std::vector<uint32_t> in_index;
  for (uint32_t r = 0; r < kRows; ++r) {
    for (uint32_t j = 0; j < kIn; ++j)
      if (rng() % 4 == 0) in_index.push_back(j);
    row_ptr.push_back(in_index.size());
  }
  const CsrInput x{row_ptr.data(), in_index.data(), nullptr, kRows, kIn};
  Evaluator ev(m, kChunk);
  std::vector<float> scores(size_t(kRows) * kOut);
  ev.outputs(x, "Output", scores.data());
  // Exclusions: each row's 5 best units and a few random ones (unsorted, as callers give them).
  std::vector<std::vector<uint32_t>> none(kRows), excl(kRows);
  std::vector<uint64_t> ex_ptr{0};
  std::vector<uint32_t> ex_index;
  {
    std::vector<uint32_t> idx;
    std::vector<float> sc;
    reference(scores, none, idx, sc);
    for (uint32_t r = 0; r < kRows; ++r) {
      for (uint32_t j = 0; j < 5; ++j) excl[r].push_back(idx[size_t(r) * kK + j]);
      for (int j = 0; j < 3; ++j) excl[r].push_back(uint32_t(rng() % kOut));
      ex_index.insert(ex_index.end(), excl[r].rbegin(), excl[r].rend());
      ex_ptr.push_back(ex_index.size());
      std::sort(excl[r].begin(), excl[r].end());
    }
  }
  const Exclusion exclusion{ex_ptr.data(), ex_index.data(), kRows};
  for (const bool with_exclusions : {false, true}) {
    std::vector<uint32_t> want_i, got_i(size_t(kRows) * kK);
    std::vector<float> want_s, got_s(got_i.size());
    reference(scores, with_exclusions ? excl : none, want_i, want_s);
    ev.top_k(x, kK, "Output", with_exclusions ? &exclusion : nullptr, got_i.data(), got_s.data());
    EXPECT_EQ(got_i, want_i) << "exclusions " << with_exclusions;
    EXPECT_EQ(std::memcmp(got_s.data(), want_s.data(), got_s.size() * sizeof(float)), 0)
        << "exclusions " << with_exclusions;
  }
  // The whole layer again after blocked scoring left it without buffers.
  std::vector<float> again(scores.size());
  ev.outputs(x, "Output", again.data());
  EXPECT_EQ(again, scores);
}

}  // namespace
}  // namespace nn::api
