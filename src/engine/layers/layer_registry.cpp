// Layer table.
#include "layers/layer_registry.h"

#include <functional>

#include "core/error.h"
#include "layers/convolutional_layer.h"
#include "layers/fully_connected_layer.h"
#include "layers/input_layer.h"
#include "layers/pooling_layer.h"
#include "layers/variational_layer.h"

namespace nn {
namespace {

using Factory = std::function<std::unique_ptr<Layer>(const LayerSpec&, uint32_t, bool)>;

struct Entry {
  LayerKind kind;  // Hidden entries also serve Output layers
  LayerType type;
  Factory make;
};

const Entry kLayers[] = {
    {LayerKind::Input, LayerType::FullyConnected,
     [](const LayerSpec& s, uint32_t i, bool sp) {
       return std::make_unique<InputLayer>(s, i, sp);
     }},
    {LayerKind::Hidden, LayerType::FullyConnected,
     [](const LayerSpec& s, uint32_t i, bool) {
       return std::make_unique<FullyConnectedLayer>(s, i);
     }},
    {LayerKind::Hidden, LayerType::Convolutional,
     [](const LayerSpec& s, uint32_t i, bool) {
       return std::make_unique<ConvolutionalLayer>(s, i);
     }},
    {LayerKind::Hidden, LayerType::Pooling,
     [](const LayerSpec& s, uint32_t i, bool) { return std::make_unique<PoolingLayer>(s, i); }},
    {LayerKind::Hidden, LayerType::Variational,
     [](const LayerSpec& s, uint32_t i, bool) { return std::make_unique<VariationalLayer>(s, i); }},
};

}  // namespace

std::unique_ptr<Layer> create_layer(const LayerSpec& spec, uint32_t index, bool sparse_input,
                                    const std::string& where) {
  if (spec.kind == LayerKind::Target) throw ConfigError(where + ": Kind Target is not supported");
  // Input layers hold data whatever their Type says (DSSTNE ignores it too).
  const LayerType type = spec.kind == LayerKind::Input ? LayerType::FullyConnected : spec.type;
  const LayerKind kind = spec.kind == LayerKind::Output ? LayerKind::Hidden : spec.kind;
  // Pooling layers apply no activation (any other Activation is ignored there). MaxOut is
  // rejected rather than ignored: it asks for k pre-activations per unit, which pooling does not
  // compute, and it is easily confused with the Pooling Function Maxout.
  if (spec.activation == Activation::MaxOut && type == LayerType::Pooling)
    throw ConfigError(where +
                      ": Activation MaxOut is not supported on Pooling layers (they have no "
                      "activation function); for a pooling maximum use \"Function\": \"Maxout\" "
                      "or \"Max\"");
  for (const Entry& e : kLayers)
    if (e.kind == kind && e.type == type) return e.make(spec, index, sparse_input);
  throw ConfigError(where + ": Type " + to_string(spec.type) + " is not supported for " +
                    to_string(spec.kind) + " layers yet");
}

}  // namespace nn
