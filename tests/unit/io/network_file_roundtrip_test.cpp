// Round trips through write_network_file/read_network_file, and the DSSTNE-visible layout of what
// we write (attribute names, NetCDF types, derived values), checked with the raw netCDF API.
#include <gtest/gtest.h>
#include <netcdf.h>

#include <netcdf>

#include "config/layer_shapes.h"
#include "io/file_checksum.h"
#include "io/model_io_test_support.h"
#include "io/netcdf_output.h"
#include "io/network_file.h"

namespace nn::test {
namespace {

using netCDF::NcFile;

TEST(NetworkFileRoundTrip, RichNetworkKeepsEveryField) {
  ScratchDir dir;
  const NetworkFile original = rich_network_file();
  const std::string path = dir.file("rich.nc");
  write_network_file(path, original);
  const NetworkFile loaded = read_network_file(path);
  expect_same_network_file(original, loaded);
  // The spec now comes from the .nc file, so messages about it name that file.
  EXPECT_EQ(loaded.spec.source, path);
}

TEST(NetworkFileRoundTrip, ConvolutionAndPoolingNetwork) {
  ScratchDir dir;
  const NetworkFile original = conv_network_file();
  write_network_file(dir.file("conv.nc"), original);
  expect_same_network_file(original, read_network_file(dir.file("conv.nc")));
}

TEST(NetworkFileRoundTrip, WithoutTrainingStateOrOptimizerState) {
  ScratchDir dir;
  NetworkFile original = rich_network_file();
  original.training = TrainingState{};
  for (auto& w : original.weights) w.weight_state.clear(), w.bias_state.clear();
  original.layers[0].bn_scale_state.clear();
  original.layers[0].bn_bias_state.clear();
  write_network_file(dir.file("plain.nc"), original);
  const NetworkFile loaded = read_network_file(dir.file("plain.nc"));
  EXPECT_FALSE(loaded.training.present);
  expect_same_network_file(original, loaded);
}

TEST(NetworkFileRoundTrip, WeightsWithoutValuesStayEmpty) {
  // DSSTNE initialises weights whose arrays are absent; such a file must round-trip as "absent".
  ScratchDir dir;
  NetworkFile original = rich_network_file();
  original.weights[1].weights.clear();
  original.weights[1].bias.clear();
  original.weights[1].weight_state.clear();
  original.weights[1].bias_state.clear();
  write_network_file(dir.file("partial.nc"), original);
  expect_same_network_file(original, read_network_file(dir.file("partial.nc")));
}

TEST(NetworkFileRoundTrip, OverwritesAnExistingFile) {
  ScratchDir dir;
  write_network_file(dir.file("net.nc"), rich_network_file());
  const NetworkFile second = conv_network_file();
  write_network_file(dir.file("net.nc"), second);
  expect_same_network_file(second, read_network_file(dir.file("net.nc")));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"net.nc"});
}

TEST(NetworkFileRoundTrip, ALargeNetworkWrittenStraightToDiskIsTheSame) {
  // Large files are written by netCDF into the temporary file itself (not built in memory):
  // every network counts as large here. The same content, its checksum trailer, nothing left.
  struct Restore {
    size_t bytes = netcdf_direct_bytes();
    ~Restore() { set_netcdf_direct_bytes(bytes); }
  } restore;
  set_netcdf_direct_bytes(0);
  ScratchDir dir;
  const NetworkFile original = rich_network_file();
  write_network_file(dir.file("net.nc"), original);
  EXPECT_EQ(verify_file_checksum(dir.file("net.nc")), ChecksumStatus::Verified);
  expect_same_network_file(original, read_network_file(dir.file("net.nc")));
  write_network_file(dir.file("net.nc"), conv_network_file());  // over an existing file
  expect_same_network_file(conv_network_file(), read_network_file(dir.file("net.nc")));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"net.nc"});
}

// Reads an attribute's NetCDF type id, failing the test when it is absent.
nc_type att_type(const NcFile& nc, const std::string& name) {
  const auto att = nc.getAtt(name);
  EXPECT_FALSE(att.isNull()) << name;
  return att.isNull() ? NC_NAT : att.getType().getId();
}

template <class T>
T att_value(const NcFile& nc, const std::string& name) {
  T v{};
  nc.getAtt(name).getValues(&v);
  return v;
}

