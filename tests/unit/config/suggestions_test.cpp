// Error messages that help a newcomer: the nearest name for a misspelt layer reference or enum
// value ("did you mean 'Hidden'?"), and a network file given where a command file belongs (and
// the reverse, and a NetCDF file given as either).
#include <gtest/gtest.h>

#include "config/parse.h"
#include "core/nearest_name.h"
#include "core/test_util.h"

namespace nn {
namespace {

using test::error_of;

const char* const kNetwork = R"({"Name": "n", "Layers": [
  {"Name": "Input", "Kind": "Input", "N": 4, "DataSet": "input"},
  {"Name": "Hidden", "Kind": "Hidden", "N": 3, "Source": "Input"},
  {"Name": "Output", "Kind": "Output", "N": 4, "Source": "%s", "DataSet": "output"}]})";

std::string network_with_source(const std::string& source) {
  char buf[512];
  std::snprintf(buf, sizeof buf, kNetwork, source.c_str());
  return buf;
}

TEST(NearestName, PicksTheClosePlausibleTypoOnly) {
  EXPECT_EQ(nearest_name("Hiden", {"Input", "Hidden", "Output"}), "Hidden");
  EXPECT_EQ(nearest_name("hidden", {"Input", "Hidden", "Output"}), "Hidden");
  EXPECT_EQ(nearest_name("Encoder", {"Input", "Hidden", "Output"}), "");
  EXPECT_EQ(nearest_name("x", {"a", "b"}), "");  // one-letter names are not "near" anything
  EXPECT_EQ(did_you_mean("inptu", {"input", "output"}), " (did you mean 'input'?)");
  EXPECT_EQ(did_you_mean("zzz", {"input", "output"}), "");
}

TEST(Suggestions, MisspeltLayerSourceSuggestsTheNearestLayer) {
  const std::string m =
      error_of([&] { parse_network_json(network_with_source("Hiden"), "net.json"); });
  EXPECT_CONTAINS(m,
                  "net.json: Layers[2].Source: layer \"Output\" names unknown source layer "
                  "\"Hiden\"; layers are Input, Hidden, Output (did you mean 'Hidden'?)");
}

TEST(Suggestions, FarOffLayerSourceHasNoSuggestion) {
  const std::string m =
      error_of([&] { parse_network_json(network_with_source("Encoder"), "net.json"); });
  EXPECT_CONTAINS(m, "unknown source layer \"Encoder\"");
  EXPECT_EQ(m.find("did you mean"), std::string::npos) << m;
}

TEST(Suggestions, MisspeltEnumValueSuggestsTheNearestName) {
  const std::string m = error_of([&] {
    parse_network_json(R"({"Layers": [{"Kind": "Input", "N": 2, "DataSet": "i"},
        {"Kind": "Output", "N": 2, "DataSet": "o", "Activation": "Sigmiod"}]})",
                       "net.json");
  });
  EXPECT_CONTAINS(m, "net.json: Layers[1].Activation: unknown \"Sigmiod\"; expected one of");
  EXPECT_CONTAINS(m, "(did you mean 'Sigmoid'?)");
  const std::string k = error_of([&] {
    parse_network_json(R"({"Layers": [{"Kind": "Inptu", "N": 2, "DataSet": "i"},
        {"Kind": "Output", "N": 2, "DataSet": "o"}]})",
                       "net.json");
  });
  EXPECT_CONTAINS(k, "(did you mean 'Input'?)");
}

TEST(Suggestions, NetworkGivenAsCommandFileIsNamedAsSuch) {
  const std::string m = error_of([&] { parse_cdl(network_with_source("Hidden"), "train.cdl"); });
  EXPECT_CONTAINS(m,
                  "train.cdl: (top level): this looks like a network file, not a command "
                  "file: it has Layers and no Command");
  EXPECT_CONTAINS(m, "-c net.json");
}

TEST(Suggestions, CommandFileGivenAsNetworkIsNamedAsSuch) {
  const std::string m = error_of([&] {
    parse_network_json(R"({"Network": "net.json", "Command": "Train", "Data": "d.nc",
                           "TrainingParameters": {"Epochs": 1}})",
                       "train.cdl");
  });
  EXPECT_CONTAINS(m,
                  "train.cdl: (top level): this looks like a command file (CDL), not a "
                  "network file: it has Command and no Layers. Run it as nn-train train.cdl");
}

TEST(Suggestions, NetCdfGivenAsEitherJsonFileIsNamedAsSuch) {
  const std::string netcdf("CDF\x01\x00\x00\x00\x00", 8);
  EXPECT_CONTAINS(error_of([&] { parse_cdl(netcdf, "net.nc"); }),
                  "net.nc: this is a NetCDF file (a dataset or a trained network), not a command "
                  "file");
  EXPECT_CONTAINS(error_of([&] { parse_network_json("\x89HDF\r\n", "net.nc"); }),
                  "net.nc: this is a NetCDF file (a dataset or a trained network), not a network "
                  "description");
}

}  // namespace
}  // namespace nn
