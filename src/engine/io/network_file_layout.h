// The network file layout shared by the writer, the reader and the validator: attribute and
// variable names (DSSTNE's, docs/file-formats.md "Network files", plus ours, all starting with
// "nn_"), and the three steps behind write_network_file/read_network_file. Private to the network
// file code in io/.
//
// Our additions (DSSTNE ignores them):
//   nn_format_version                        uint, kNetworkFormatVersion
//   nn_RELUSlope, nn_ELUAlpha, nn_SELULambda  float, the network-wide defaults
//   nn_ActivationMax                          float (optional: older files use the default)
//   layer<i>_nn_activationMax                 float (optional, as nn_ActivationMax)
//   layer<i>_nn_parallel                      uint, only when not Auto (1 Data, 2 Model)
//   nn_SoftMaxTargets                         uint, only when not Normalized (1 Raw)
//   layer<i>_nn_normalize                     uint, Input layers, only when not None (1 L2)
//   layer<i>_nn_klBeta                        float, Variational layers (layer<i>_type 3)
//   layer<i>_nn_klAnnealSteps                 uint64, Variational layers
//   layer<i>_nn_samplingNegatives             uint, Output layers with Sampling only
//   layer<i>_nn_samplingDistribution          uint, with it (0 Uniform, 1 Popularity)
//   layer<i>_nn_sharedWeights                uint count S, then per j < S:
//     layer<i>_nn_sharedWeight<j>_sourceInputLayer / _sourceOutputLayer / _inputLayer  text
//     layer<i>_nn_sharedWeight<j>_transposed                                           uint
//   dim layer<i>_nn_featureDim, string var layer<i>_nn_features: the layer's item names in
//     index order ("" for an unnamed index), Input/Output layers bound to named datasets
//   nn_training_epoch/_step/_rng_state/_seed  uint64   (only when TrainingState::present)
//   nn_training_batch uint64, nn_training_epoch_loss double  (only when stopped mid-epoch)
//   nn_training_optimizer/_minibatch          uint
//   nn_training_alpha/_lambda/_lambda1/_mu/_mu1/_smoothed_error  float
//   weight<i>_nn_states, weight<i>_nn_bias_states                uint counts
//   dims weight<i>_nn_stateDim / weight<i>_nn_biasStateDim, float vars
//     weight<i>_nn_state<k> / weight<i>_nn_bias_state<k>
//   layer<i>_nn_scaleBN_states, layer<i>_nn_biasBN_states        uint counts
//   dim layer<i>_nn_bnStateDim, float vars layer<i>_nn_scaleBN_state<k> / _nn_biasBN_state<k>
#pragma once

#include <cstdint>
#include <netcdf>
#include <string>

#include "io/netcdf_storage.h"
#include "io/network_file.h"

namespace nn {

// Version of our extras; files with a larger value are refused rather than misread.
constexpr uint32_t kNetworkFormatVersion = 1;

// Layer attribute bits (layer<i>_attributes).
constexpr uint32_t kLayerSparse = 1, kLayerDenoising = 2, kLayerBatchNormalization = 4;

inline std::string layer_key(size_t i, const std::string& key) {
  return "layer" + std::to_string(i) + "_" + key;
}
inline std::string weight_key(size_t i, const std::string& key) {
  return "weight" + std::to_string(i) + "_" + key;
}

// Checks everything a reader relies on (names resolve, sizes agree, values finite, codes in
// range, shared weights consistent with the spec). Throws DataError "<file>: <attribute or
// variable>: <problem>" naming the item as it is (or would be) stored in the file.
void validate_network_file(const NetworkFile& net, const std::string& file);

// Writes every attribute, dimension and variable into a freshly created NETCDF4 file.
// Throws netCDF exceptions; the caller turns them into IoError.
void write_network_layout(const netCDF::NcGroup& nc, const NetworkFile& net);

// Builds a NetworkFile from an open file (ours or DSSTNE's); not yet validated. Variable sizes are
// checked against `storage` (when given) and the memory budget before they are read.
NetworkFile read_network_layout(const netCDF::NcFile& nc, const std::string& file,
                                const NetcdfStorage* storage = nullptr);

}  // namespace nn
