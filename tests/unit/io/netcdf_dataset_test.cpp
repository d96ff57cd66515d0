// read_datasets / write_datasets: round trips of every dataset flavour, files written by other
// DSSTNE writers (lower-case datatypeN, 64-bit offsets, classic format, other integer types),
// and the errors for broken files, which must name the file and the variable.
#include "io/netcdf_dataset.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "data/data_test_util.h"

namespace nn {
namespace {

using test::make_dense;
using test::make_sparse;
using test::RawFile;
using test::TempDir;

void expect_same(const ExampleSet& a, const ExampleSet& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.attributes, b.attributes);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.dimensions, b.dimensions);
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.length, b.length);
  EXPECT_EQ(a.examples, b.examples);
  EXPECT_EQ(a.unique_examples, b.unique_examples);
  EXPECT_EQ(a.sparse_start, b.sparse_start);
  EXPECT_EQ(a.sparse_end, b.sparse_end);
  EXPECT_EQ(a.sparse_index, b.sparse_index);
  EXPECT_EQ(a.sparse_value, b.sparse_value);
  EXPECT_EQ(a.dense, b.dense);
  EXPECT_EQ(a.example_weight, b.example_weight);
  EXPECT_EQ(a.index, b.index);
}

ExampleSet round_trip(const ExampleSet& ds, const TempDir& dir) {
  const std::string path = dir.file("rt.nc");
  write_datasets(path, {ds});
  std::vector<ExampleSet> back = read_datasets(path);
  EXPECT_EQ(back.size(), 1u);
  return back.empty() ? ExampleSet{} : back[0];
}

TEST(NetcdfRoundTrip, SparseIndicator) {
  TempDir dir;
  const ExampleSet ds = make_sparse("input", 256, {{0, 5, 255}, {}, {7, 7}});
  expect_same(round_trip(ds, dir), ds);
  RawFile f(dir.file("rt.nc"));
  EXPECT_FALSE(f.has_var("sparseData0"));
}

TEST(NetcdfRoundTrip, SparseAnalog) {
  TempDir dir;
  const ExampleSet ds = make_sparse("ratings", 128, {{3, 1}, {127}}, {{0.25f, -4.5f}, {1e-7f}});
  expect_same(round_trip(ds, dir), ds);
}

TEST(NetcdfRoundTrip, SparseWithoutAnyEntries) {
  // Every sample without features: a zero-length entry dimension must still read back.
  TempDir dir;
  const ExampleSet ds = make_sparse("empty", 128, {{}, {}});
  expect_same(round_trip(ds, dir), ds);
}

TEST(NetcdfRoundTrip, DenseFloatTwoDimensional) {
  TempDir dir;
  ExampleSet ds =
      make_dense("img", DataType::Float, 3, 2, {0.5f, 1, 2, 3, 4, 5, -1, -2, -3, -4, -5, 1e30f});
  ds.dimensions = 2;
  ds.height = 2;
  ds.kind = DataKind::Image;
  expect_same(round_trip(ds, dir), ds);
  RawFile f(dir.file("rt.nc"));
  EXPECT_EQ(f.att_uint("height0"), 2u);
  EXPECT_EQ(f.dim("dataDim0"), 12u);
  EXPECT_EQ(f.var_type("data0"), NC_FLOAT);
}

TEST(NetcdfRoundTrip, DenseThreeDimensional) {
  TempDir dir;
  ExampleSet ds = make_dense("vol", DataType::Double, 2, 1, std::vector<float>(2 * 2 * 3, 1.5f));
  ds.dimensions = 3;
  ds.height = 2;
  ds.length = 3;
  expect_same(round_trip(ds, dir), ds);
}

TEST(NetcdfRoundTrip, DenseUInt8StoredAsBytes) {
  TempDir dir;
  const ExampleSet ds = make_dense("pixels", DataType::UChar, 4, 2, {0, 1, 128, 255, 7, 0, 0, 200});
  expect_same(round_trip(ds, dir), ds);
  RawFile f(dir.file("rt.nc"));
  EXPECT_EQ(f.var_type("data0"), NC_UBYTE);
  EXPECT_EQ(f.att_uint("dataType0"), 8u);
}

