// Golden tests of the file layout: the two examples of DSSTNE's user guide (tests/data/generate)
// are converted and the written file is inspected with the raw netCDF API, attribute by
// attribute, against the values generateNetCDF produces (docs/file-formats.md, "Files from
// generateNetCDF").
#include <gtest/gtest.h>

#include "data/data_test_util.h"
#include "data/text_examples.h"
#include "io/netcdf_dataset.h"

namespace nn {
namespace {

using test::RawFile;
using test::TempDir;

const std::string kGoldenDir = std::string(NN_TEST_DATA_DIR) + "/generate";

// Header attributes shared by both modes: one dataset, numeric kind, one dimension, width 128.
void expect_common_header(const RawFile& f, const std::string& name) {
  EXPECT_EQ(f.att_type("datasets"), NC_UINT);
  EXPECT_EQ(f.att_uint("datasets"), 1u);
  EXPECT_EQ(f.att_type("name0"), NC_CHAR);
  EXPECT_EQ(f.att_text("name0"), name);
  for (const char* a : {"attributes0", "kind0", "dataType0", "dimensions0", "width0"})
    EXPECT_EQ(f.att_type(a), NC_UINT) << a;
  EXPECT_EQ(f.att_uint("kind0"), 0u);
  EXPECT_EQ(f.att_uint("dimensions0"), 1u);
  EXPECT_EQ(f.att_uint("width0"), 128u);
  EXPECT_FALSE(f.has_att("datatype0"));  // DSSTNE's reader needs the capital T
  EXPECT_FALSE(f.has_att("height0"));
  for (const char* v : {"sparseStart0", "sparseEnd0"}) {
    EXPECT_EQ(f.var_type(v), NC_UINT) << v;
    EXPECT_EQ(f.var_dim(v), "examplesDim0") << v;
  }
  EXPECT_EQ(f.var_type("sparseIndex0"), NC_UINT);
  EXPECT_EQ(f.var_dim("sparseIndex0"), "sparseDataDim0");
  int format = 0;
  nc_inq_format(f.id(), &format);
  EXPECT_EQ(format, NC_FORMAT_NETCDF4);
}

TEST(Golden, IndicatorExampleFromUserGuide) {
  TempDir dir;
  FeatureIndex features, samples;
  TextExamplesOptions opt;  // indicator, new features allowed, width aligned to 128
  const ExampleSet ds =
      read_text_examples({kGoldenDir + "/indicator.txt"}, "input", features, samples, opt);
  write_datasets(dir.file("indicator.nc"), {ds});

  RawFile f(dir.file("indicator.nc"));
  expect_common_header(f, "input");
  EXPECT_EQ(f.att_uint("attributes0"), 3u);  // Sparse | Boolean
  EXPECT_EQ(f.att_uint("dataType0"), 0u);    // UInt
  EXPECT_EQ(f.dim("examplesDim0"), 3u);
  EXPECT_EQ(f.dim("sparseDataDim0"), 9u);
  EXPECT_EQ(f.var_u64("sparseStart0"), (std::vector<unsigned long long>{0, 3, 6}));
  EXPECT_EQ(f.var_u64("sparseEnd0"), (std::vector<unsigned long long>{3, 6, 9}));
  EXPECT_EQ(f.var_u64("sparseIndex0"),
            (std::vector<unsigned long long>{0, 1, 2, 3, 1, 4, 5, 6, 7}));
  EXPECT_FALSE(f.has_var("sparseData0"));  // Boolean: no value array

  // Feature ids follow first appearance: Feature5 (line 2) comes before Feature4.
  EXPECT_EQ(features.find("Feature5"), 3);
  EXPECT_EQ(features.find("Feature4"), 4);
  EXPECT_EQ(samples.find("Example3"), 2);
}

TEST(Golden, AnalogExampleFromUserGuide) {
  TempDir dir;
  FeatureIndex features, samples;
  TextExamplesOptions opt;
  opt.mode = ExampleMode::Analog;
  const ExampleSet ds =
      read_text_examples({kGoldenDir + "/analog.txt"}, "ratings", features, samples, opt);
  write_datasets(dir.file("analog.nc"), {ds});

  RawFile f(dir.file("analog.nc"));
  expect_common_header(f, "ratings");
  EXPECT_EQ(f.att_uint("attributes0"), 1u);  // Sparse
  EXPECT_EQ(f.att_uint("dataType0"), 4u);    // Float
  EXPECT_EQ(f.dim("examplesDim0"), 3u);
  EXPECT_EQ(f.dim("sparseDataDim0"), 4u);
  EXPECT_EQ(f.var_u64("sparseStart0"), (std::vector<unsigned long long>{0, 1, 2}));
  EXPECT_EQ(f.var_u64("sparseEnd0"), (std::vector<unsigned long long>{1, 2, 4}));
  EXPECT_EQ(f.var_u64("sparseIndex0"), (std::vector<unsigned long long>{0, 1, 2, 3}));
  EXPECT_EQ(f.var_type("sparseData0"), NC_FLOAT);
  EXPECT_EQ(f.var_dim("sparseData0"), "sparseDataDim0");
  EXPECT_EQ(f.var_float("sparseData0"), (std::vector<float>{123, 234, 345, 456}));
}

TEST(Golden, IndexFilesOfUserGuideExample) {
  TempDir dir;
  FeatureIndex features, samples;
  read_text_examples({kGoldenDir + "/indicator.txt"}, "input", features, samples, {});
  save_index(dir.file("features"), features);
  save_index(dir.file("samples"), samples);
  EXPECT_EQ(test::read_file(dir.file("features")),
            "Feature1\t0\nFeature2\t1\nFeature3\t2\nFeature5\t3\nFeature4\t4\nFeature6\t5\n"
            "Feature7\t6\nFeature8\t7\n");
  EXPECT_EQ(test::read_file(dir.file("samples")), "Example1\t0\nExample2\t1\nExample3\t2\n");
}

}  // namespace
}  // namespace nn
