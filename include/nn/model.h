// Public API: a Model is a network's topology and parameters (weights, biases, batch
// normalisation statistics), loaded from a network .nc file or built from a JSON description and
// the shapes of its datasets. Evaluators (nn/evaluator.h) run it, Trainers (nn/trainer.h) train
// it. Errors are thrown as nn::Error subclasses (ConfigError, DataError, ...) with a message that
// names the file, layer or argument at fault.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nn::api {

// Where a model lives and how it computes.
struct ModelOptions {
  std::string backend = "cpu";  // "cpu", "cuda" or "auto"
  int threads = 0;              // CPU threads; 0 = every CPU this process may use
  // CUDA device index (backend "cuda", or "auto" picking CUDA); -1: the node-local MPI rank
  // (as the launcher announces it) modulo the host's GPUs, so 0 for one process.
  int device = -1;
  // Every row's outputs depend on that row alone, not on the other rows of its batch (CPU
  // backend: a fixed-order gemm instead of OpenBLAS's, im2col convolutions). For serving, where
  // concurrent requests share a minibatch; a little slower than the default for large batches.
  bool batch_invariant = false;
  // Arithmetic of the dense products: "fp32", or "bf16" (BF16 operands, FP32 accumulation and
  // FP32 weights; CPUs with AVX512-BF16 through oneDNN, CUDA devices of compute capability 8.0
  // or later; docs/wide-outputs.md, "BF16 arithmetic"). "" takes the network's "Precision" key,
  // else fp32. ConfigError where BF16 cannot run, and with batch_invariant (BF16 products are
  // not batch-invariant).
  std::string precision;
};

// The shape of one dataset a JSON network names (its layers' "DataSet"), for "N": "auto" sizes
// and for choosing sparse or dense input layers.
struct DataShape {
  uint32_t width = 1, height = 1, length = 1;
  bool sparse = false;
};

struct LayerInfo {
  std::string name;
  std::string kind;             // "Input", "Hidden", "Output", "Target"
  std::string type;             // "FullyConnected", "Convolutional", "Pooling"
  std::string dataset;          // the DataSet it is bound to ("" for hidden layers)
  std::vector<uint32_t> shape;  // N as given (1 to 4 dimensions)
  uint64_t units = 0;           // product of the shape
  bool sparse_input = false;    // an input layer fed CSR batches
};

struct WeightInfo {
  std::string name;           // "Hidden<-Input:weights", "Hidden<-Input:bias", "Hidden:scaleBN"
  std::string layer;          // the layer that owns it
  std::vector<size_t> shape;  // [source units][units] for fully connected matrices, else flat
  size_t size = 0;
};

class Model {
 public:
  // Reads a trained network file (nn-train's result or checkpoint, or DSSTNE's layout). Input
  // layers marked "Sparse" in the network take CSR batches, the others dense ones.
  static std::shared_ptr<Model> load(const std::string& path, const ModelOptions& options = {});
  // Builds a network from a JSON description (a file path, or the text itself when it starts
  // with '{') and initialises it with `seed`. `datasets` gives the shape of every dataset the
  // layers name (needed for "auto" sizes; an input's `sparse` picks CSR or dense input).
  static std::shared_ptr<Model> from_json(const std::string& json,
                                          const std::map<std::string, DataShape>& datasets = {},
                                          uint64_t seed = 1, const ModelOptions& options = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // Writes the network file atomically (readable by nn-predict and Model::load).
  void save(const std::string& path) const;

  const std::string& name() const;
  std::string backend_name() const;
  std::vector<LayerInfo> layers() const;
  const LayerInfo& layer(const std::string& name) const;  // ConfigError naming the layers
  std::vector<std::string> input_layers() const;
  std::vector<std::string> output_layers() const;
  // The names of a layer's units (its items) in unit order, "" for an unnamed unit, when the
  // network knows them (docs/retraining.md: nn-train copies them from the datasets it trained
  // on); null otherwise. ConfigError naming the layers when there is no such layer.
  std::shared_ptr<const std::vector<std::string>> items(const std::string& layer) const;

  std::vector<WeightInfo> weights() const;
  const WeightInfo& weight(const std::string& name) const;  // ConfigError naming the weights
  // Copies the values out / in (host memory, row-major as `shape`). set_weights throws
  // ConfigError when `count` differs from the weight's size. Not safe while Evaluators of this
  // model run on other threads (they read the same memory).
  std::vector<float> get_weights(const std::string& name) const;
  void set_weights(const std::string& name, const float* values, size_t count);

  struct Impl;  // engine side (src/engine/api/model_impl.h)
  Impl& impl() const { return *impl_; }

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace nn::api
