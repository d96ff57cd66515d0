// Engine side of the public Model (include/nn/model.h): the backend, the resolved spec and the
// Network that owns the parameters. Tools and the other API classes reach the engine objects
// through it; users of the library never include it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "config/network_spec.h"
#include "io/network_file.h"
#include "model/network.h"
#include "nn/model.h"

namespace nn::api {

struct Model::Impl {
  std::unique_ptr<Backend> backend;
  // Evaluators on a backend that cannot be called from two threads at once and gives no peer
  // (CUDA without peer backends, backend/cuda_paths.h) take turns on it through this lock.
  std::mutex backend_turns;
  std::map<std::string, bool> sparse_inputs;  // input layer -> fed CSR batches
  std::unique_ptr<Network> net;
  std::string name;
  std::vector<LayerInfo> layers;
  std::vector<WeightInfo> weights;
  std::vector<Parameter*> parameters;  // parallel to `weights`

  // Builds the network of `spec` (sizes resolved) on `backend`, with `arrays` loaded when given,
  // else initialised with `seed`. The one place a Model's network is made (Model::load,
  // Model::from_json, the tools).
  static std::shared_ptr<Model> create(std::unique_ptr<Backend> backend, NetworkSpec spec,
                                       std::map<std::string, bool> sparse_inputs,
                                       const NetworkFile* arrays, uint64_t seed,
                                       const NetworkParallel& parallel = {});
  // The network file's arrays into a new Model; input layers fed as `sparse_inputs` says (the
  // layers' "Sparse" flags when empty). `parallel`: the ranks that split model-parallel layers
  // (nn-predict under mpirun); one whole network by default.
  static std::shared_ptr<Model> from_file(const NetworkFile& file, const ModelOptions& options,
                                          std::map<std::string, bool> sparse_inputs = {},
                                          const NetworkParallel& parallel = {});
};

// Input layer -> sparse, from the layers' "Sparse" flags.
std::map<std::string, bool> sparse_flags(const NetworkSpec& spec);

}  // namespace nn::api