TEST(NetcdfRoundTrip, DenseBooleanClassIds) {
  TempDir dir;
  ExampleSet ds = make_dense("labels", DataType::UInt, 10, 3, {2, 0, 9});
  ds.attributes = attr::Boolean;
  expect_same(round_trip(ds, dir), ds);
  RawFile f(dir.file("rt.nc"));
  EXPECT_EQ(f.dim("dataDim0"), 3u);  // one class id per example, not 3 x 10
}

TEST(NetcdfRoundTrip, Weighted) {
  TempDir dir;
  ExampleSet ds = make_sparse("w", 16, {{1}, {2, 3}, {4}}, {{1}, {2, 3}, {4}});
  ds.attributes |= attr::Weighted;
  ds.example_weight = {0.5f, 2.0f, 1.0f};
  expect_same(round_trip(ds, dir), ds);
  RawFile f(dir.file("rt.nc"));
  EXPECT_EQ(f.var_dim("dataWeight0"), "examplesDim0");
}

TEST(NetcdfRoundTrip, IndexedSparse) {
  TempDir dir;
  ExampleSet ds = make_sparse("ix", 8, {{1, 2}, {7}});
  ds.attributes |= attr::Indexed;
  ds.examples = 4;
  ds.index = {1, 0, 1, 1};
  expect_same(round_trip(ds, dir), ds);
  RawFile f(dir.file("rt.nc"));
  EXPECT_EQ(f.dim("uniqueExamplesDim0"), 2u);
  EXPECT_EQ(f.dim("examplesDim0"), 4u);
  EXPECT_EQ(f.var_dim("sparseStart0"), "uniqueExamplesDim0");
  EXPECT_EQ(f.var_dim("index0"), "examplesDim0");
}

TEST(NetcdfRoundTrip, IndexedWeightedDense) {
  TempDir dir;
  ExampleSet ds = make_dense("d", DataType::Float, 2, 3, {1, 2, 3, 4, 5, 6});
  ds.attributes = attr::Indexed | attr::Weighted;
  ds.examples = 5;
  ds.index = {2, 2, 0, 1, 0};
  ds.example_weight = {1, 2, 3, 4, 5};
  expect_same(round_trip(ds, dir), ds);
}

TEST(NetcdfRoundTrip, SeveralDatasetsInOneFile) {
  TempDir dir;
  const ExampleSet in = make_sparse("input", 128, {{1}, {2}});
  const ExampleSet out = make_sparse("output", 256, {{200}, {3}}, {{1}, {2}});
  write_datasets(dir.file("two.nc"), {in, out});
  const std::vector<ExampleSet> back = read_datasets(dir.file("two.nc"));
  ASSERT_EQ(back.size(), 2u);
  expect_same(back[0], in);
  expect_same(back[1], out);
  RawFile f(dir.file("two.nc"));
  EXPECT_EQ(f.att_uint("datasets"), 2u);
  EXPECT_EQ(f.att_text("name1"), "output");
}

// ---- files from other writers ----

// Minimal raw writer for hand-made files.
class RawWriter {
 public:
  explicit RawWriter(const std::string& path, int format = NC_NETCDF4) {
    EXPECT_EQ(nc_create(path.c_str(), NC_CLOBBER | format, &id_), NC_NOERR);
  }
  ~RawWriter() {
    if (id_ >= 0) nc_close(id_);
  }
  RawWriter& uint_att(const std::string& name, unsigned v, nc_type type = NC_UINT) {
    const long long x = v;
    EXPECT_EQ(nc_put_att_longlong(id_, NC_GLOBAL, name.c_str(), type, 1, &x), NC_NOERR) << name;
    return *this;
  }
  RawWriter& text_att(const std::string& name, const std::string& v) {
    EXPECT_EQ(nc_put_att_text(id_, NC_GLOBAL, name.c_str(), v.size(), v.data()), NC_NOERR);
    return *this;
  }
  int dim(const std::string& name, size_t len) {
    int d = -1;
    EXPECT_EQ(nc_def_dim(id_, name.c_str(), len, &d), NC_NOERR) << name;
    return d;
  }
  // Defines a 1-D variable over `dim` and records its values for close().
  RawWriter& var(const std::string& name, nc_type type, int dim, std::vector<double> values) {
    int v = -1;
    EXPECT_EQ(nc_def_var(id_, name.c_str(), type, 1, &dim, &v), NC_NOERR) << name;
    pending_.push_back({v, std::move(values)});
    return *this;
  }
  void close() {
    nc_enddef(id_);
    for (auto& [v, values] : pending_)
      if (!values.empty()) nc_put_var_double(id_, v, values.data());
    nc_close(id_);
    id_ = -1;
  }

