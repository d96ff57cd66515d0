// Public API: a training run as a whole, the way nn-train carries it out: datasets read from
// NetCDF files and bound to a JSON network, the network built (split over the ranks under
// mpirun where the parallel plan says so), trained with atomic checkpoints, optional resumption
// from the newest one, held-out validation with early stopping, a per-epoch JSON-lines log and a
// loss-curve picture beside the result, a TensorBoard event file when asked for, and the result
// file written atomically. Also the
// gradient check of a freshly initialised network (CDL Command "Validate").
// A TrainJob is made from a CDL command file (train_job(CommandFile)) or field by field; both
// mean exactly the run nn-train makes of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/command_file.h"
#include "nn/log.h"
#include "nn/model.h"
#include "nn/trainer.h"

namespace nn::api {

// How layers are split over the ranks under mpirun, for the layers without a "Parallel" key of
// their own: Auto (the rule of docs/scaling.md decides per layer), Data (split nothing), Model
// (split every layer that can be).
enum class Parallelism { Auto, Data, Model };

struct TrainJob {
  std::string network_json;                   // JSON network description (a path)
  std::vector<std::string> data_files;        // NetCDF files with the inputs and outputs
  std::string results = "network.nc";         // network written at the end; "-": standard output
  std::vector<std::string> validation_files;  // held-out datasets (empty: no validation)

  uint32_t epochs = 1;  // in all (a resumed run continues up to this)
  uint32_t minibatch = 1024;
  std::string optimizer = "SGD";  // one of optimizer_names(), any case
  float alpha = 0.1f;             // learning rate
  float lambda = 0.0f;            // L2 weight decay
  float lambda1 = 0.0f;           // L1 weight decay
  float mu = 0.9f;                // momentum / RMSProp decay / Adam beta1
  float mu1 = 0.999f;             // Adam beta2
  int alpha_interval = 0;         // epochs between alpha *= alpha_multiplier (0 = never)
  float alpha_multiplier = 1.0f;
  uint64_t seed = 1;            // initialisation, shuffles, dropout and denoising masks
  std::optional<bool> shuffle;  // default: the network's ShuffleIndices

  std::string checkpoint_name;  // "" = no checkpoints; else "<name><epoch>.nc"
  int checkpoint_interval = 0;  // epochs between checkpoints
  int checkpoints_kept = 0;     // newest checkpoints kept on disk (0 = all)
  bool resume = false;          // continue from the newest checkpoint, when there is one
  // A network file to start from instead of random weights (docs/retraining.md): its arrays,
  // matched to this run's data by feature name (kept items keep their rows and columns, new ones
  // are initialised as the network says, items that left are dropped); hidden layers copied
  // where their shapes agree. "" = none. A resumed run continues its checkpoint instead.
  std::string warm_start;

  uint32_t validation_interval = 1;  // epochs between evaluations of the validation set
  uint32_t validation_k = 10;        // cut-off of recall@K / NDCG@K
  // Rank each example's input items too (default: left out of its ranking when the input and
  // the output share their items, as nn-predict --target does).
  bool validation_rank_input_items = false;
  uint32_t patience = 0;  // evaluations without improvement before stopping (0: never)
  bool keep_best = true;  // write the best evaluated network, not the last one

  // Streaming training input (docs/large-datasets.md, "Streaming training"): the files are read
  // in windows of examples on a reader thread and shuffled by blocks. nullopt: only when the
  // training data do not fit the memory budget; true: always; false: never (too big is an error).
  std::optional<bool> stream;
  // "Gradient" (minibatch steps) or "LeastSquares": the weights of a linear Input -> Output
  // network with the L2 error solved in closed form (docs/quality.md, "Closed-form training").
  std::string solver = "Gradient";
  bool fit_bias = true;  // LeastSquares: solve the biases too (false: they stay 0)
  // LeastSquares, an autoencoder without biases: each output's weight from its own input is held
  // at 0, so no item predicts itself (EASE's constraint; with Denoising, EDLAE).
  bool zero_diagonal = false;
  // How the weight matrices fed by sparse inputs are updated (docs/wide-outputs.md, "Row-sparse
  // input updates"): "Exact" (any case; the touched rows only wherever that equals the dense
  // update, skipped optimizer steps caught up in closed form; otherwise densely), "Dense" (every
  // weight every step) or "Lazy" (the touched rows only; untouched rows' optimizer state is not
  // decayed, as LazyAdam).
  std::string sparse_update = "Exact";
  // Examples per chunk and chunks per window of the block shuffle; 0: sized from the budget.
  uint64_t stream_chunk = 0;
  uint64_t stream_window_chunks = 0;

