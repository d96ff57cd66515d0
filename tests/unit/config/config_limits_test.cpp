// Limits on configuration files: nesting depth, file size, layer sizes that do not fit their
// 32-bit carriers, and the CDL MemoryLimit key.
#include <gtest/gtest.h>

#include "config/json_reader.h"
#include "config/parse.h"
#include "core/test_util.h"

namespace nn {
namespace {

using test::error_of;
using test::ScratchDir;

std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(ConfigLimits, DeeplyNestedNetworkJsonIsRejectedNotACrash) {
  const std::string text =
      R"({"Layers": [{"N": 2}, {"N": 2, "Extra": )" + nested_arrays(100000) + "}]}";
  const std::string m = error_of([&] { parse_network_json(text, "net.json"); });
  EXPECT_CONTAINS(m, "net.json: Layers[1].Extra[0][0]");
  EXPECT_CONTAINS(m, "nested deeper than 256 levels");
}

TEST(ConfigLimits, DeeplyNestedCdlIsRejected) {
  const std::string text = R"({"TrainingParameters": )" + nested_arrays(300) + "}";
  EXPECT_CONTAINS(error_of([&] { parse_cdl(text, "train.cdl"); }), "train.cdl: TrainingParameters");
  EXPECT_CONTAINS(error_of([&] { parse_cdl(text, "train.cdl"); }), "deeper than 256 levels");
}

TEST(ConfigLimits, NestingUpToTheLimitParses) {
  // 256 levels in all (the outer object is one) parse; one more does not.
  EXPECT_NO_THROW(config_detail::parse_json_text("{\"x\": " + nested_arrays(255) + "}", "a.json"));
  EXPECT_THROW(config_detail::parse_json_text("{\"x\": " + nested_arrays(256) + "}", "a.json"),
               ConfigError);
}

TEST(ConfigLimits, FilesLargerThan16MiBAreRefused) {
  ScratchDir dir;
  const std::string path =
      dir.write("big.json", "{\"Layers\": []," + std::string(17 << 20, ' ') + "}");
  const std::string m = error_of([&] { load_network_json(path); });
  EXPECT_CONTAINS(m, path + ": network JSON file is larger than 16 MiB");
}

TEST(ConfigLimits, LayerSizeProductBeyond32BitsIsRejected) {
  EXPECT_CONTAINS(
      error_of([&] {
        parse_network_json(R"({"Layers": [{"N": 2}, {"N": [2147483648, 2]}]})", "n.json");
      }),
      "n.json: Layers[1].N: 2147483648 x 2 = 4294967296 units; a layer has at most 4294967295 "
      "units");
  EXPECT_CONTAINS(
      error_of([&] {
        parse_network_json(
            R"({"Layers": [{"N": 2}, {"N": [4294967295, 4294967295, 4294967295, 4294967295]}]})",
            "n.json");
      }),
      "n.json: Layers[1].N: 4294967295 x 4294967295 x 4294967295 x 4294967295 = more than 2^64 "
      "units");
}

TEST(ConfigLimits, CdlBackendAndDevice) {
  const std::string base = R"({"Network": "n.json", "Command": "Train", "Data": "d.nc",
      "TrainingParameters": {"Epochs": 1})";
  const CdlSpec none = parse_cdl(base + "}", "a.cdl");
  EXPECT_EQ(none.backend, "");
  EXPECT_FALSE(none.device);
  const CdlSpec c = parse_cdl(base + R"(, "Backend": "cuda", "Device": 3})", "a.cdl");
  EXPECT_EQ(c.backend, "cuda");
  EXPECT_EQ(c.device.value(), 3);
  EXPECT_CONTAINS(error_of([&] { parse_cdl(base + R"(, "Backend": "gpu"})", "a.cdl"); }),
                  "a.cdl: Backend: expected \"cpu\", \"cuda\" or \"auto\", got \"gpu\"");
  EXPECT_CONTAINS(error_of([&] { parse_cdl(base + R"(, "Device": -1})", "a.cdl"); }),
                  "a.cdl: Device:");
}

TEST(ConfigLimits, CdlMemoryLimit) {
  const std::string base = R"({"Network": "n.json", "Command": "Train", "Data": "d.nc",
      "TrainingParameters": {"Epochs": 1}, "MemoryLimit": )";
  EXPECT_EQ(parse_cdl(base + "\"8G\"}", "a.cdl").memory_limit.value(), uint64_t(8) << 30);
  EXPECT_EQ(parse_cdl(base + "1000000}", "a.cdl").memory_limit.value(), 1000000u);
  EXPECT_FALSE(parse_cdl(R"({"Network": "n.json", "Command": "Train", "Data": "d.nc",
      "TrainingParameters": {"Epochs": 1}})",
                         "a.cdl")
                   .memory_limit);
  EXPECT_CONTAINS(error_of([&] { parse_cdl(base + "\"lots\"}", "a.cdl"); }),
                  "a.cdl: MemoryLimit: expected a size such as");
}

}  // namespace
}  // namespace nn