std::string att_text(const NcFile& nc, const std::string& name) {
  std::string v;
  nc.getAtt(name).getValues(v);
  return v;
}

TEST(NetworkFileLayout, UsesDsstneNamesAndTypes) {
  ScratchDir dir;
  write_network_file(dir.file("rich.nc"), rich_network_file());
  NcFile nc(dir.file("rich.nc"), NcFile::read);

  const std::pair<const char*, nc_type> globals[] = {
      {"version", NC_FLOAT},
      {"name", NC_CHAR},
      {"kind", NC_UINT},
      {"errorFunction", NC_UINT},
      {"maxout_k", NC_INT},
      {"decay", NC_FLOAT},
      {"LRN_k", NC_FLOAT},
      {"LRN_n", NC_INT},
      {"LRN_alpha", NC_FLOAT},
      {"LRN_beta", NC_FLOAT},
      {"bSparsenessPenalty", NC_UINT},
      {"sparsenessPenalty_p", NC_FLOAT},
      {"sparsenessPenalty_beta", NC_FLOAT},
      {"bDenoising", NC_UINT},
      {"denoising_p", NC_FLOAT},
      {"deltaBoost_one", NC_FLOAT},
      {"deltaBoost_zero", NC_FLOAT},
      {"SMCE_oneScale", NC_FLOAT},
      {"SMCE_zeroScale", NC_FLOAT},
      {"SMCE_oneTarget", NC_FLOAT},
      {"SMCE_zeroTarget", NC_FLOAT},
      {"ShuffleIndices", NC_UINT},
      {"checkpoint_name", NC_CHAR},
      {"checkpoint_interval", NC_INT},
      {"checkpoint_epochs", NC_INT},
      {"layers", NC_UINT},
      {"weights", NC_UINT},
  };
  for (const auto& [name, type] : globals) EXPECT_EQ(att_type(nc, name), type) << name;

  const char* layer_uint[] = {"kind",
                              "type",
                              "poolingfunction",
                              "Nx",
                              "Ny",
                              "Nz",
                              "Nw",
                              "dimensions",
                              "kernelX",
                              "kernelY",
                              "kernelZ",
                              "kernelDimensions",
                              "kernelStrideX",
                              "kernelStrideY",
                              "kernelStrideZ",
                              "kernelPaddingX",
                              "kernelPaddingY",
                              "kernelPaddingZ",
                              "weightInit",
                              "activation",
                              "attributes",
                              "sources",
                              "skips"};
  const char* layer_float[] = {"pDropout",
                               "weightInitScale",
                               "biasInit",
                               "weightNorm",
                               "deltaNorm",
                               "sparsenessPenalty_p",
                               "sparsenessPenalty_beta",
                               "RELUSlope",
                               "ELUAlpha",
                               "SELULambda"};
  for (int i = 0; i < 5; ++i) {
    const std::string p = "layer" + std::to_string(i) + "_";
    EXPECT_EQ(att_type(nc, p + "name"), NC_CHAR);
    EXPECT_EQ(att_type(nc, p + "dataSet"), NC_CHAR);
    for (const char* k : layer_uint) EXPECT_EQ(att_type(nc, p + k), NC_UINT) << p + k;
    for (const char* k : layer_float) EXPECT_EQ(att_type(nc, p + k), NC_FLOAT) << p + k;
  }
  const char* weight_u64[] = {"width", "height", "length", "depth", "breadth"};
  for (int i = 0; i < 4; ++i) {
    const std::string p = "weight" + std::to_string(i) + "_";
    EXPECT_EQ(att_type(nc, p + "inputLayer"), NC_CHAR);
    EXPECT_EQ(att_type(nc, p + "outputLayer"), NC_CHAR);
    for (const char* k : weight_u64) EXPECT_EQ(att_type(nc, p + k), NC_UINT64) << p + k;
    EXPECT_EQ(att_type(nc, p + "bShared"), NC_UINT);
    EXPECT_EQ(att_type(nc, p + "bLocked"), NC_UINT);
    EXPECT_EQ(att_type(nc, p + "norm"), NC_FLOAT);
    EXPECT_EQ(nc.getVar(p + "bias").getType().getId(), NC_FLOAT);
  }

  // Values DSSTNE derives rather than reads from JSON.
  EXPECT_EQ(att_value<unsigned>(nc, "bSparsenessPenalty"), 1u);
  EXPECT_EQ(att_value<unsigned>(nc, "bDenoising"), 1u);
  EXPECT_EQ(att_value<unsigned>(nc, "layers"), 5u);
  EXPECT_EQ(att_value<unsigned>(nc, "weights"), 4u);
  EXPECT_EQ(att_value<int>(nc, "checkpoint_epochs"), 7 % 5);
  EXPECT_EQ(att_value<unsigned>(nc, "layer0_attributes"), 1u | 2u);  // sparse input, denoised
  EXPECT_EQ(att_value<unsigned>(nc, "layer1_attributes"), 0u);       // dense input
  EXPECT_EQ(att_value<unsigned>(nc, "layer2_attributes"), 1u | 4u);  // sparse hidden + BN
  EXPECT_EQ(att_value<unsigned>(nc, "layer2_sources"), 2u);
  EXPECT_EQ(att_text(nc, "layer2_source1"), "Side");
  EXPECT_EQ(att_text(nc, "layer3_skip0"), "Hidden1");
  // Per-layer sparseness penalty is stored per layer, distinct from the network's.
  EXPECT_EQ(att_value<float>(nc, "layer2_sparsenessPenalty_p"), 0.05f);
  EXPECT_EQ(att_value<float>(nc, "sparsenessPenalty_p"), 0.1f);

  // Weight arrays: [input][output] floats with DSSTNE's dimension names.
  const auto w0 = nc.getVar("weight0_weights");
  ASSERT_FALSE(w0.isNull());
  ASSERT_EQ(w0.getDims().size(), 1u);
  EXPECT_EQ(w0.getDims()[0].getName(), "weight0_weightDim");
  EXPECT_EQ(w0.getDims()[0].getSize(), 48u);
  EXPECT_EQ(nc.getVar("weight0_bias").getDims()[0].getName(), "weight0_biasDim");
  std::vector<float> values(48);
  w0.getVar(values.data());
  EXPECT_EQ(values, rich_network_file().weights[0].weights);

  // The shared weight names its source and stores no weight array.
  EXPECT_EQ(att_value<unsigned>(nc, "weight3_bShared"), 1u);
  EXPECT_EQ(att_value<unsigned>(nc, "weight3_bTransposed"), 1u);
  EXPECT_EQ(att_text(nc, "weight3_sourceInputLayer"), "Input");
  EXPECT_EQ(att_text(nc, "weight3_sourceOutputLayer"), "Hidden1");
  EXPECT_TRUE(nc.getVar("weight3_weights").isNull());
  EXPECT_TRUE(nc.getAtt("weight0_bTransposed").isNull());

  // Batch normalisation arrays under DSSTNE's names.
  EXPECT_EQ(nc.getDim("layer2_bnDim").getSize(), 6u);
  for (const char* v : {"scaleBN", "biasBN", "runningMeanBN", "runningVarianceBN"})
    EXPECT_FALSE(nc.getVar(std::string("layer2_") + v).isNull()) << v;

  // Everything of ours starts with "nn_" (after the layer/weight prefix).
  EXPECT_FALSE(nc.getAtt("nn_format_version").isNull());
  EXPECT_FALSE(nc.getVar("weight0_nn_state1").isNull());
  EXPECT_FALSE(nc.getVar("weight3_nn_bias_state0").isNull());
  EXPECT_FALSE(nc.getVar("layer2_nn_scaleBN_state1").isNull());
  EXPECT_EQ(att_type(nc, "nn_training_step"), NC_UINT64);
}