  // Per-epoch JSON-lines log "<results stem>.epochs.jsonl" and loss curve "<stem>.curve.png"
  // (drawn when gnuplot or matplotlib is installed), written beside the results.
  bool epoch_log = true;
  // TensorBoard event file (docs/monitoring.md): a directory ("" = none) that gets
  // events.out.tfevents.nn-train with the run's hyper-parameters (hparams) and every epoch's
  // scalars (the epoch log's numbers), and minibatch scalars every `tensorboard_interval` updates
  // (0: none). Rank 0 writes it; a resumed run keeps the records up to its checkpoint.
  std::string tensorboard;
  uint32_t tensorboard_interval = 0;

  // Profiling (docs/performance.md). `profile`: at the end of the run, log the time per phase
  // (data, forward, loss, backward, communication, update) and layer of the training step with
  // each one's share of the step (rank 0 only under mpirun). `trace`: a file ("" = none) for a
  // Chrome trace of the first `trace_steps` steps of every epoch (0: every step; at most 200,000
  // events), which ui.perfetto.dev and chrome://tracing open. Either one times the steps (on the
  // CUDA backend with events on its stream, read at epoch ends, and NVTX ranges for Nsight
  // Systems); with both off nothing is timed.
  bool profile = false;
  std::string trace;
  uint32_t trace_steps = 20;

