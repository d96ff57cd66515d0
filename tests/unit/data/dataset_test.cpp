// ExampleSet::validate, density and type names: each inconsistency a reader or producer could
// create must be caught with a message naming where, which array and which entry.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/error.h"
#include "data/data_test_util.h"

namespace nn {
namespace {

using test::make_dense;
using test::make_sparse;

// Expects validate() to throw a DataError whose message contains all fragments.
void expect_invalid(const ExampleSet& ds, std::initializer_list<std::string> fragments) {
  try {
    ds.validate("where.nc", "7");
    ADD_FAILURE() << "validate accepted an invalid dataset";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("where.nc: ", 0), 0u) << msg;
    for (const std::string& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "\"" << msg << "\" lacks \"" << f << "\"";
  }
}

ExampleSet good_sparse() {
  return make_sparse("s", 8, {{0, 3}, {}, {7}}, {{1, 2}, {}, {3}});
}

TEST(DataSetNames, TypeNames) {
  EXPECT_STREQ(to_string(DataType::UInt), "UInt");
  EXPECT_STREQ(to_string(DataType::Float), "Float");
  EXPECT_STREQ(to_string(DataType::UChar), "UChar");
  EXPECT_STREQ(to_string(DataType::Char), "Char");
  EXPECT_STREQ(to_string(static_cast<DataType>(42)), "Unknown");
}

TEST(DataSetDensity, SparseCountsStoredEntriesOverAllPositions) {
  const ExampleSet ds = good_sparse();  // 3 entries over 3 x 8 positions
  EXPECT_DOUBLE_EQ(ds.density(), 3.0 / 24.0);
  ExampleSet ix = make_sparse("i", 10, {{1, 2, 3, 4}});
  ix.attributes |= attr::Indexed;
  ix.examples = 5;
  ix.index = {0, 0, 0, 0, 0};
  EXPECT_DOUBLE_EQ(ix.density(), 0.4);  // per unique example, as DSSTNE computes it
}

TEST(DataSetValidate, AcceptsConsistentDatasets) {
  EXPECT_NO_THROW(good_sparse().validate("x"));
  EXPECT_NO_THROW(make_sparse("b", 4, {{0}, {3, 3}}).validate("x"));  // duplicates allowed
  EXPECT_NO_THROW(make_dense("d", DataType::Float, 2, 2, {1, 2, 3, 4}).validate("x"));
}

TEST(DataSetValidate, SparseProblems) {
  ExampleSet ds = good_sparse();
  ds.sparse_index[1] = 8;
  expect_invalid(ds, {"sparseIndex7", "entry 1", "8", "< 8"});

  ds = good_sparse();
  ds.sparse_end[2] = 4;
  expect_invalid(ds, {"sparseEnd7", "example 2", "4"});

  ds = good_sparse();
  ds.sparse_start[0] = 3;
  expect_invalid(ds, {"sparseEnd7", "example 0", "before its start"});

  ds = good_sparse();
  ds.sparse_start.pop_back();
  expect_invalid(ds, {"sparseStart7", "2 entries", "expected 3"});

  ds = good_sparse();
  ds.sparse_value[2] = std::nanf("");
  expect_invalid(ds, {"sparseData7", "entry 2", "finite"});

  ds = good_sparse();
  ds.sparse_value.pop_back();
  expect_invalid(ds, {"sparseData7"});

  ds = good_sparse();
  ds.attributes |= attr::Boolean;  // Boolean must not carry values
  expect_invalid(ds, {"sparseData7", "Boolean"});

  ds = good_sparse();
  ds.dense = {1};
  expect_invalid(ds, {"data7", "Sparse"});
}

TEST(DataSetValidate, DenseProblems) {
  ExampleSet ds = make_dense("d", DataType::Float, 3, 2, {1, 2, 3, 4, 5});
  expect_invalid(ds, {"data7", "5 entries", "expected 6"});

  ds = make_dense("d", DataType::Float, 3, 2, {1, 2, 3, 4, 5, INFINITY});
  expect_invalid(ds, {"data7", "entry 5"});

  ds = make_dense("c", DataType::UInt, 4, 3, {0, 4, 1});  // class id 4 >= width 4
  ds.attributes = attr::Boolean;
  expect_invalid(ds, {"data7", "example 1", "class id 4"});

  ds = make_dense("c", DataType::UInt, 4, 2, {0, 1.5f});
  ds.attributes = attr::Boolean;
  expect_invalid(ds, {"data7", "1.5"});
}

TEST(DataSetValidate, ShapeProblems) {
  ExampleSet ds = good_sparse();
  ds.dimensions = 4;
  expect_invalid(ds, {"dimensions7", "4"});

  ds = good_sparse();
  ds.height = 2;  // dimensions is still 1
  expect_invalid(ds, {"height7"});

  ds = good_sparse();
  ds.width = 0;
  expect_invalid(ds, {"width7"});

  ds = good_sparse();
  ds.type = static_cast<DataType>(10);
  expect_invalid(ds, {"dataType7", "10"});
}

TEST(DataSetValidate, IndexAndWeightProblems) {
  ExampleSet ds = good_sparse();
  ds.unique_examples = 2;  // not Indexed, so U must equal E
  ds.sparse_start.pop_back();
  ds.sparse_end.pop_back();
  expect_invalid(ds, {"uniqueExamplesDim7", "not Indexed"});

  ds = good_sparse();
  ds.attributes |= attr::Indexed;
  ds.examples = 4;
  ds.index = {0, 1, 3, 2};  // row 3 does not exist
  expect_invalid(ds, {"index7", "entry 2", "3"});

  ds.index = {0, 1, 2};
  expect_invalid(ds, {"index7", "3 entries", "expected 4"});

  ds = good_sparse();
  ds.attributes |= attr::Weighted;
  ds.example_weight = {1, 2};
  expect_invalid(ds, {"dataWeight7", "expected 3"});

  ds.example_weight = {1, NAN, 2};
  expect_invalid(ds, {"dataWeight7", "entry 1"});

  ds = good_sparse();
  ds.example_weight = {1, 1, 1};  // weights without the Weighted bit would be ignored silently
  expect_invalid(ds, {"dataWeight7", "not Weighted"});
}

TEST(DataSetValidate, PlainOverloadNamesArraysWithoutSuffix) {
  ExampleSet ds = good_sparse();
  ds.sparse_index[0] = 100;
  try {
    ds.validate("mem");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("mem: sparseIndex: entry 0"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nn
