// Public API: a Trainer trains a Model on Datasets with an optimizer, one epoch at a time, and
// reports each epoch (loss, examples/s) to a callback that may stop training early. It is the
// engine's training loop (the one nn-train runs): same shuffles, denoising, optimizers and, under
// mpirun, the same data parallelism, so a Trainer with a CDL file's settings and seed computes
// exactly what nn-train computes from that file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/dataset.h"
#include "nn/model.h"

namespace nn::api {

struct TrainSettings {
  uint32_t epochs = 1;
  uint32_t minibatch = 1024;
  std::string optimizer = "SGD";  // SGD, Momentum, AdaGrad, Nesterov, RMSProp, AdaDelta, Adam
  float alpha = 0.1f;             // learning rate
  float lambda = 0.001f;          // L2 weight decay
  float lambda1 = 0.0f;           // L1 weight decay
  float mu = 0.9f;                // momentum / RMSProp decay / Adam beta1
  float mu1 = 0.999f;             // Adam beta2
  int alpha_interval = 0;         // epochs between alpha *= alpha_multiplier (0 = never)
  float alpha_multiplier = 0.5f;
  uint64_t seed = 1;            // shuffles, dropout and denoising masks
  std::optional<bool> shuffle;  // default: the network's ShuffleIndices
  std::string checkpoint_name;  // "" = no checkpoints; else "<name><epoch>.nc"
  int checkpoint_interval = 0;  // epochs between checkpoints
  // Progress lines (training start, validation); null = silent.
  std::function<void(const std::string&)> log;
  // Profiling (docs/performance.md; as TrainJob's fields of the same names): at the end of each
  // run(), the time per phase and layer of the steps so far to `log`, and a Chrome trace of the
  // first `trace_steps` steps of every epoch to the file `trace` ("" = none).
  bool profile = false;
  std::string trace;
  uint32_t trace_steps = 20;
  // "Exact", "Dense" or "Lazy": as TrainJob::sparse_update.
  std::string sparse_update = "Exact";
  // TensorBoard (docs/monitoring.md; as TrainJob's fields of the same names): a directory for
  // the event file ("" = none), written as epochs end (rank 0 only), and the minibatch loss
  // every `tensorboard_interval` updates (0 = epochs only). The file is started fresh.
  std::string tensorboard;
  uint32_t tensorboard_interval = 0;
  // A network file to start from (docs/retraining.md; as TrainJob::warm_start): its arrays
  // matched to the datasets' items by name, applied when the Trainer is made. "" = none.
  std::string warm_start;
};

struct EpochStats {
  uint64_t epoch = 0;  // 1-based
  double loss = 0;     // mean per example: data term + regularisation
  double data_loss = 0;
  double reg_loss = 0;
  double seconds = 0;
  double examples_per_second = 0;
  double alpha = 0;
};

// Return false to stop after this epoch.
using EpochCallback = std::function<bool(const EpochStats&)>;

class Trainer {
 public:
  // `data` holds a dataset for every input and output layer (matched by the layers' DataSet
  // names; ConfigError names what is missing or of the wrong size). The model is trained in place.
  Trainer(std::shared_ptr<Model> model, std::vector<Dataset> data, TrainSettings settings);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Runs the epochs not yet run (settings.epochs in all). Under mpirun the callback runs on
  // rank 0 only, so stopping early from it is for single-process runs. With a TensorBoard
  // directory, the run's end record is written when the last epoch ends, or, for a Trainer
  // destroyed before that, as a run that did not finish.
  std::vector<EpochStats> run(const EpochCallback& on_epoch = nullptr);
  uint64_t epoch() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// A CDL command file with Command "Train", run as nn-train runs it (same network, data, settings
// and seed, checkpoints included; no per-epoch log file), writing its Results file. `resume`:
// continue from the newest checkpoint that reads back, as nn-train --resume (null: the file's
// TrainingParameters.Resume, by default never). Returns the trained model.
std::shared_ptr<Model> train_cdl(const std::string& cdl_path,
                                 const EpochCallback& on_epoch = nullptr,
                                 const ModelOptions& options = {},
                                 const std::function<void(const std::string&)>& log = nullptr,
                                 std::optional<bool> resume = std::nullopt);

}  // namespace nn::api
