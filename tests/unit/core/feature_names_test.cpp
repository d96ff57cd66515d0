// Feature names and their comparisons (core/feature_names.h): the checks a network makes on the
// names it is given, and the matches behind warm starts and --remap-index.
#include "core/feature_names.h"

#include <gtest/gtest.h>

namespace nn {
namespace {

using Names = std::vector<std::string>;

TEST(FeatureNames, ProblemsAreNamed) {
  EXPECT_EQ(feature_names_problem({"a", "b", "", ""}, 4), "");
  // Trailing unnamed entries (padding) do not count against the width.
  EXPECT_EQ(feature_names_problem({"a", "b", "", "", ""}, 2), "");
  EXPECT_EQ(feature_names_problem({"a", "b", "c"}, 2), "has 3 names, more than the 2 features");
  EXPECT_EQ(feature_names_problem({"a", "b", "a"}, 8), "entry 2 (\"a\") repeats entry 0");
  EXPECT_EQ(feature_names_problem({"a", "", "", "b"}, 8), "");  // gaps are not repeats
}

TEST(FeatureNames, EqualListsHaveNoDifference) {
  EXPECT_EQ(first_name_difference({"a", "b"}, {"a", "b"}, "x.idx"), "");
  EXPECT_EQ(first_name_difference({"a", "b", ""}, {"a", "b"}, "x.idx"), "");
  EXPECT_EQ(first_name_difference({"a", "b"}, {"a", "b", "", ""}, "x.idx"), "");
}

TEST(FeatureNames, FirstDifferenceSaysWhatChanged) {
  EXPECT_EQ(first_name_difference({"a", "b", "c"}, {"a", "c", "b"}, "x.idx"),
            "feature \"b\" is index 1 in the network but index 2 in x.idx");
  EXPECT_EQ(first_name_difference({"a", "b", "c"}, {"a", "b"}, "x.idx"),
            "feature \"c\" (index 2 in the network) is missing from x.idx");
  EXPECT_EQ(first_name_difference({"a", "b"}, {"a", "b", "d"}, "x.idx"),
            "x.idx has feature \"d\" (index 2), which the network does not know");
  EXPECT_EQ(first_name_difference({"a", "b"}, {"a", "z"}, "x.idx"),
            "feature \"b\" (index 1 in the network) is missing from x.idx");
  EXPECT_EQ(first_name_difference({"a", "", "c"}, {"a", "b", "c"}, "x.idx"),
            "x.idx has feature \"b\" (index 1), which the network does not know");
  EXPECT_EQ(first_name_difference({"a", "b", "c"}, {"a", "", "c"}, "x.idx"),
            "feature \"b\" (index 1 in the network) is missing from x.idx");
}

TEST(FeatureNames, MatchesAndCounts) {
  const Names from = {"a", "b", "c", "d"}, to = {"d", "x", "a", "", "b"};
  const std::vector<int64_t> match = match_names(from, to);
  EXPECT_EQ(match, (std::vector<int64_t>{3, -1, 0, -1, 1}));
  const NameMatchCounts c = count_matches(from, to, match);
  EXPECT_EQ(c.kept, 3u);
  EXPECT_EQ(c.added, 1u);    // x
  EXPECT_EQ(c.dropped, 1u);  // c
}

}  // namespace
}  // namespace nn
