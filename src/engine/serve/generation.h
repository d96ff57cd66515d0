// One loaded version of the served network: the Model, one Evaluator per worker (each worker
// runs its batches on its own), the input and output layers with the names of their units, and
// the identity of the file it came from. A request keeps the generation it was accepted with
// until it is answered, so a reload never pulls a model from under a batch.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nn/evaluator.h"
#include "nn/model.h"
#include "nn/serve.h"

namespace nn::serve {

// What says that a file was replaced: inode, size and modification time (all zero when the
// file cannot be stat'ed).
struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileIdentity& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
  }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
};
FileIdentity identify(const std::string& path);

// Names of a layer's units from an index file (label<TAB>index), both ways.
struct UnitNames {
  std::unordered_map<std::string, uint32_t> column;  // name -> unit
  std::vector<std::string> name;                     // unit -> name ("" = unnamed)
};

struct Generation {
  uint64_t version = 0;
  std::shared_ptr<const api::Model> model;
  std::vector<std::unique_ptr<api::Evaluator>> evaluators;  // one per worker
  std::string input_layer, output_layer;
  uint64_t input_units = 0, output_units = 0;
  UnitNames inputs, outputs;
  // Output units without a name (the layer's padding past the index): left out of every ranking,
  // since an answer could not name them.
  std::vector<uint32_t> unnamed_outputs;
  FileIdentity file;
};

// Loads options.network and the index files into generation `version` with `workers`
// Evaluators. ArgumentError when the network does not suit serving (several input layers) or an
// index names more units than its layer has; the engine's errors for unreadable files.
std::shared_ptr<Generation> load_generation(const api::ServeOptions& options, int workers,
                                            uint64_t version);

}  // namespace nn::serve