 private:
  int id_ = -1;
  std::vector<std::pair<int, std::vector<double>>> pending_;
};

// A 2-example sparse analog dataset of width 10; `skip` leaves one item out, `bad_index`
// replaces the last index, `bad_value` the last value.
void write_handmade(const std::string& path, const std::string& skip = "", double bad_index = 4,
                    double bad_value = 2.5) {
  RawWriter w(path);
  w.uint_att("datasets", 1).text_att("name0", "hand");
  if (skip != "dataType0") w.uint_att("dataType0", 4);
  w.uint_att("attributes0", 1).uint_att("dimensions0", 1);
  if (skip != "width0") w.uint_att("width0", 10);
  const int e = w.dim("examplesDim0", 2), n = w.dim("sparseDataDim0", 3);
  w.var("sparseStart0", NC_UINT, e, {0, 1});
  if (skip != "sparseEnd0") w.var("sparseEnd0", NC_UINT, e, {1, 3});
  w.var("sparseIndex0", NC_UINT, n, {9, 0, bad_index});
  if (skip != "sparseData0") w.var("sparseData0", NC_FLOAT, n, {0.5, 1.5, bad_value});
  w.close();
}

TEST(NetcdfRead, HandMadeFileLoads) {
  TempDir dir;
  write_handmade(dir.file("h.nc"));
  const ExampleSet ds = read_datasets(dir.file("h.nc")).at(0);
  EXPECT_EQ(ds.name, "hand");
  EXPECT_EQ(ds.sparse_index, (std::vector<uint32_t>{9, 0, 4}));
  EXPECT_EQ(ds.sparse_value, (std::vector<float>{0.5f, 1.5f, 2.5f}));
  EXPECT_EQ(ds.sparse_end, (std::vector<uint64_t>{1, 3}));
}

