// Index files (man nn-generate, INDEX FILES; DSSTNE's loadIndex and its unit test
// tst/unittests/TestNetCDFhelper.cpp): the valid 5-entry index from DSSTNE's TestNetCDFhelper
// loads; duplicates and malformed lines are rejected with file:line; saving is sorted by index
// and atomic; FeatureIndex lookups assign indices in first-seen order.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "data/data_test_util.h"
#include "data/text_examples.h"

namespace nn {
namespace {

using test::TempDir;
using test::write_file;

const char* kValidIndex =
    "110510\t26743\n121019\t26740\n121017\t26739\n106401\t26736\n104307\t26734\n";

void expect_load_error(const std::string& content, const std::string& fragment) {
  TempDir dir;
  const std::string path = dir.file("index");
  write_file(path, content);
  try {
    load_index(path);
    ADD_FAILURE() << "accepted: " << content;
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg << " lacks " << fragment;
  }
}

TEST(IndexFile, ValidFiveEntryIndexLoads) {
  TempDir dir;
  write_file(dir.file("index"), kValidIndex);
  const FeatureIndex idx = load_index(dir.file("index"));
  EXPECT_EQ(idx.find("110510"), 26743);
  EXPECT_EQ(idx.find("121019"), 26740);
  EXPECT_EQ(idx.find("121017"), 26739);
  EXPECT_EQ(idx.find("106401"), 26736);
  EXPECT_EQ(idx.find("104307"), 26734);
  EXPECT_EQ(idx.find("999"), -1);
  EXPECT_EQ(idx.size(), 26744u);  // indices need not start at 0; gaps are kept
  EXPECT_FALSE(idx.changed());
}

TEST(IndexFile, AppendedDuplicateEntryRejected) {
  expect_load_error(std::string(kValidIndex) + "110510\t26743\n", "duplicate label \"110510\"");
}

TEST(IndexFile, DuplicateLabelWithAnotherIndexRejected) {
  expect_load_error(std::string(kValidIndex) + "110510\t5\n", ":6: duplicate label");
}

TEST(IndexFile, DuplicateIndexRejected) {
  expect_load_error("a\t1\nb\t1\n", ":2: index 1 of \"b\" is already used by \"a\"");
}

TEST(IndexFile, MalformedLinesRejected) {
  expect_load_error("\t123\n", ":1: empty label");
  expect_load_error("ok\t1\n123\n", ":2: expected \"label<TAB>index\"");
  expect_load_error("110510\t123\t121017\n", "3 field(s)");
  expect_load_error("a\t-1\n", "not a non-negative integer");
  expect_load_error("a\t12x\n", "not a non-negative integer");
  expect_load_error("a\t\n", "not a non-negative integer");
  expect_load_error("a\t99999999999\n", "far beyond");
}

TEST(IndexFile, MissingFileIsError) {
  TempDir dir;
  EXPECT_THROW(load_index(dir.file("absent")), DataError);
}

TEST(IndexFile, ToleratesCrlfAndBlankLines) {
  TempDir dir;
  write_file(dir.file("index"), "a\t0\r\n\nb\t1\r\n");
  const FeatureIndex idx = load_index(dir.file("index"));
  EXPECT_EQ(idx.find("a"), 0);
  EXPECT_EQ(idx.find("b"), 1);
}

TEST(IndexFile, SaveSortsByIndexSkipsGapsAndRoundTrips) {
  TempDir dir;
  write_file(dir.file("in"), "z\t3\ny\t0\nx\t1\n");
  FeatureIndex idx = load_index(dir.file("in"));
  EXPECT_EQ(idx.lookup("new", true), 4);  // after the highest index, never into the gap
  save_index(dir.file("out"), idx);
  EXPECT_EQ(test::read_file(dir.file("out")), "y\t0\nx\t1\nz\t3\nnew\t4\n");
  const FeatureIndex back = load_index(dir.file("out"));
  EXPECT_EQ(back.find("new"), 4);
  EXPECT_EQ(back.find("z"), 3);
  // Atomic write: nothing but the two files in the directory.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            2);
}

TEST(IndexFile, SaveIntoMissingDirectoryIsIoError) {
  TempDir dir;
  FeatureIndex idx;
  idx.lookup("a", true);
  EXPECT_THROW(save_index(dir.file("no/such/dir/index"), idx), IoError);
}

TEST(FeatureIndexMap, LookupAddsOnlyWhenAllowed) {
  FeatureIndex idx;
  EXPECT_EQ(idx.lookup("a", true), 0);
  EXPECT_EQ(idx.lookup("b", true), 1);
  EXPECT_EQ(idx.lookup("a", true), 0);
  EXPECT_TRUE(idx.changed());
  idx.clear_changed();
  EXPECT_EQ(idx.lookup("c", false), -1);
  EXPECT_EQ(idx.lookup("", true), -1);
  EXPECT_FALSE(idx.changed());
  EXPECT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx.label(1), "b");
  EXPECT_THROW(idx.insert("a", 7, "here"), DataError);
}

}  // namespace
}  // namespace nn
