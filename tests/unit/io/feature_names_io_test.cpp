// Item names in files: datasets carry their features' names (indToFeatureN, as DSSTNE's test
// helper writes them) and network files their sparse layers' items (layer<i>_nn_features); both
// read back, files without them stay readable, and bad lists are refused by name.
#include <gtest/gtest.h>
#include <netcdf.h>

#include "core/error.h"
#include "io/model_io_test_support.h"
#include "io/netcdf_dataset.h"
#include "io/network_file.h"

namespace nn::test {
namespace {

ExampleSet named_set(std::vector<std::string> names) {
  ExampleSet ds;
  ds.name = "input";
  ds.type = DataType::UInt;
  ds.attributes = attr::Sparse | attr::Boolean;
  ds.width = 8;
  ds.examples = ds.unique_examples = 2;
  ds.sparse_start = {0, 2};
  ds.sparse_end = {2, 3};
  ds.sparse_index = {0, 3, 1};
  ds.feature_names = make_feature_names(std::move(names));
  return ds;
}

TEST(FeatureNamesInFiles, DatasetNamesRoundTrip) {
  ScratchDir dir;
  const std::string path = dir.file("named.nc");
  write_datasets(path, {named_set({"m1", "m20", "", "m7"})});
  const std::vector<ExampleSet> back = read_datasets(path);
  ASSERT_EQ(back.size(), 1u);
  ASSERT_TRUE(back[0].feature_names);
  EXPECT_EQ(*back[0].feature_names, (std::vector<std::string>{"m1", "m20", "", "m7"}));
}

TEST(FeatureNamesInFiles, DatasetWithoutNamesHasNone) {
  ScratchDir dir;
  ExampleSet ds = named_set({});
  ds.feature_names.reset();
  write_datasets(dir.file("plain.nc"), {ds});
  EXPECT_FALSE(read_datasets(dir.file("plain.nc"))[0].feature_names);
}

TEST(FeatureNamesInFiles, RepeatedNameIsRefusedBeforeWriting) {
  ScratchDir dir;
  try {
    write_datasets(dir.file("bad.nc"), {named_set({"m1", "m2", "m1"})});
    FAIL() << "a repeated name was written";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("indToFeature0: entry 2 (\"m1\") repeats entry 0"),
              std::string::npos)
        << e.what();
  }
}

TEST(FeatureNamesInFiles, NetworkItemsRoundTrip) {
  ScratchDir dir;
  NetworkFile net = rich_network_file();
  LayerSpec* named = nullptr;
  for (LayerSpec& l : net.spec.layers)
    if (l.kind == LayerKind::Output && !named) named = &l;
  ASSERT_NE(named, nullptr);
  std::vector<std::string> names(named->units());
  for (size_t i = 0; i < names.size(); ++i) names[i] = i % 3 == 2 ? "" : "item" + std::to_string(i);
  named->features = make_feature_names(names);
  write_network_file(dir.file("net.nc"), net);
  const NetworkFile back = read_network_file(dir.file("net.nc"));
  bool found = false;
  for (const LayerSpec& l : back.spec.layers) {
    if (l.name != named->name) {
      EXPECT_FALSE(l.features) << l.name;
      continue;
    }
    ASSERT_TRUE(l.features);
    EXPECT_EQ(*l.features, names);
    found = true;
  }
  EXPECT_TRUE(found);
  expect_same_network_file(net, back);
}

TEST(FeatureNamesInFiles, NetworkWithMoreItemsThanUnitsIsRefused) {
  ScratchDir dir;
  NetworkFile net = rich_network_file();
  LayerSpec& l = net.spec.layers.back();
  std::vector<std::string> names(l.units() + 1);
  for (size_t i = 0; i < names.size(); ++i) names[i] = "n" + std::to_string(i);
  l.features = make_feature_names(names);
  try {
    write_network_file(dir.file("bad.nc"), net);
    FAIL() << "written";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("_nn_features' has " + std::to_string(names.size()) +
                                         " names, more than the " + std::to_string(l.units()) +
                                         " features"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nn::test
