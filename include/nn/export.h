// Public API: a trained network file -> an ONNX model (nn-export; docs/serving.md, "ONNX"), for
// runtimes such as onnxruntime. The model's first input is the (first) input layer as a dense
// float tensor [batch, units] (a sparse input layer takes its rows densely), its first output the
// output layer's scores [batch, units], named after the layers; with top_k it also outputs the
// k best scores and their columns per row. Fully connected, convolutional (1-D to 3-D), Max and
// Average pooling layers, batch normalisation, skips, shared weights, the elementwise activations
// and SoftMax are exported; dropout is the identity it is at inference. Anything else (MaxOut, LRN,
// other pooling functions) is refused with a ConfigError naming the layer, and no file is
// written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/log.h"

namespace nn::api {

struct ExportJob {
  std::string network;  // trained network .nc
  std::string output;   // .onnx file (written atomically); "-": standard output
  uint32_t top_k = 0;   // also output the top k per row (0: no)
};

struct ExportReport {
  std::vector<std::string> inputs, outputs;  // graph input and output names
  // Layers whose items (docs/retraining.md) are in the model's metadata, "nn_items:<layer>":
  // their units' names in unit order, one per line.
  std::vector<std::string> item_layers;
  uint64_t nodes = 0, parameters = 0, bytes = 0;
  int opset = 0;
};

// Reads the network file, builds the graph, checks it with ONNX's checker, writes it. Throws
// ConfigError for a layer that cannot be exported, ArgumentError for a top_k over the output
// layer's units, the engine's errors for unreadable files.
ExportReport export_onnx(const ExportJob& job, const LogSink& log = null_log());

}  // namespace nn::api