  std::string backend = "auto";  // "cpu", "cuda" or "auto"
  int threads = 0;               // CPU threads; 0 = every CPU this process may use
  int device = -1;               // CUDA device; -1 = this rank's default (nn/process.h)
  // Arithmetic of the dense products: "fp32" or "bf16" (any case; BF16 operands, FP32
  // accumulation and FP32 master weights: docs/wide-outputs.md); "" = the network's "Precision"
  // key, else fp32.
  std::string precision;
  // BF16 on a CPU is measured against FP32 first and, where it is the slower, the run says so and
  // computes in FP32 (docs/wide-outputs.md, "When BF16 is slower"); true keeps BF16 regardless.
  bool force_precision = false;
  Parallelism parallel = Parallelism::Auto;
  // The interconnect between the ranks under mpirun (docs/scaling.md, "Predicting scaling"): a
  // preset ("nvlink-h100", "ib-ndr", "pcie-h100", "eth-10g", "eth-1g") or a file written by
  // `nn-train --measure-link`. Set, the Auto layers take the mode predicted faster over it from
  // the floors of this machine; "" (the default): the mode that moves fewer bytes.
  std::string link;
  // Sampled output training (the CDL's TrainingParameters "Sampling", docs/wide-outputs.md) for
  // every Output layer without a "Sampling" key of its own: negatives per minibatch (0: none)
  // and "uniform" or "popularity" (any case).
  uint32_t sampling_negatives = 0;
  std::string sampling_distribution = "uniform";
};

// The run a CDL command file (Command "Train" or "Validate") describes: its Network, Data,
// TrainingParameters, RandomSeed (`default_seed` when it has none), Parallel, Backend, Device and
// Precision (the defaults above when absent).
TrainJob train_job(const CommandFile& cdl, uint64_t default_seed = 1);

// The optimizer names a TrainJob takes, as the tools list them.
std::vector<std::string> optimizer_names();

// Called at the start of every update with its 1-based step number, on every rank; whatever it
// throws ends the run (nn-train's tests inject failures with it).
using StepCallback = std::function<void(uint64_t step)>;

// Carries out the job: logs each dataset, the parallel plan, the model summary and every epoch
// to `log` (rank 0's lines only matter: call it with a sink that prints on rank 0), writes
// checkpoints, the result file and the epoch log. `on_epoch` (rank 0 only) may stop training
// after an epoch by returning false; the result is written all the same. Returns the trained
// model. Throws nn::Error subclasses (DivergenceError naming the last intact checkpoint).
std::shared_ptr<Model> run_training(const TrainJob& job, const LogSink& log,
                                    const EpochCallback& on_epoch = nullptr,
                                    const StepCallback& on_step = nullptr);

// `nn-train --plan N`: the job's network, data and settings, built in this one process as for
// training, and the predicted time per layer, step and epoch on `ranks` processes over `link`
// ("nvlink-h100", "ib-ndr", "pcie-h100", "eth-10g" or "eth-1g"), with each layer's data or model
// choice, communication and memory per rank; one line each to `log`, the last one
// "predicted epoch: <seconds> s on <N> ranks (1 rank: <seconds> s)" (docs/scaling.md,
// "Predicting scaling"). Trains nothing, writes nothing. ArgumentError for fewer than 1 rank or
// an unknown link; ConfigError under mpirun.
// `link` "" takes job.link, else eth-10g. With `profile_steps` > 0 the compute is measured:
// that many training steps are timed (after 3 untimed ones) on this process's backend and
// threads, and each part's predicted time is scaled from its measurement; 0: floors alone.
// `device` (non-empty: "h100-sxm", "h200") predicts for that device instead, from its peaks,
// scaled to its measured one-rank step `device_step_ms` when that is positive.
void run_scaling_plan(const TrainJob& job, int ranks, const std::string& link, const LogSink& log,
                      uint32_t profile_steps = 0, const std::string& device = "",
                      double device_step_ms = 0.0);

// `mpirun -np N nn-train --measure-link FILE`: times all-reduce, all-gather and reduce-scatter
// of 64 B to 32 MB between the ranks (and, when `max_bytes` is larger, of sizes growing 8-fold
// up to it: a network whose gradients are larger exchanges them in messages that large), fits a
// latency and a bandwidth (model/link_model.h) and writes them with the timings to `path` on
// rank 0, for --link / TrainJob::link. Every rank calls it. ArgumentError with one process.
void measure_link(const std::string& path, const LogSink& log, uint64_t max_bytes = 0);

// The gradient check: the job's network built and initialised as for training (with job.seed),
// backward()'s gradients compared with finite differences on the first minibatch.
// The loss is float32 arithmetic summed in double; its rounding noise (measured per array)
// sets each entry's step and widens its tolerance, so a large loss (a recommender's, summed over
// thousands of outputs) does not fail correct gradients. An entry next to a kink (ReLU, max
// pooling) passes when its gradient is the slope on one side.
struct GradientCheckSettings {
  double epsilon = 1e-3;        // step of entry w: epsilon * max(1, |w|), larger for a noisy loss
  bool central = true;          // central differences; false: one-sided, as DSSTNE
  double abs_tolerance = 2e-3;  // an entry passes when |backward - finite difference| <=
  double rel_tolerance = 2e-2;  //   abs_tolerance + rel_tolerance * |finite difference| +
  double noise_factor = 8.0;    //   noise_factor * (the loss's rounding noise) / step
  size_t max_entries = 1000;    // entries checked per array (larger ones sampled); 0 = all
};

struct GradientCheckResult {
  size_t arrays = 0;                // weight and bias arrays checked
  std::vector<std::string> failed;  // the arrays with entries outside the tolerance
  bool passed() const { return failed.empty(); }
};

// Logs what is checked, the loss on the batch, one PASS/FAIL line per array and, when all pass,
// a summary line; a failure is returned, not thrown (the caller reports it).
GradientCheckResult run_gradient_check(const TrainJob& job, const GradientCheckSettings& check,
                                       const LogSink& log);

}  // namespace nn::api
