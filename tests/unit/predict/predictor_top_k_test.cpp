// Predictor::run_top_k (ranking on the backend, k results per row read back) against run() plus
// the host-side top_k_rows on every score: no filter, exclusion lists, multipliers (applied to the
// downloaded scores for the host path), valid columns short of the layer, K above the valid
// columns, a range of examples and a short last batch.
#include <gtest/gtest.h>

#include <map>

#include "model/model_test_util.h"
#include "predict/predictor.h"

namespace nn::test {
namespace {

constexpr uint32_t kExamples = 11, kOut = 40;

Fixture make_fixture() {
  const std::string json = R"({"Name": "p", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in", "Sparse": true},
      {"Name": "H", "Kind": "Hidden", "N": 8, "Source": "In", "Activation": "Tanh"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "Source": "H", "DataSet": "out",
       "Activation": "Sigmoid"}]})";
  std::vector<ExampleSet> sets{sparse_set("in", 30, random_rows(3, kExamples, 30, 4)),
                               sparse_set("out", kOut, random_rows(4, kExamples, kOut, 3))};
  return Fixture(json, std::move(sets));
}

struct Lists {
  std::vector<uint32_t> items;
  std::vector<float> values;
};

TEST(PredictorTopK, MatchesRunPlusHostSelectionWithFilters) {
  Fixture f = make_fixture();
  std::map<uint64_t, Lists> filter;
  filter[0] = {{0, 1, 2, 3, 4, 5, 39}, {2.0f, 0.5f, 0.0f, -1.0f, 3.0f, 1.5f, 9.0f}};
  filter[4] = {{7, 7, 20}, {2.0f, 2.0f, 0.1f}};  // a column listed twice
  filter[9] = {{}, {}};
  for (uint32_t i = 0; i < kOut; ++i) filter[6].items.push_back(i), filter[6].values.push_back(1);
  struct Case {
    bool multiply;
    uint32_t k, valid;
    uint64_t begin, end;
  };
  for (Case c : {Case{false, 5, kOut, 0, kExamples}, Case{true, 5, kOut, 0, kExamples},
                 Case{false, 12, 10, 2, 9}, Case{true, kOut, kOut - 3, 1, kExamples}}) {
    Predictor predictor(*f.net, f.bound, /*minibatch=*/4);
    // Expected: every score to the host, filtered there.
    std::map<uint64_t, std::pair<std::vector<uint32_t>, std::vector<float>>> want, got;
    predictor.run(
        "Out",
        [&](uint64_t first, uint32_t rows, const float* scores) {
          std::vector<float> s(scores, scores + size_t(rows) * kOut);
          std::vector<std::vector<uint32_t>> ex(rows);
          for (uint32_t r = 0; r < rows; ++r) {
            auto it = filter.find(first + r);
            if (it == filter.end()) continue;
            if (!c.multiply) {
              ex[r] = it->second.items;
              continue;
            }
            for (size_t j = 0; j < it->second.items.size(); ++j)
              s[size_t(r) * kOut + it->second.items[j]] *= it->second.values[j];
          }
          TopK top;
          top_k_rows(
              s.data(), rows, kOut, c.valid, c.k, [&](uint32_t r) { return &ex[r]; }, top, 1);
          for (uint32_t r = 0; r < rows; ++r)
            want[first + r] = {
                std::vector<uint32_t>(top.index.begin() + r * c.k,
                                      top.index.begin() + (r + 1) * c.k),
                std::vector<float>(top.score.begin() + r * c.k, top.score.begin() + (r + 1) * c.k)};
        },
        c.begin, c.end);
    predictor.run_top_k(
        "Out", c.k, c.valid,
        [&](uint64_t e) {
          RowFilter rf;
          auto it = filter.find(e);
          if (it == filter.end()) return rf;
          if (c.multiply) {
            rf.scale_index = it->second.items.data();
            rf.scale_value = it->second.values.data();
            rf.scaled = it->second.items.size();
          } else {
            rf.exclude = it->second.items.data();
            rf.excluded = it->second.items.size();
          }
          return rf;
        },
        [&](uint64_t first, uint32_t rows, const TopK& top) {
          ASSERT_EQ(top.index.size(), size_t(rows) * c.k);
          for (uint32_t r = 0; r < rows; ++r)
            got[first + r] = {
                std::vector<uint32_t>(top.index.begin() + r * c.k,
                                      top.index.begin() + (r + 1) * c.k),
                std::vector<float>(top.score.begin() + r * c.k, top.score.begin() + (r + 1) * c.k)};
        },
        c.begin, c.end);
    ASSERT_EQ(got.size(), c.end - c.begin);
    EXPECT_EQ(got, want) << "multiply " << c.multiply << " k " << c.k << " valid " << c.valid;
  }
}

}  // namespace
}  // namespace nn::test
