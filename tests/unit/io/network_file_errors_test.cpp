// Bad network files and bad NetworkFiles: the error type and a message that names the file and
// the attribute or variable, what was found and what was expected.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <netcdf>

#include "core/error.h"
#include "io/dsstne_network_writer.h"
#include "io/model_io_test_support.h"
#include "io/network_file.h"

namespace nn::test {
namespace {

// Input(8) -> Hidden(4) -> Output(8), plain DSSTNE layout; tests break one thing each.
DsstneNetwork small_dsstne_network() {
  DsstneNetwork net;
  net.layers = {dsstne_fc_layer("Input", 0, 8, {}, 0, "in"),
                dsstne_fc_layer("Hidden", 1, 4, {"Input"}),
                dsstne_fc_layer("Output", 2, 8, {"Hidden"}, 0, "out")};
  net.weights = {dsstne_fc_weight("Input", 8, "Hidden", 4),
                 dsstne_fc_weight("Hidden", 4, "Output", 8)};
  return net;
}

// Runs `f`, expecting E with every one of `parts` in its message.
template <class E>
void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    const std::string what = e.what();
    for (const auto& p : parts)
      EXPECT_NE(what.find(p), std::string::npos) << "missing '" << p << "' in: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

class NetworkFileErrors : public ::testing::Test {
 protected:
  // Writes `net` in DSSTNE's layout and expects reading it to fail with all of `parts`.
  void expect_read_error(const DsstneNetwork& net, const std::vector<std::string>& parts) {
    write_dsstne_network(path_, net);
    std::vector<std::string> all = {path_ + ": "};
    all.insert(all.end(), parts.begin(), parts.end());
    expect_error<DataError>([&] { read_network_file(path_); }, all);
  }
  ScratchDir dir_;
  std::string path_ = dir_.file("bad.nc");
};

TEST_F(NetworkFileErrors, SmallNetworkIsValid) {
  // The baseline the other cases break: it must load.
  write_dsstne_network(path_, small_dsstne_network());
  EXPECT_EQ(read_network_file(path_).weights.size(), 2u);
}

TEST_F(NetworkFileErrors, MissingLayerAttribute) {
  DsstneNetwork net = small_dsstne_network();
  net.omit = {"layer1_Nx"};
  expect_read_error(net, {"attribute 'layer1_Nx' missing"});
}

TEST_F(NetworkFileErrors, MissingGlobalAndWeightAttributes) {
  DsstneNetwork net = small_dsstne_network();
  net.omit = {"SMCE_oneTarget"};
  expect_read_error(net, {"attribute 'SMCE_oneTarget' missing"});
  net.omit = {"weight1_bShared"};
  expect_read_error(net, {"attribute 'weight1_bShared' missing"});
  net.omit = {"layer2_source0"};
  expect_read_error(net, {"attribute 'layer2_source0' missing"});
}

TEST_F(NetworkFileErrors, PoolingLayerNeedsItsFunction) {
  DsstneNetwork net = small_dsstne_network();
  net.layers[1].type = 2;
  net.weights.erase(net.weights.begin());  // pooling layers have no weights
  net.omit = {"layer1_poolingfunction"};
  expect_read_error(net, {"attribute 'layer1_poolingfunction' missing"});
}

TEST_F(NetworkFileErrors, WrongWeightSize) {
  DsstneNetwork net = small_dsstne_network();
  net.weights[1].weights.pop_back();
  expect_read_error(net, {"variable 'weight1_weights'", "has 31 values, expected 32",
                          "width*height*length*depth*breadth = 8*4*1*1*1"});
}

TEST_F(NetworkFileErrors, WrongBiasSize) {
  DsstneNetwork net = small_dsstne_network();
  net.weights[0].bias.push_back(1.0f);
  expect_read_error(net, {"variable 'weight0_bias'", "has 5 values, expected 4"});
}

TEST_F(NetworkFileErrors, WeightShapeDisagreesWithLayers) {
  DsstneNetwork net = small_dsstne_network();
  std::swap(net.weights[0].width, net.weights[0].height);  // same size, wrong orientation
  expect_read_error(net, {"attribute 'weight0_width'", "8 x 4, expected 4 x 8"});
}

TEST_F(NetworkFileErrors, NaNAndInfiniteValues) {
  DsstneNetwork net = small_dsstne_network();
  net.weights[0].weights[5] = std::nanf("");
  expect_read_error(net, {"variable 'weight0_weights' element 5 is NaN"});
  net = small_dsstne_network();
  net.weights[1].bias[2] = INFINITY;
  expect_read_error(net, {"variable 'weight1_bias' element 2 is inf"});
  net = small_dsstne_network();
  net.layers[1].relu_slope = NAN;
  expect_read_error(net, {"attribute 'layer1_RELUSlope'", "expected a finite number"});
}

TEST_F(NetworkFileErrors, CodeOutOfRange) {
  DsstneNetwork net = small_dsstne_network();
  net.layers[2].activation = 14;
  expect_read_error(net, {"attribute 'layer2_activation' is 14, expected 0..13"});
  net = small_dsstne_network();
  net.error_function = 7;
  expect_read_error(net, {"attribute 'errorFunction' is 7, expected 0..6"});
  net = small_dsstne_network();
  net.layers[0].attributes = 8;
  expect_read_error(net, {"attribute 'layer0_attributes' is 8"});
}

TEST_F(NetworkFileErrors, UnknownLayerNames) {
  DsstneNetwork net = small_dsstne_network();
  net.weights[0].input_layer = "Nope";
  expect_read_error(net,
                    {"attribute 'weight0_inputLayer' names layer 'Nope', which does not exist"});
  net = small_dsstne_network();
  net.layers[2].sources = {"Missing"};
  expect_read_error(net, {"attribute 'layer2_source0' names layer 'Missing'"});
  net = small_dsstne_network();
  net.layers[2].name = "Hidden";
  expect_read_error(net, {"attribute 'layer2_name' repeats layer name 'Hidden'"});
}

TEST_F(NetworkFileErrors, SharedWeightWithoutSource) {
  DsstneNetwork net = small_dsstne_network();
  DsstneWeight& w = net.weights[1];
  w.shared = true;
  w.transposed = true;
  w.source_input_layer = "Hidden";  // no unshared Hidden -> Input weight exists
  w.source_output_layer = "Input";
  expect_read_error(net, {"'weight1_sourceInputLayer'", "no unshared weight connects them"});
}

TEST_F(NetworkFileErrors, TextWhereANumberBelongs) {
  write_dsstne_network(path_, small_dsstne_network());
  {
    netCDF::NcFile nc(path_, netCDF::NcFile::write);
    nc.putAtt("layer1_Ny", std::string("one"));
  }
  expect_error<DataError>([&] { read_network_file(path_); },
                          {path_, "attribute 'layer1_Ny' is text, expected a number"});
}

TEST_F(NetworkFileErrors, NewerFormatVersionIsRefused) {
  write_network_file(path_, rich_network_file());
  {
    netCDF::NcFile nc(path_, netCDF::NcFile::write);
    nc.putAtt("nn_format_version", netCDF::ncUint, 99u);
  }
  expect_error<DataError>([&] { read_network_file(path_); },
                          {"attribute 'nn_format_version' is 99", "reads versions up to 1"});
}

TEST_F(NetworkFileErrors, NotANetCdfFile) {
  write_file_bytes(path_, "Name\tfeature1:feature2\nthis is not NetCDF\n");
  expect_error<DataError>([&] { read_network_file(path_); }, {path_ + ": not a NetCDF file ("});
}

TEST_F(NetworkFileErrors, TruncatedFile) {
  write_network_file(path_, rich_network_file());
  const std::string bytes = read_file_bytes(path_);
  ASSERT_GT(bytes.size(), 1000u);
  write_file_bytes(path_, bytes.substr(0, bytes.size() / 2));
  expect_error<DataError>([&] { read_network_file(path_); }, {path_ + ": not a NetCDF file ("});
}

TEST_F(NetworkFileErrors, MissingFile) {
  const std::string missing = dir_.file("absent.nc");
  expect_error<IoError>([&] { read_network_file(missing); },
                        {missing + ": cannot open network file", "No such file"});
  expect_error<IoError>([&] { read_network_file(dir_.path()); }, {"is a directory"});
}

TEST_F(NetworkFileErrors, WriterRejectsInconsistentNetworks) {
  const std::string out = dir_.file("out.nc");
  NetworkFile net = rich_network_file();
  net.weights[2].weights.pop_back();
  expect_error<DataError>([&] { write_network_file(out, net); },
                          {out + ": variable 'weight2_weights' has 35 values, expected 36"});
  net = rich_network_file();
  net.weights[0].weight_state[1].resize(3);
  expect_error<DataError>([&] { write_network_file(out, net); },
                          {"variable 'weight0_nn_state1' has 3 values, expected 48"});
  net = rich_network_file();
  net.spec.layers[4].shared_weights.clear();  // weight3 is still marked shared
  expect_error<DataError>([&] { write_network_file(out, net); },
                          {"attribute 'weight3_bShared' is 1", "no SharedWeights entry"});
  net = rich_network_file();
  net.layers[0].bn_running_mean.pop_back();
  expect_error<DataError>([&] { write_network_file(out, net); },
                          {"variable 'layer2_runningMeanBN' has 5 values, expected 6"});
  net = rich_network_file();
  net.layers[0].layer = "Ghost";
  expect_error<DataError>([&] { write_network_file(out, net); },
                          {"layer arrays given for layer 'Ghost', which does not exist"});
  net = rich_network_file();
  net.weights[1].bias.clear();
  expect_error<DataError>(
      [&] { write_network_file(out, net); },
      {"variable 'weight1_bias' is missing while 'weight1_weights' is present"});
  EXPECT_TRUE(dir_.entries().empty());
}

}  // namespace
}  // namespace nn::test
