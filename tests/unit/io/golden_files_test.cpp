// Golden dataset files (tests/data/netcdf): hand-written CDL texts, one per layout a DSSTNE writer
// produces or DSSTNE's reader accepts (docs/file-formats.md, "Dataset files"), with their
// ncgen-built .nc files.
// Every committed .nc is loaded and each field compared with values copied by hand from its .cdl;
// the loaded datasets are written back with our writer, the written layout is checked attribute by
// attribute against what DSSTNE's reader needs, and the file is read again. Broken files in bad/
// must fail with one exact message. Last, each .nc must still be what its .cdl describes.
#include <gtest/gtest.h>
#include <netcdf.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/data_test_util.h"
#include "io/netcdf_dataset.h"

namespace nn {
namespace {

using test::RawFile;
using test::TempDir;

const std::string kGoldenDir = std::string(NN_TEST_DATA_DIR) + "/netcdf";

std::string golden(const std::string& name) {
  return kGoldenDir + "/" + name + ".nc";
}

// Header fields of an expected dataset; the tests fill in shapes and arrays from the CDL.
ExampleSet expected(const std::string& name, DataType type, uint32_t attributes,
                    uint64_t examples) {
  ExampleSet ds;
  ds.name = name;
  ds.type = type;
  ds.attributes = attributes;
  ds.examples = ds.unique_examples = examples;
  return ds;
}

void expect_equal(const ExampleSet& got, const ExampleSet& want) {
  SCOPED_TRACE("dataset \"" + want.name + "\"");
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.type, want.type) << to_string(got.type) << " vs " << to_string(want.type);
  EXPECT_EQ(got.attributes, want.attributes);
  EXPECT_EQ(got.kind, want.kind);
  EXPECT_EQ(got.dimensions, want.dimensions);
  EXPECT_EQ(got.width, want.width);
  EXPECT_EQ(got.height, want.height);
  EXPECT_EQ(got.length, want.length);
  EXPECT_EQ(got.examples, want.examples);
  EXPECT_EQ(got.unique_examples, want.unique_examples);
  EXPECT_EQ(got.sparse_start, want.sparse_start);
  EXPECT_EQ(got.sparse_end, want.sparse_end);
  EXPECT_EQ(got.sparse_index, want.sparse_index);
  EXPECT_EQ(got.sparse_value, want.sparse_value);
  EXPECT_EQ(got.dense, want.dense);
  EXPECT_EQ(got.example_weight, want.example_weight);
  EXPECT_EQ(got.index, want.index);
}

// The NetCDF type of a dataset's values that DSSTNE's loader reads them from: netCDF-C++ converts
// any numeric type into the element type T, except T = char (Char), which it reads through the
// text API and which therefore needs NC_CHAR. The numeric choices are the engine's own
// (getNetCDFDataType, engine/NNTypes.cpp); UChar/RGB8 are bytes, RGB16 16-bit channels.
nc_type dsstne_value_type(DataType t) {
  switch (t) {
    case DataType::UInt:
      return NC_UINT;
    case DataType::Int:
      return NC_INT;
    case DataType::LLInt:
      return NC_INT64;
    case DataType::ULLInt:
      return NC_UINT64;
    case DataType::Float:
      return NC_FLOAT;
    case DataType::Double:
      return NC_DOUBLE;
    case DataType::RGB8:
    case DataType::UChar:
      return NC_UBYTE;
    case DataType::RGB16:
      return NC_USHORT;
    case DataType::Char:
      return NC_CHAR;
  }
  return NC_NAT;
}

// Values of a variable as floats, reading NC_CHAR bytes as signed 8-bit numbers.
std::vector<float> raw_values(const RawFile& f, const std::string& name) {
  if (f.var_type(name) != NC_CHAR) return f.var_float(name);
  int v = -1;
  size_t len = 0;
  EXPECT_EQ(nc_inq_varid(f.id(), name.c_str(), &v), NC_NOERR) << name;
  int dim = -1;
  nc_inq_vardimid(f.id(), v, &dim);
  nc_inq_dimlen(f.id(), dim, &len);
  std::vector<char> bytes(len);
  if (len) EXPECT_EQ(nc_get_var_text(f.id(), v, bytes.data()), NC_NOERR) << name;
  std::vector<float> out;
  for (char c : bytes) out.push_back(static_cast<signed char>(c));
  return out;
}

std::vector<unsigned long long> u64(const std::vector<uint64_t>& v) {
  return {v.begin(), v.end()};
}
std::vector<unsigned long long> u64(const std::vector<uint32_t>& v) {
  return {v.begin(), v.end()};
}

// The file our writer produced, checked with the raw netCDF API against the layout DSSTNE's
// reader needs (docs/file-formats.md, "Files we write"): `dataTypeN` with a capital T, uint
// attributes, dimension and variable names, 32-bit start/end/index as generateNetCDF writes them.
void expect_dsstne_layout(const std::string& path, const std::vector<ExampleSet>& sets) {
  RawFile f(path);
  int format = 0;
  nc_inq_format(f.id(), &format);
  EXPECT_EQ(format, NC_FORMAT_NETCDF4);
  EXPECT_EQ(f.att_type("datasets"), NC_UINT);
  EXPECT_EQ(f.att_uint("datasets"), sets.size());
  for (size_t n = 0; n < sets.size(); ++n) {
    const ExampleSet& ds = sets[n];
    const std::string s = std::to_string(n);
    SCOPED_TRACE("written dataset " + s);
    EXPECT_EQ(f.att_type("name" + s), NC_CHAR);
    EXPECT_EQ(f.att_text("name" + s), ds.name);
    for (const char* a : {"dataType", "attributes", "kind", "dimensions", "width"})
      EXPECT_EQ(f.att_type(a + s), NC_UINT) << a << s;
    EXPECT_FALSE(f.has_att("datatype" + s));  // DSSTNE's reader wants the capital T
    EXPECT_EQ(f.att_uint("dataType" + s), uint32_t(ds.type));
    EXPECT_EQ(f.att_uint("attributes" + s), ds.attributes);
    EXPECT_EQ(f.att_uint("kind" + s), uint32_t(ds.kind));
    EXPECT_EQ(f.att_uint("dimensions" + s), unsigned(ds.dimensions));
    EXPECT_EQ(f.att_uint("width" + s), ds.width);
    EXPECT_EQ(f.has_att("height" + s), ds.dimensions > 1);
    if (ds.dimensions > 1) EXPECT_EQ(f.att_uint("height" + s), ds.height);
    EXPECT_EQ(f.has_att("length" + s), ds.dimensions > 2);
    if (ds.dimensions > 2) EXPECT_EQ(f.att_uint("length" + s), ds.length);

    EXPECT_EQ(f.dim("examplesDim" + s), ds.examples);
    EXPECT_EQ(f.has_dim("uniqueExamplesDim" + s), ds.is_indexed());
    if (ds.is_indexed()) EXPECT_EQ(f.dim("uniqueExamplesDim" + s), ds.unique_examples);
    const std::string rows = (ds.is_indexed() ? "uniqueExamplesDim" : "examplesDim") + s;

    EXPECT_EQ(f.has_var("sparseStart" + s), ds.is_sparse());
    EXPECT_EQ(f.has_var("sparseEnd" + s), ds.is_sparse());
    EXPECT_EQ(f.has_var("sparseIndex" + s), ds.is_sparse());
    EXPECT_EQ(f.has_var("sparseData" + s), ds.is_sparse() && !ds.is_boolean());
    EXPECT_EQ(f.has_var("data" + s), !ds.is_sparse());
    if (ds.is_sparse()) {
      EXPECT_EQ(f.dim("sparseDataDim" + s), ds.nnz());
      for (const char* v : {"sparseStart", "sparseEnd"}) {
        EXPECT_EQ(f.var_type(v + s), NC_UINT) << v << s;
        EXPECT_EQ(f.var_dim(v + s), rows) << v << s;
      }
      EXPECT_EQ(f.var_u64("sparseStart" + s), u64(ds.sparse_start));
      EXPECT_EQ(f.var_u64("sparseEnd" + s), u64(ds.sparse_end));
      EXPECT_EQ(f.var_type("sparseIndex" + s), NC_UINT);
      EXPECT_EQ(f.var_dim("sparseIndex" + s), "sparseDataDim" + s);
      EXPECT_EQ(f.var_u64("sparseIndex" + s), u64(ds.sparse_index));
      if (!ds.is_boolean()) {
        EXPECT_EQ(f.var_type("sparseData" + s), dsstne_value_type(ds.type));
        EXPECT_EQ(f.var_dim("sparseData" + s), "sparseDataDim" + s);
        EXPECT_EQ(raw_values(f, "sparseData" + s), ds.sparse_value);
      }
    } else {
      EXPECT_EQ(f.dim("dataDim" + s), ds.dense.size());
      EXPECT_EQ(f.var_type("data" + s), dsstne_value_type(ds.type));
      EXPECT_EQ(f.var_dim("data" + s), "dataDim" + s);
      EXPECT_EQ(raw_values(f, "data" + s), ds.dense);
    }
    EXPECT_EQ(f.has_var("dataWeight" + s), ds.is_weighted());
    if (ds.is_weighted()) {
      EXPECT_EQ(f.var_type("dataWeight" + s), NC_FLOAT);
      EXPECT_EQ(f.var_dim("dataWeight" + s), "examplesDim" + s);
      EXPECT_EQ(f.var_float("dataWeight" + s), ds.example_weight);
    }
    EXPECT_EQ(f.has_var("index" + s), ds.is_indexed());
    if (ds.is_indexed()) {
      EXPECT_EQ(f.var_type("index" + s), NC_UINT);
      EXPECT_EQ(f.var_dim("index" + s), "examplesDim" + s);
      EXPECT_EQ(f.var_u64("index" + s), u64(ds.index));
    }
  }
}

// Loads a golden file, compares it with the hand-written expectation, writes it back with our
// writer, checks the written layout and reads it again.
void check_golden(const std::string& name, const std::vector<ExampleSet>& want) {
  SCOPED_TRACE(name);
  const std::vector<ExampleSet> got = read_datasets(golden(name));
  ASSERT_EQ(got.size(), want.size());
  for (size_t n = 0; n < want.size(); ++n) expect_equal(got[n], want[n]);

  TempDir dir;
  const std::string path = dir.file(name + ".nc");
  write_datasets(path, got);
  expect_dsstne_layout(path, want);
  const std::vector<ExampleSet> again = read_datasets(path);
  ASSERT_EQ(again.size(), want.size());
  for (size_t n = 0; n < want.size(); ++n) expect_equal(again[n], want[n]);
}

// ---- generateNetCDF (docs/file-formats.md, "Files from generateNetCDF") ----

TEST(GoldenNetcdfFiles, GenerateIndicator) {
  ExampleSet ds = expected("input", DataType::UInt, attr::Sparse | attr::Boolean, 3);
  ds.width = 128;
  ds.sparse_start = {0, 3, 6};
  ds.sparse_end = {3, 6, 9};
  ds.sparse_index = {0, 1, 2, 3, 1, 4, 5, 6, 7};
  check_golden("generate_indicator", {ds});

  RawFile f(golden("generate_indicator"));
  EXPECT_EQ(f.att_type("datasets"), NC_UINT);
  EXPECT_EQ(f.var_type("sparseStart0"), NC_UINT);
  EXPECT_FALSE(f.has_var("sparseData0"));
}

TEST(GoldenNetcdfFiles, GenerateAnalog) {
  ExampleSet ds = expected("ratings", DataType::Float, attr::Sparse, 3);
  ds.width = 128;
  ds.sparse_start = {0, 1, 2};
  ds.sparse_end = {1, 2, 4};
  ds.sparse_index = {0, 1, 2, 3};
  ds.sparse_value = {123, 234, 345, 456};
  check_golden("generate_analog", {ds});
}

// ---- sparse analog, one file per value type ----

// The shape shared by sparse_analog_<type>.cdl: 2 examples, width 8, indices {1, 6} and {0, 7}.
ExampleSet typed_analog(const std::string& name, DataType type, std::vector<float> values) {
  ExampleSet ds = expected(name, type, attr::Sparse, 2);
  ds.width = 8;
  ds.sparse_start = {0, 2};
  ds.sparse_end = {2, 4};
  ds.sparse_index = {1, 6, 0, 7};
  ds.sparse_value = std::move(values);
  return ds;
}

TEST(GoldenNetcdfFiles, SparseAnalogDouble) {
  // The reader converts to float: 0.1 and 0.001 become the nearest floats.
  check_golden("sparse_analog_double",
               {typed_analog("double", DataType::Double, {0.1f, -2.5f, 0.001f, 65504.25f})});
}

TEST(GoldenNetcdfFiles, SparseAnalogInt) {
  check_golden("sparse_analog_int",
               {typed_analog("int", DataType::Int, {-2147483648.0f, 5, -7, 2147483520.0f})});
}

TEST(GoldenNetcdfFiles, SparseAnalogUInt) {
  check_golden("sparse_analog_uint",
               {typed_analog("uint", DataType::UInt, {1, 4000000000.0f, 7, 0})});
}

TEST(GoldenNetcdfFiles, SparseAnalogCharIsText) {
  // Bytes 0xFF 0x80 0x7F 0x01 of an NC_CHAR variable are signed chars for DSSTNE (T = char).
  RawFile f(golden("sparse_analog_char"));
  EXPECT_EQ(f.var_type("sparseData0"), NC_CHAR);
  check_golden("sparse_analog_char", {typed_analog("char", DataType::Char, {-1, -128, 127, 1})});
}

TEST(GoldenNetcdfFiles, SparseAnalogUChar) {
  check_golden("sparse_analog_uchar", {typed_analog("uchar", DataType::UChar, {0, 128, 255, 17})});
}

TEST(GoldenNetcdfFiles, SparseAnalogRgb8) {
  check_golden("sparse_analog_rgb8", {typed_analog("rgb8", DataType::RGB8, {255, 0, 64, 192})});
}

TEST(GoldenNetcdfFiles, SparseAnalogLLInt) {
  check_golden("sparse_analog_llint", {typed_analog("llint", DataType::LLInt,
                                                    {-5000000000.0f, 3, 9007199254740992.0f, -1})});
}

TEST(GoldenNetcdfFiles, SparseAnalogULLInt) {
  check_golden(
      "sparse_analog_ullint",
      {typed_analog("ullint", DataType::ULLInt, {10000000000.0f, 0, 9223372036854775808.0f, 42})});
}

TEST(GoldenNetcdfFiles, SparseAnalogRgb16) {
  check_golden("sparse_analog_rgb16",
               {typed_analog("rgb16", DataType::RGB16, {65535, 0, 1000, 256})});
}

// ---- offsets and ranges ----

TEST(GoldenNetcdfFiles, SparseOffsets64) {
  RawFile f(golden("sparse_offsets64"));
  EXPECT_EQ(f.var_type("sparseStart0"), NC_UINT64);
  EXPECT_EQ(f.var_type("sparseEnd0"), NC_UINT64);
  ExampleSet ds = expected("wide", DataType::UInt, attr::Sparse | attr::Boolean, 3);
  ds.width = 256;
  ds.sparse_start = {0, 3, 3};
  ds.sparse_end = {3, 3, 4};  // example 1 is empty
  ds.sparse_index = {255, 0, 128, 17};
  check_golden("sparse_offsets64", {ds});  // written back as 32-bit, as generateNetCDF does
}

TEST(GoldenNetcdfFiles, SparseUnorderedRanges) {
  ExampleSet ds = expected("shuffled", DataType::Float, attr::Sparse, 3);
  ds.width = 10;
  ds.sparse_start = {5, 0, 2};
  ds.sparse_end = {7, 2, 4};
  ds.sparse_index = {9, 3, 3, 3, 0, 8, 1};
  ds.sparse_value = {1, 2, 3, 4, 9, 5, 6};
  check_golden("sparse_unordered_ranges", {ds});
}

// ---- DSSTNE engine writer (docs/file-formats.md, "Files from DSSTNE's other writers") ----

TEST(GoldenNetcdfFiles, EngineSparseAnalogLowerCaseDatatype) {
  RawFile f(golden("engine_sparse_analog"));
  EXPECT_TRUE(f.has_att("datatype0"));
  EXPECT_FALSE(f.has_att("dataType0"));
  EXPECT_EQ(f.var_type("sparseIndex0"), NC_UINT64);
  EXPECT_EQ(f.var_dim("sparseStart0"), "uniqueExamplesDim0");

  ExampleSet ds = expected("engine", DataType::Float, attr::Sparse, 3);
  ds.dimensions = 2;
  ds.width = 4;
  ds.height = 4;
  ds.sparse_start = {0, 2, 3};
  ds.sparse_end = {2, 3, 5};
  ds.sparse_index = {15, 2, 7, 0, 9};
  ds.sparse_value = {0.5f, -1.5f, 3, 0.25f, 8};
  check_golden("engine_sparse_analog", {ds});
}

TEST(GoldenNetcdfFiles, EngineSparseWeighted) {
  RawFile f(golden("engine_sparse_weighted"));
  EXPECT_EQ(f.var_dim("dataWeight0"), "uniqueExamplesDim0");
  ExampleSet ds =
      expected("engine_weighted", DataType::UInt, attr::Sparse | attr::Boolean | attr::Weighted, 2);
  ds.width = 4;
  ds.sparse_start = {0, 1};
  ds.sparse_end = {1, 3};
  ds.sparse_index = {3, 0, 2};
  ds.example_weight = {0.75f, 2};
  check_golden("engine_sparse_weighted", {ds});
}

// ---- dense ----

TEST(GoldenNetcdfFiles, DenseFloat1d) {
  ExampleSet ds = expected("features", DataType::Float, 0, 3);
  ds.width = 4;
  ds.dense = {0, 1.5f, -2, 0.25f, 10, 11, 12, 13, -0.5f, 0, 0, 1e-07f};
  check_golden("dense_float_1d", {ds});
}

TEST(GoldenNetcdfFiles, DenseUChar2dImage) {
  ExampleSet ds = expected("pixels", DataType::UChar, 0, 2);
  ds.kind = DataKind::Image;
  ds.dimensions = 2;
  ds.width = 3;
  ds.height = 2;
  ds.dense = {0, 1, 2, 253, 254, 255, 128, 64, 32, 16, 8, 4};
  check_golden("dense_uchar_2d", {ds});
}

TEST(GoldenNetcdfFiles, DenseDouble3d) {
  ExampleSet ds = expected("volume", DataType::Double, 0, 1);
  ds.dimensions = 3;
  ds.width = ds.height = ds.length = 2;
  ds.dense = {1, 2, 3, 4, -5, -6, 0.125f, 1048576};
  check_golden("dense_double_3d", {ds});
}

TEST(GoldenNetcdfFiles, DenseCharIsText) {
  ExampleSet ds = expected("signed", DataType::Char, 0, 2);
  ds.width = 3;
  ds.dense = {-128, -1, 0, 127, 64, -64};
  check_golden("dense_char_1d", {ds});
}

TEST(GoldenNetcdfFiles, DenseBooleanOneHotClassIds) {
  ExampleSet ds = expected("labels", DataType::UInt, attr::Boolean, 4);
  ds.width = 5;
  ds.dense = {4, 0, 2, 2};  // one class id per example, expanded to one-hot when batched
  check_golden("dense_boolean_onehot", {ds});
}

TEST(GoldenNetcdfFiles, CifarConverterImageAndLabels) {
  RawFile f(golden("cifar_dparse"));
  EXPECT_EQ(f.var_type("data0"), NC_UINT);  // UChar pixels declared uint by the converter

  ExampleSet input = expected("input", DataType::UChar, 0, 2);
  input.kind = DataKind::Image;
  input.dimensions = 3;
  input.width = 2;
  input.height = 2;
  input.length = 3;
  input.dense = {255, 254, 253, 252, 0,  1,  2,  3,  100, 101, 102, 103,
                 10,  20,  30,  40,  50, 60, 70, 80, 90,  200, 210, 220};
  ExampleSet output = expected("output", DataType::UInt, attr::Sparse | attr::Boolean, 2);
  output.width = 10;
  output.sparse_start = {0, 1};
  output.sparse_end = {1, 2};
  output.sparse_index = {6, 9};
  check_golden("cifar_dparse", {input, output});  // pixels written back as ubyte
}

// ---- Weighted, Indexed, SparseIgnoreZero ----

TEST(GoldenNetcdfFiles, SparseIndicatorWeighted) {
  ExampleSet ds =
      expected("clicks", DataType::UInt, attr::Sparse | attr::Boolean | attr::Weighted, 3);
  ds.width = 6;
  ds.sparse_start = {0, 2, 3};
  ds.sparse_end = {2, 3, 5};
  ds.sparse_index = {0, 5, 3, 1, 2};
  ds.example_weight = {0.5f, 2, 1.25f};
  check_golden("sparse_indicator_weighted", {ds});
}

TEST(GoldenNetcdfFiles, SparseAnalogWeighted) {
  ExampleSet ds = expected("ratings", DataType::Float, attr::Sparse | attr::Weighted, 2);
  ds.width = 4;
  ds.sparse_start = {0, 1};
  ds.sparse_end = {1, 3};
  ds.sparse_index = {2, 0, 3};
  ds.sparse_value = {4.5f, 1, 3};
  ds.example_weight = {0.25f, 0};
  check_golden("sparse_analog_weighted", {ds});
}

TEST(GoldenNetcdfFiles, SparseIndexed) {
  ExampleSet ds =
      expected("sessions", DataType::UInt, attr::Sparse | attr::Boolean | attr::Indexed, 5);
  ds.unique_examples = 2;
  ds.width = 8;
  ds.sparse_start = {0, 2};
  ds.sparse_end = {2, 3};
  ds.sparse_index = {1, 7, 4};
  ds.index = {1, 0, 0, 1, 1};
  check_golden("sparse_indexed", {ds});
}

TEST(GoldenNetcdfFiles, DenseIndexedWeighted) {
  ExampleSet ds = expected("profiles", DataType::Float, attr::Indexed | attr::Weighted, 3);
  ds.unique_examples = 2;
  ds.width = 3;
  ds.dense = {1, 2, 3, -4, -5, -6};
  ds.example_weight = {1, 0.5f, 2};
  ds.index = {1, 1, 0};
  check_golden("dense_indexed_weighted", {ds});
}

TEST(GoldenNetcdfFiles, SparseIgnoreZero) {
  ExampleSet ds = expected("observed", DataType::Float, attr::Sparse | attr::SparseIgnoreZero, 2);
  ds.width = 128;
  ds.sparse_start = {0, 2};
  ds.sparse_end = {2, 3};
  ds.sparse_index = {100, 5, 127};
  ds.sparse_value = {0, 5, 2.5f};
  check_golden("sparse_ignore_zero", {ds});
  EXPECT_TRUE(read_datasets(golden("sparse_ignore_zero")).at(0).sparse_ignore_zero());
}

// ---- several datasets in one file ----

TEST(GoldenNetcdfFiles, ThreeDatasetsOfDifferentKinds) {
  ExampleSet input = expected("input", DataType::UInt, attr::Sparse | attr::Boolean, 2);
  input.width = 128;
  input.sparse_start = {0, 1};
  input.sparse_end = {1, 3};
  input.sparse_index = {127, 0, 64};
  ExampleSet image = expected("image", DataType::UChar, 0, 2);
  image.kind = DataKind::Image;
  image.dimensions = 2;
  image.width = image.height = 2;
  image.dense = {1, 2, 3, 4, 250, 251, 252, 253};
  ExampleSet output = expected("output", DataType::Float, attr::Sparse | attr::Weighted, 2);
  output.width = 4;
  output.sparse_start = {0, 1};
  output.sparse_end = {1, 2};
  output.sparse_index = {3, 1};
  output.sparse_value = {0.5f, 1};
  output.example_weight = {3, 0.125f};
  check_golden("multi_dataset", {input, image, output});
}

TEST(GoldenNetcdfFiles, HelperWriterWithFeatureAndSampleNames) {
  // indToFeatureN, sparseTime1, samplesDim/samples are DSSTNE helper extras the reader ignores.
  ExampleSet input = expected("input", DataType::UInt, attr::Sparse | attr::Boolean, 2);
  input.width = 3;
  input.sparse_start = {0, 2};
  input.sparse_end = {2, 3};
  input.sparse_index = {0, 2, 1};
  ExampleSet output = expected("output", DataType::Float, attr::Sparse, 2);
  output.width = 2;
  output.sparse_start = {0, 1};
  output.sparse_end = {1, 2};
  output.sparse_index = {1, 0};
  output.sparse_value = {2, 0.5f};
  check_golden("helper_input_output", {input, output});
}

// ---- broken files ----

struct BadFile {
  const char* name;
  const char* message;  // what follows "<path>: "
};

void PrintTo(const BadFile& b, std::ostream* os) {
  *os << b.name;
}

const BadFile kBadFiles[] = {
    {"bad_dimensions", "dimensions0: is 4; expected 1, 2 or 3"},
    {"char_values_for_uchar",
     "sparseData0: is a text (NC_CHAR) variable, which only dataType Char (9) uses; dataType is "
     "UChar"},
    {"dense_boolean_class_out_of_range",
     "data0: example 1 has class id 5; expected an integer in [0, 5)"},
    {"dense_nan", "data0: entry 3 is nan; expected a finite value"},
    {"dense_wrong_data_dim", "dataDim0: is 5; expected 6 (examples x features)"},
    {"double_out_of_float_range", "sparseData0: holds values outside the float range"},
    {"engine_dense_no_data", "dataDim0: missing dimension"},
    {"float_offsets", "sparseStart0: has NetCDF type 5; expected an integer type"},
    {"index_beyond_unique", "index0: entry 2 is 2; expected < 2 (unique examples)"},
    {"missing_height", "height0: missing global attribute"},
    {"missing_weights", "dataWeight0: missing variable"},
    {"name_not_text", "name0: expected a text attribute, found NetCDF type 9"},
    {"negative_sparse_index", "sparseIndex0: holds negative or too large values for an index"},
    {"second_dataset_missing", "name1: missing global attribute"},
    {"sparse_dim_misnamed", "sparseDataDim0: missing dimension"},
    {"sparse_end_before_start", "sparseEnd0: example 1 ends at 1 before its start 2"},
    {"sparse_index_beyond_2d",
     "sparseIndex0: entry 2 is 8; expected < 8 (width x height x length)"},
};

class GoldenNetcdfBadFiles : public testing::TestWithParam<BadFile> {};

TEST_P(GoldenNetcdfBadFiles, FailsNamingFileAndVariable) {
  const std::string path = kGoldenDir + "/bad/" + GetParam().name + ".nc";
  try {
    read_datasets(path);
    ADD_FAILURE() << path << ": loaded without error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": " + GetParam().message);
  }
}

INSTANTIATE_TEST_SUITE_P(All, GoldenNetcdfBadFiles, testing::ValuesIn(kBadFiles),
                         [](const testing::TestParamInfo<BadFile>& info) {
                           return std::string(info.param.name);
                         });

// ---- the committed files against their CDL sources ----

// Sorted file names with this extension in a directory.
std::vector<std::string> files_with(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(GoldenNetcdfBadFiles, EveryBadFileHasAnExpectedMessage) {
  std::vector<std::string> listed;
  for (const BadFile& b : kBadFiles) listed.push_back(kGoldenDir + "/bad/" + b.name + ".nc");
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(files_with(kGoldenDir + "/bad", ".nc"), listed);
}

// Runs a shell command, returning its standard output; `status` gets the exit status.
std::string run(const std::string& command, int& status) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (!p) {
    status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

std::string quoted(const std::string& path) {
  return "'" + path + "'";  // test paths hold no single quotes
}

TEST(GoldenNetcdfFiles, CommittedFilesMatchTheirCdl) {
  if (std::system("command -v ncgen >/dev/null 2>&1 && command -v ncdump >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "ncgen/ncdump not installed (Debian package netcdf-bin): cannot compare the "
                    "committed .nc files with their .cdl sources";
  TempDir tmp;
  size_t checked = 0;
  for (const std::string dir : {kGoldenDir, kGoldenDir + "/bad"}) {
    const std::vector<std::string> cdls = files_with(dir, ".cdl");
    std::vector<std::string> expected_nc;
    for (const std::string& cdl : cdls) {
      SCOPED_TRACE(cdl);
      const std::filesystem::path stem = std::filesystem::path(cdl).stem();
      const std::string nc = dir + "/" + stem.string() + ".nc";
      expected_nc.push_back(nc);
      std::ifstream in(cdl);
      std::string first_line;
      std::getline(in, first_line);
      EXPECT_EQ(first_line.rfind("// ", 0), 0u) << "must start with a comment naming the writer";

      // Same base name in a fresh directory, so ncdump's "netcdf <name> {" line matches.
      const std::string fresh_dir = tmp.file(std::to_string(checked));
      std::filesystem::create_directory(fresh_dir);
      const std::string fresh = fresh_dir + "/" + stem.string() + ".nc";
      int status = 0;
      const std::string log =
          run("ncgen -k nc4 -o " + quoted(fresh) + " " + quoted(cdl) + " 2>&1", status);
      ASSERT_EQ(status, 0) << "ncgen failed: " << log;
      const std::string want = run("ncdump " + quoted(fresh) + " 2>&1", status);
      ASSERT_EQ(status, 0) << want;
      const std::string got = run("ncdump " + quoted(nc) + " 2>&1", status);
      ASSERT_EQ(status, 0) << "cannot dump the committed file (run regenerate.sh): " << got;
      EXPECT_EQ(got, want) << nc << " is stale: run tests/data/netcdf/regenerate.sh";
      EXPECT_EQ(run("ncdump -k " + quoted(nc), status), "netCDF-4\n");
      ++checked;
    }
    EXPECT_EQ(files_with(dir, ".nc"), expected_nc) << "every .nc needs its .cdl in " << dir;
  }
  EXPECT_GE(checked, 40u);
}

}  // namespace
}  // namespace nn
