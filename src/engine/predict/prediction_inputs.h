// What a prediction job reads before it scores: the trained network file (with a message that
// says so when the file is a JSON description or a dataset instead), the examples (NetCDF
// datasets, or text examples converted in memory with the input feature index) bound to the
// network's input layers, the names of the examples, and the layers it scores and dumps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/network_spec.h"
#include "core/log.h"
#include "data/dataset.h"
#include "data/text_examples.h"
#include "io/network_file.h"
#include "model/binding.h"
#include "model/network.h"

namespace nn {

// The network file at `path`; DataError saying what the file is when it is not a network.
NetworkFile read_network_to_score(const std::string& path);

// Where the examples come from: text examples (`text` non-empty; `input_index` maps their
// features, `analog` keeps their values, `dataset_base` optionally names the input dataset
// "<base>_input") or NetCDF dataset files, named by `sample_index` when given.
struct ExampleSource {
  std::string text;
  std::string input_index;
  bool analog = false;
  std::string dataset_base;
  std::vector<std::string> files;
  std::string sample_index;
  bool remap = false;  // match differing indices and named datasets to the network by name
};

struct PredictionInputs {
  std::vector<ExampleSet> sets;
  FeatureIndex samples;       // the examples' names
  bool have_samples = false;  // false: examples are named by their numbers
  std::string files;          // where the examples came from, for messages
  BoundData bound;            // bound to the network's input layers
  // Example e's name: its label from the sample index, else its number.
  std::string sample_name(uint64_t e) const;
};

// Reads and binds the examples for `spec` (the network read from `network`, named in messages).
// A sample index must list exactly as many samples as the files have examples. With `headers`
// (the files' datasets without their arrays, for streaming) those are bound instead of reading
// the files.
PredictionInputs read_examples(const ExampleSource& source, const NetworkSpec& spec,
                               const std::string& network, const LogSink& log,
                               const std::vector<ExampleSet>* headers = nullptr);

// The layer to score: `requested`, else the network's output layer. ConfigError names the
// layers (with a did-you-mean) when there is no such layer.
std::string scored_layer(const std::string& requested, const NetworkSpec& spec,
                         const std::string& network);

// The layer of `net` (built from `spec`) whose activations a dump writes; ConfigError when it
// does not exist or is a sparse input layer.
Layer& dump_source(Network& net, const NetworkSpec& spec, const std::string& name,
                   const std::string& network);

}  // namespace nn
