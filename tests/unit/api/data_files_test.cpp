// The public image encoding (nn/encode.h) and process functions (nn/process.h): an IDX corpus
// becomes image and one-hot label datasets plus a class index, a split that leaves a file empty
// is an ArgumentError (the tools' usage error), and the process of a plain test run is one rank.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/test_util.h"
#include "nn/nn.h"

namespace nn::api {
namespace {

using nn::test::error_of;
using nn::test::ScratchDir;

void put_u32(std::ofstream& out, uint32_t v) {
  const unsigned char b[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
  out.write(reinterpret_cast<const char*>(b), 4);
}

// An IDX pair of `n` 2x3 images (pixel values i + j) labelled i % 4.
void write_idx(const std::string& images, const std::string& labels, uint32_t n) {
  std::ofstream img(images, std::ios::binary), lab(labels, std::ios::binary);
  put_u32(img, 0x803);
  put_u32(img, n);
  put_u32(img, 2);
  put_u32(img, 3);
  put_u32(lab, 0x801);
  put_u32(lab, n);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t j = 0; j < 6; ++j) img.put(char(i + j));
    lab.put(char(i % 4));
  }
}

TEST(DataFiles, EncodesAnIdxCorpusIntoImagesLabelsAndAClassIndex) {
  ScratchDir dir;
  const std::string images = dir.path() + "/img.idx", labels = dir.path() + "/lab.idx";
  write_idx(images, labels, 12);
  EncodeJob job;
  job.format = "idx";
  job.inputs = {images};
  job.labels = labels;
  job.classes = 4;
  job.output = dir.path() + "/train.nc";
  job.output2 = dir.path() + "/valid.nc";
  job.split = 0.75;
  std::vector<std::string> lines;
  encode_images(job, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_EQ(lines.size(), 3u);  // one line per file written
  EXPECT_CONTAINS(lines[0], "9 images 3x2x1, 4 classes");
  const auto train = Dataset::read_netcdf(job.output);
  ASSERT_EQ(train.size(), 2u);
  EXPECT_EQ(train[0].name(), "input");
  EXPECT_FALSE(train[0].sparse());
  EXPECT_EQ(train[0].examples(), 9u);
  EXPECT_EQ(train[0].dense_values()[7], 2.0f);  // image 1, pixel 1
  EXPECT_EQ(train[1].name(), "output");
  EXPECT_EQ(train[1].features(), 4u);
  EXPECT_EQ(Dataset::read_netcdf(job.output2)[0].examples(), 3u);
  std::ifstream index(dir.path() + "/classes.idx");
  std::string first;
  std::getline(index, first);
  EXPECT_EQ(first, "0\t0");

  job.split = 0.01;  // no image left for train.nc
  EXPECT_CONTAINS(error_of<ArgumentError>([&] { encode_images(job, null_log()); }),
                  "leaves no images for " + job.output);
  job.split = 1.0;
  job.output2.clear();
  job.class_names = "cifar10";  // ten names for four classes
  EXPECT_CONTAINS(error_of<ArgumentError>([&] { encode_images(job, null_log()); }),
                  "names 10 classes, but the labels have 4");
}

// The jobs refuse outputs that are one file before they read or write anything (the tools name
// their flags; a program sees the job's field names).
TEST(DataFiles, JobsRefuseTwoOutputsThatAreOneFile) {
  ScratchDir dir;
  const std::string images = dir.path() + "/img.idx", labels = dir.path() + "/lab.idx";
  write_idx(images, labels, 4);
  EncodeJob e;
  e.format = "idx";
  e.inputs = {images};
  e.labels = labels;
  e.classes = 4;
  e.output = dir.path() + "/d.nc";
  e.class_index = dir.path() + "/sub/../d.nc";
  EXPECT_CONTAINS(
      error_of<ArgumentError>([&] { encode_images(e, null_log()); }),
      "output " + e.output + " and class_index " + e.class_index + " name the same file");
  GenerateJob g;
  g.dataset = "input";
  g.input = dir.write("r.txt", "u1\ta:b\n");
  g.output = dir.path() + "/g.nc";
  g.features = dir.path() + "/x.idx";
  g.samples = dir.path() + "/./x.idx";
  g.create_features = true;
  EXPECT_CONTAINS(error_of<ArgumentError>([&] { DatasetGenerator{g}; }),
                  "features " + g.features + " and samples " + g.samples + " name the same file");
  EXPECT_FALSE(std::filesystem::exists(g.output));
  EXPECT_FALSE(std::filesystem::exists(e.output));
  EXPECT_TRUE(same_file(g.features, dir.path() + "/sub/../x.idx"));
}

// Datasets made from arrays are written as nn-generate lays them out, with their items, and
// read back the same; bad names and repeated datasets are refused before a file is written.
TEST(DataFiles, WritesDatasetsFromArraysWithTheirItems) {
  ScratchDir dir;
  const std::vector<uint64_t> row_ptr = {0, 2, 3};
  const std::vector<uint32_t> index = {0, 2, 1};
  const std::vector<float> dense = {1, 2, 3, 4};
  const Dataset x = Dataset::csr("input", row_ptr.data(), index.data(), nullptr, 2, 3)
                        .with_feature_names({"apple", "", "fig"});
  const Dataset side = Dataset::dense("side", dense.data(), 2, 2);
  EXPECT_EQ(side.feature_names(), nullptr);
  const std::string path = dir.path() + "/d.nc";
  Dataset::write_netcdf(path, {x, side});
  const std::vector<Dataset> back = Dataset::read_netcdf(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name(), "input");
  ASSERT_NE(back[0].feature_names(), nullptr);
  EXPECT_EQ(back[0].feature_names()->at(2), "fig");
  std::vector<uint64_t> rp;
  std::vector<uint32_t> ix;
  std::vector<float> v;
  back[0].csr_arrays(rp, ix, v);
  EXPECT_EQ(rp, row_ptr);
  EXPECT_EQ(ix, index);
  EXPECT_TRUE(back[0].indicator());
  EXPECT_EQ(back[1].dense_values(), dense);
  EXPECT_CONTAINS(error_of<ConfigError>([&] {
                    (void)x.with_feature_names({"a", "a"});
                  }),
                  "dataset 'input': feature names: ");
  const std::string other = dir.path() + "/e.nc";
  EXPECT_CONTAINS(error_of<ConfigError>([&] {
                    Dataset::write_netcdf(other, {x, x});
                  }),
                  "two datasets named 'input'");
  EXPECT_CONTAINS(error_of<ConfigError>([&] { Dataset::write_netcdf(other, {}); }),
                  "no datasets to write");
  EXPECT_FALSE(std::filesystem::exists(other));
}

TEST(DataFiles, AProcessOutsideMpiIsOneRank) {
  EXPECT_EQ(world_rank(), 0);
  EXPECT_EQ(world_size(), 1);
  EXPECT_EQ(rank_prefix(), "");
  EXPECT_GE(default_thread_count(), 1);
  EXPECT_EQ(parse_byte_size("2k"), std::optional<uint64_t>(2048));
  EXPECT_FALSE(parse_byte_size("12Q"));
  const uint64_t before = memory_budget();
  set_memory_budget(1 << 20);
  EXPECT_EQ(memory_budget(), uint64_t(1) << 20);
  EXPECT_EQ(format_bytes(memory_budget()), "1.0 MiB");
  set_memory_budget(0);  // back to the default
  EXPECT_EQ(memory_budget(), before);
}

}  // namespace
}  // namespace nn::api