TEST(NetworkFileLayout, MultVaeKeysAreOursAndOnlyWrittenWhenSet) {
  // SoftMaxTargets Raw and an Input's Normalize travel as nn_ attributes; a network without
  // them writes neither, so its file is what it was before they existed.
  ScratchDir dir;
  NetworkFile original = rich_network_file();
  write_network_file(dir.file("plain.nc"), original);
  {
    NcFile nc(dir.file("plain.nc"), NcFile::read);
    EXPECT_TRUE(nc.getAtt("nn_SoftMaxTargets").isNull());
    EXPECT_TRUE(nc.getAtt("layer0_nn_normalize").isNull());
  }
  original.spec.softmax_targets = SoftMaxTargets::Raw;
  original.spec.layers[0].normalize = RowNormalization::L2;
  ASSERT_EQ(original.spec.layers[0].kind, LayerKind::Input);
  write_network_file(dir.file("mult.nc"), original);
  {
    NcFile nc(dir.file("mult.nc"), NcFile::read);
    EXPECT_EQ(att_type(nc, "nn_SoftMaxTargets"), NC_UINT);
    EXPECT_EQ(att_value<uint32_t>(nc, "nn_SoftMaxTargets"), 1u);
    EXPECT_EQ(att_value<uint32_t>(nc, "layer0_nn_normalize"), 1u);
  }
  const NetworkFile loaded = read_network_file(dir.file("mult.nc"));
  expect_same_network_file(original, loaded);
  EXPECT_EQ(loaded.spec.softmax_targets, SoftMaxTargets::Raw);
  EXPECT_EQ(loaded.spec.layers[0].normalize, RowNormalization::L2);
}

