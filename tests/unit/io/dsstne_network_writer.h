// Test helper: writes a network .nc file the way DSSTNE's NNNetwork::SaveNetCDF does
// (docs/file-formats.md, "Network files"), using the netCDF API directly and only DSSTNE's
// attribute names (no "nn_" extras), so tests can check that networks trained by DSSTNE load
// here. Independent of model_io on purpose. Reusable: describe the network with the plain structs
// below (numeric codes as in config/enums.h) and call write_dsstne_network().
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace nn::test {

struct DsstneLayer {
  std::string name;
  uint32_t kind = 1;  // Input=0, Hidden=1, Output=2, Target=3
  uint32_t type = 0;  // FullyConnected=0, Convolutional=1, Pooling=2
  uint32_t pooling = 0;
  std::string dataset;
  uint32_t nx = 1, ny = 1, nz = 1, nw = 1, dimensions = 1;
  uint32_t kernel_x = 1, kernel_y = 1, kernel_z = 1, kernel_dimensions = 1;
  uint32_t stride_x = 1, stride_y = 1, stride_z = 1;
  uint32_t padding_x = 0, padding_y = 0, padding_z = 0;
  float p_dropout = 0.0f;
  uint32_t weight_init = 0;
  float weight_init_scale = 1.0f, bias_init = 0.0f, weight_norm = 0.0f, delta_norm = 0.0f;
  uint32_t activation = 0;  // Sigmoid
  float sparseness_penalty_p = 0.0f, sparseness_penalty_beta = 0.0f;
  float relu_slope = 1.0f, elu_alpha = 1.0f, selu_lambda = 1.050701f;  // DSSTNE's defaults
  uint32_t attributes = 0;  // Sparse=1, Denoising=2, BatchNormalization=4
  std::vector<std::string> sources, skips;
  // Written as layer<i>_bnDim + scaleBN/biasBN/runningMeanBN/runningVarianceBN when non-empty.
  std::vector<float> bn_scale, bn_bias, bn_running_mean, bn_running_variance;
};

struct DsstneWeight {
  std::string input_layer, output_layer;
  uint64_t width = 1, height = 1, length = 1, depth = 1, breadth = 1;
  bool shared = false, transposed = false, locked = false;
  std::string source_input_layer, source_output_layer;
  float norm = 0.0f;
  std::vector<float> weights;  // [input][output]; not written when shared or empty
  std::vector<float> bias;     // not written when empty
};

struct DsstneNetwork {
  float version = 0.9f;
  std::string name = "dsstne";
  uint32_t kind = 0;            // FeedForward
  uint32_t error_function = 2;  // CrossEntropy
  int maxout_k = 2;
  float decay = 0.0f;
  float lrn_k = 2.0f, lrn_alpha = 1e-4f, lrn_beta = 0.75f;
  int lrn_n = 5;
  float sparseness_penalty_p = 0.0f, sparseness_penalty_beta = 0.0f;
  float denoising_p = 0.0f;
  float delta_boost_one = 1.0f, delta_boost_zero = 1.0f;
  float smce_one_scale = 1.0f, smce_zero_scale = 1.0f;
  float smce_one_target = 0.9f, smce_zero_target = 0.1f;
  bool shuffle_indices = true;
  std::string checkpoint_name = "checkpoint";
  int checkpoint_interval = 0, checkpoint_epochs = 0;
  std::vector<DsstneLayer> layers;
  std::vector<DsstneWeight> weights;
  // Attribute or variable names to leave out (e.g. "layer1_Nx", "decay", "weight0_weights"),
  // for tests of missing items and of DSSTNE's optional attributes.
  std::set<std::string> omit;
};

// A fully connected layer of `units` neurons fed by `sources`.
DsstneLayer dsstne_fc_layer(const std::string& name, uint32_t kind, uint32_t units,
                            std::vector<std::string> sources = {}, uint32_t activation = 0,
                            const std::string& dataset = "");

// The weight between two fully connected layers (width = output units, height = input units),
// with weights[i * n_out + o] = first + step * (i * n_out + o) and bias[o] = bias_first + o.
DsstneWeight dsstne_fc_weight(const std::string& input_layer, uint32_t n_in,
                              const std::string& output_layer, uint32_t n_out, float first = 0.0f,
                              float step = 0.01f, float bias_first = 0.5f);

// Writes `net` to `path` (NETCDF4, replacing any file there). Throws std::runtime_error.
void write_dsstne_network(const std::string& path, const DsstneNetwork& net);

}  // namespace nn::test
