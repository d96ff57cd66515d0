// The explicit table of layer implementations: one line per (kind, type). Adding a layer type
// means one new file plus one line in layer_registry.cpp plus its tests.
#pragma once

#include <memory>
#include <string>

#include "layers/layer.h"

namespace nn {

// Creates the layer for `spec`. `sparse_input` tells Input layers whether their dataset is
// sparse. Throws ConfigError("<where>: ...") for unsupported kinds/types.
std::unique_ptr<Layer> create_layer(const LayerSpec& spec, uint32_t index, bool sparse_input,
                                    const std::string& where);

}  // namespace nn