TEST(NetworkFileLayout, ConvolutionPaddingFollowsDsstne) {
  ScratchDir dir;
  write_network_file(dir.file("conv.nc"), conv_network_file());
  NcFile nc(dir.file("conv.nc"), NcFile::read);
  // 3x3 kernel, stride 1 over 6x6: "same" padding of kernel/2.
  EXPECT_EQ(att_value<unsigned>(nc, "layer1_kernelPaddingX"), 1u);
  EXPECT_EQ(att_value<unsigned>(nc, "layer1_kernelPaddingY"), 1u);
  EXPECT_EQ(att_value<unsigned>(nc, "layer1_kernelPaddingZ"), 0u);
  // 2x2 pooling with stride 2: none.
  EXPECT_EQ(att_value<unsigned>(nc, "layer2_kernelPaddingX"), 0u);
  EXPECT_EQ(att_value<unsigned>(nc, "layer3_kernelPaddingX"), 0u);
}

TEST(KernelPadding, SourceSmallerThanKernel) {
  NetworkSpec spec;
  LayerSpec in;
  in.name = "In";
  in.n = {2, 7, 1, 1};
  LayerSpec conv;
  conv.name = "Conv";
  conv.type = LayerType::Convolutional;
  conv.sources = {"In"};
  conv.kernel = {5, 3, 1};
  conv.kernel_stride = {2, 2, 1};
  conv.kernel_dimensions = 2;
  spec.layers = {in, conv};
  // x: 2 < 5 => (5 - 2 + 1) / 2 = 2; y: 7 >= 3 with stride 2 => 0.
  EXPECT_EQ(kernel_padding(spec, spec.layers[1]), (std::array<uint32_t, 3>{2, 0, 0}));
  spec.layers[1].kernel_stride = {1, 1, 1};
  EXPECT_EQ(kernel_padding(spec, spec.layers[1]), (std::array<uint32_t, 3>{2, 1, 0}));
  spec.layers[1].type = LayerType::FullyConnected;
  EXPECT_EQ(kernel_padding(spec, spec.layers[1]), (std::array<uint32_t, 3>{0, 0, 0}));
}

}  // namespace
}  // namespace nn::test

namespace nn::test {
namespace {

// An Output layer's Sampling (ours: layer<i>_nn_samplingNegatives/_nn_samplingDistribution)
// comes back as written.
TEST(NetworkFileRoundTrip, SamplingKeepsNegativesAndDistribution) {
  ScratchDir dir;
  NetworkFile original = rich_network_file();
  bool set = false;
  for (LayerSpec& l : original.spec.layers)
    if (l.kind == LayerKind::Output && !set) {
      l.sampling.negatives = 777;
      l.sampling.distribution = SamplingDistribution::Popularity;
      set = true;
    }
  ASSERT_TRUE(set);
  write_network_file(dir.file("sampled.nc"), original);
  const NetworkFile loaded = read_network_file(dir.file("sampled.nc"));
  expect_same_network_file(original, loaded);
  bool found = false;
  for (const LayerSpec& l : loaded.spec.layers)
    found |=
        l.sampling.negatives == 777 && l.sampling.distribution == SamplingDistribution::Popularity;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace nn::test