TEST(NetcdfRead, EngineQuirkLowerCaseDatatypeAnd64BitOffsets) {
  TempDir dir;
  const std::string path = dir.file("engine.nc");
  RawWriter w(path);
  w.uint_att("datasets", 1).text_att("name0", "engine");
  w.uint_att("datatype0", 4).uint_att("attributes0", 1 | 128).uint_att("dimensions0", 1);
  w.uint_att("width0", 1000).uint_att("kind0", 0);
  const int e = w.dim("examplesDim0", 2), n = w.dim("sparseDataDim0", 3);
  w.dim("uniqueExamplesDim0", 2);
  w.var("sparseStart0", NC_UINT64, e, {0, 2});
  w.var("sparseEnd0", NC_INT64, e, {2, 3});
  w.var("sparseIndex0", NC_UINT64, n, {999, 0, 500});
  w.var("sparseData0", NC_DOUBLE, n, {1.25, -2, 3});
  w.var("dataWeight0", NC_FLOAT, e, {0.5, 1});
  w.close();

  const ExampleSet ds = read_datasets(path).at(0);
  EXPECT_EQ(ds.type, DataType::Float);
  EXPECT_TRUE(ds.is_weighted());
  EXPECT_EQ(ds.sparse_start, (std::vector<uint64_t>{0, 2}));
  EXPECT_EQ(ds.sparse_end, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(ds.sparse_index, (std::vector<uint32_t>{999, 0, 500}));
  EXPECT_EQ(ds.sparse_value, (std::vector<float>{1.25f, -2.0f, 3.0f}));
  EXPECT_EQ(ds.example_weight, (std::vector<float>{0.5f, 1.0f}));
}

TEST(NetcdfRead, ClassicFormatWithSignedIntegers) {
  // Older files (netCDF-3, no unsigned types) store ints; attributes may be int too.
  TempDir dir;
  const std::string path = dir.file("classic.nc");
  RawWriter w(path, /*format=*/0);  // netCDF-3 classic
  w.uint_att("datasets", 1, NC_INT).text_att("name0", "old");
  w.uint_att("dataType0", 0, NC_INT).uint_att("attributes0", 3, NC_INT);
  w.uint_att("dimensions0", 1, NC_SHORT).uint_att("width0", 4, NC_INT);
  const int e = w.dim("examplesDim0", 1), n = w.dim("sparseDataDim0", 2);
  w.var("sparseStart0", NC_INT, e, {0}).var("sparseEnd0", NC_INT, e, {2});
  w.var("sparseIndex0", NC_SHORT, n, {3, 1});
  w.close();
  const ExampleSet ds = read_datasets(path).at(0);
  EXPECT_TRUE(ds.is_boolean());
  EXPECT_EQ(ds.sparse_index, (std::vector<uint32_t>{3, 1}));
}

// ---- errors ----

// Runs fn, expecting a DataError whose message contains every fragment.
template <typename Fn>
void expect_data_error(Fn fn, std::initializer_list<std::string> fragments) {
  try {
    fn();
    ADD_FAILURE() << "no DataError thrown";
  } catch (const DataError& e) {
    for (const std::string& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
          << "message \"" << e.what() << "\" lacks \"" << f << "\"";
  }
}

TEST(NetcdfReadErrors, MissingFile) {
  TempDir dir;
  const std::string path = dir.file("nope.nc");
  expect_data_error([&] { read_datasets(path); }, {path, "not found"});
}

TEST(NetcdfReadErrors, TextFileIsNotNetcdf) {
  TempDir dir;
  const std::string path = dir.file("notes.nc");
  test::write_file(path, "this is not a NetCDF file\n");
  expect_data_error([&] { read_datasets(path); }, {path, "NetCDF"});
}

TEST(NetcdfReadErrors, TruncatedFile) {
  TempDir dir;
  const std::string path = dir.file("cut.nc");
  write_datasets(path, {make_sparse("x", 128, std::vector<std::vector<uint32_t>>(500, {1, 2}))});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  expect_data_error([&] { read_datasets(path); }, {path});
}

TEST(NetcdfReadErrors, IndexBeyondWidth) {
  TempDir dir;
  const std::string path = dir.file("wide.nc");
  write_handmade(path, "", /*bad_index=*/10);
  expect_data_error([&] { read_datasets(path); }, {path, "sparseIndex0", "10"});
}

TEST(NetcdfReadErrors, NaNValue) {
  TempDir dir;
  const std::string path = dir.file("nan.nc");
  write_handmade(path, "", 4, std::nan(""));
  expect_data_error([&] { read_datasets(path); }, {path, "sparseData0", "finite"});
}

TEST(NetcdfReadErrors, InfiniteValue) {
  TempDir dir;
  const std::string path = dir.file("inf.nc");
  write_handmade(path, "", 4, std::numeric_limits<double>::infinity());
  expect_data_error([&] { read_datasets(path); }, {path, "sparseData0"});
}

TEST(NetcdfReadErrors, MissingVariable) {
  TempDir dir;
  const std::string path = dir.file("novar.nc");
  write_handmade(path, "sparseEnd0");
  expect_data_error([&] { read_datasets(path); }, {path, "sparseEnd0", "missing variable"});
  write_handmade(path, "sparseData0");
  expect_data_error([&] { read_datasets(path); }, {path, "sparseData0", "missing variable"});
}

TEST(NetcdfReadErrors, MissingAttribute) {
  TempDir dir;
  const std::string path = dir.file("noatt.nc");
  write_handmade(path, "width0");
  expect_data_error([&] { read_datasets(path); }, {path, "width0", "missing"});
  write_handmade(path, "dataType0");
  expect_data_error([&] { read_datasets(path); }, {path, "dataType0", "missing"});
}

TEST(NetcdfReadErrors, WrongVariableLength) {
  TempDir dir;
  const std::string path = dir.file("len.nc");
  RawWriter w(path);
  w.uint_att("datasets", 1).text_att("name0", "x").uint_att("dataType0", 0);
  w.uint_att("attributes0", 3).uint_att("dimensions0", 1).uint_att("width0", 8);
  const int e = w.dim("examplesDim0", 3), n = w.dim("sparseDataDim0", 2);
  w.var("sparseStart0", NC_UINT, n, {0, 1}).var("sparseEnd0", NC_UINT, e, {1, 2, 5});
  w.var("sparseIndex0", NC_UINT, n, {1, 2});
  w.close();
  expect_data_error([&] { read_datasets(path); }, {path, "sparseStart0", "examplesDim0"});
}

TEST(NetcdfReadErrors, EndBeyondStoredEntries) {
  TempDir dir;
  const std::string path = dir.file("end.nc");
  RawWriter w(path);
  w.uint_att("datasets", 1).text_att("name0", "x").uint_att("dataType0", 0);
  w.uint_att("attributes0", 3).uint_att("dimensions0", 1).uint_att("width0", 8);
  const int e = w.dim("examplesDim0", 2), n = w.dim("sparseDataDim0", 2);
  w.var("sparseStart0", NC_UINT, e, {0, 1}).var("sparseEnd0", NC_UINT, e, {1, 3});
  w.var("sparseIndex0", NC_UINT, n, {1, 2});
  w.close();
  expect_data_error([&] { read_datasets(path); }, {path, "sparseEnd0", "example 1"});
}

TEST(NetcdfReadErrors, BadDimensionsAndType) {
  TempDir dir;
  const std::string path = dir.file("dims.nc");
  RawWriter w(path);
  w.uint_att("datasets", 1).text_att("name0", "x").uint_att("dataType0", 12);
  w.close();
  expect_data_error([&] { read_datasets(path); }, {path, "dataType0", "12"});
}

// ---- writing ----

TEST(NetcdfWrite, InvalidDatasetLeavesNoFile) {
  TempDir dir;
  const std::string path = dir.file("bad.nc");
  ExampleSet ds = make_sparse("x", 4, {{1, 9}});  // index 9 >= width 4
  expect_data_error([&] { write_datasets(path, {ds}); }, {path, "sparseIndex0"});
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(NetcdfWrite, FailureKeepsExistingFile) {
  TempDir dir;
  const std::string path = dir.file("keep.nc");
  const ExampleSet good = make_sparse("good", 128, {{1}});
  write_datasets(path, {good});
  ExampleSet bad = make_dense("bad", DataType::UChar, 2, 1, {1.5f, 300});
  EXPECT_THROW(write_datasets(path, {bad}), DataError);  // 1.5 is not a byte
  expect_same(read_datasets(path).at(0), good);
}

TEST(NetcdfWrite, UnwritableDirectoryIsIoError) {
  TempDir dir;
  const std::string path = dir.file("missing/dir/out.nc");
  EXPECT_THROW(write_datasets(path, {make_sparse("x", 128, {{1}})}), IoError);
}

TEST(NetcdfWrite, RejectsEmptyDataset) {
  TempDir dir;
  EXPECT_THROW(write_datasets(dir.file("e.nc"), {make_sparse("x", 128, {})}), DataError);
  EXPECT_THROW(write_datasets(dir.file("e.nc"), {}), DataError);
}

TEST(NetcdfWrite, ReplacesExistingFile) {
  TempDir dir;
  const std::string path = dir.file("r.nc");
  write_datasets(path, {make_sparse("first", 128, {{1}, {2}})});
  const ExampleSet second = make_sparse("second", 256, {{200}});
  write_datasets(path, {second});
  expect_same(read_datasets(path).at(0), second);
  // Only the output remains: no temporary files next to it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);
}

}  // namespace
}  // namespace nn
