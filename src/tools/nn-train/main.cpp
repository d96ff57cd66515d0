// nn-train: trains a network from a CDL command file (nn-train train.cdl) or from DSSTNE
// train's flags (nn-train -c config.json -i in.nc -o out.nc -n net.nc -b 256 -e 10 ...), or
// checks its gradients (CDL Command "Validate", or --validate with the flags). The flags become a
// TrainJob (nn/train_job.h); the library runs it.
#include <cctype>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/cli_support.h"
#include "nn-train/failure_injection.h"
#include "nn/command_file.h"
#include "nn/file_names.h"
#include "nn/train_job.h"

const char* const nn::tool::kToolName = "nn-train";

namespace nn::tool {
namespace {

// The command line: DSSTNE train's flags and ours. With a CDL file the flags given override its
// keys (the options' pointers say which were given).
struct Flags {
  std::string cdl, config, input, output, network, dataset_name;
  uint32_t batch = 1024, epochs = 40;
  float alpha = 0.025f, lambda = 0.0001f, lambda1 = 0.0f, mu = 0.5f, mu1 = 0.0f;
  std::string optimizer = "SGD", backend = "auto", precision;
  uint64_t seed = 12134;
  int threads = 0, device = 0, checkpoint_interval = -1, checkpoints_kept = -1;
  std::string checkpoint_name, memory_limit;
  std::string resume;  // "", "auto" or "never"
  bool quiet = false, validate = false, no_keep_best = false;
  bool rank_input_items = false;
  bool stream = false, no_stream = false;
  bool profile = false;
  bool force_precision = false;
  bool devices = false;
  std::string trace;
  uint32_t trace_steps = 20;
  std::string tensorboard;
  uint32_t tensorboard_interval = 0;
  std::string warm_start;
  std::string solver, sparse_update;
  uint64_t stream_chunk = 0, stream_window = 0;
  std::vector<std::string> validation;
  uint32_t validation_interval = 0, validation_k = 0, patience = 0;
  api::GradientCheckSettings check;
  int plan = 0;
  std::string link;  // "" = the CDL's Link, else (for --plan) eth-10g
  std::string measure_link;
  std::string measure_link_max;
  uint32_t plan_steps = 30;
  std::string plan_device;
  double plan_step_ms = 0.0;
  CLI::Option *plan_opt = nullptr, *batch_opt, *epochs_opt, *alpha_opt, *lambda_opt, *lambda1_opt,
              *mu_opt, *mu1_opt, *optimizer_opt, *seed_opt, *checkpoint_name_opt,
              *checkpoint_interval_opt, *checkpoints_kept_opt, *validation_opt,
              *validation_interval_opt, *validation_k_opt, *patience_opt, *no_keep_best_opt,
              *rank_input_items_opt, *backend_opt, *device_opt, *precision_opt, *profile_opt,
              *trace_opt, *trace_steps_opt, *sparse_update_opt, *tensorboard_opt,
              *tensorboard_interval_opt;
};

void define_flags(CLI::App& app, Flags& f) {
  app.add_option("cdl", f.cdl, "CDL command file (JSON) with Command Train")
      ->check(CLI::ExistingFile);
  app.add_option("-c,--config", f.config, "JSON network description")->check(CLI::ExistingFile);
  app.add_option("-i,--input", f.input, "NetCDF file with the input dataset(s)")
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output", f.output, "NetCDF file with the output (target) dataset(s)")
      ->check(CLI::ExistingFile);
  app.add_option("-n,--network", f.network,
                 "network file to write when training ends (- for standard output)");
  app.add_option("-d,--dataset", f.dataset_name,
                 "accepted and ignored (DSSTNE's train lists it in its usage but never used it)");
  // With a CDL file these flags override its keys, and each override is printed.
  f.batch_opt = app.add_option("-b,--batch", f.batch, "minibatch size (default 1024)");
  f.epochs_opt =
      app.add_option("-e,--epochs", f.epochs,
                     "epochs (default 40 with flags, DSSTNE train's; a CDL file's Epochs)");
  f.alpha_opt =
      app.add_option("--alpha", f.alpha,
                     "learning rate (default 0.025 with flags, DSSTNE train's; with a CDL file its "
                     "Alpha, default 0.1)");
  f.lambda_opt = app.add_option(
      "--lambda", f.lambda,
      "L2 weight decay (default 0.0001 with flags, DSSTNE train's; with a CDL file its "
      "Lambda, default 0.001)");
  f.lambda1_opt = app.add_option("--lambda1", f.lambda1, "L1 weight decay (default 0)");
  f.mu_opt = app.add_option(
      "--mu", f.mu,
      "momentum / RMSProp decay / Adam beta1 (default 0.5 with flags, DSSTNE train's; "
      "with a CDL file its Mu, default 0.9)");
  f.mu1_opt = app.add_option("--mu1", f.mu1, "Adam beta2 (default 0 => 0.999)");
  f.optimizer_opt =
      app.add_option("--optimizer", f.optimizer,
                     "SGD, Momentum, Nesterov, AdaGrad, AdaDelta, RMSProp or Adam (default SGD)");
  f.seed_opt = app.add_option(
      "--seed", f.seed,
      "random seed (default with flags 12134; with a CDL its RandomSeed, or a random seed "
      "that is printed when RandomSeed is absent or -1)");
  f.checkpoint_name_opt = app.add_option(
      "--checkpoint-name", f.checkpoint_name,
      "checkpoint prefix: files are <prefix><epoch>.nc (default: the -n value without "
      ".nc: -n net.nc gives net10.nc, net20.nc)");
  f.checkpoint_interval_opt =
      app.add_option("--checkpoint-interval", f.checkpoint_interval,
                     "epochs between checkpoints, 0 = none (default 10 with flags)");
  f.checkpoints_kept_opt = app.add_option(
      "--checkpoints-kept", f.checkpoints_kept,
      "newest checkpoints kept on disk, older ones are deleted; 0 = keep all (default 3; CDL "
      "CheckpointsKept)");
  f.validation_opt =
      app.add_option(
             "--validation", f.validation,
             "held-out NetCDF file(s) with datasets named like the training data; evaluated "
             "during training (CDL TrainingParameters.ValidationData)")
          ->check(CLI::ExistingFile);
  f.validation_interval_opt = app.add_option("--validation-interval", f.validation_interval,
                                             "epochs between validation evaluations (default 1)");
  f.validation_k_opt =
      app.add_option("--validation-k", f.validation_k, "cut-off K of recall@K/NDCG@K (default 10)");
  f.patience_opt =
      app.add_option("--patience", f.patience,
                     "stop after this many evaluations without improvement (default 0 = never)");
  f.rank_input_items_opt = app.add_flag(
      "--validation-rank-input-items", f.rank_input_items,
      "rank each validation example's input items too (default: left out of its ranking, as "
      "nn-predict --target does)");
  f.no_keep_best_opt =
      app.add_flag("--no-keep-best", f.no_keep_best,
                   "write the last epoch's network instead of the best evaluated one");
  app.add_flag("--resume{auto}", f.resume,
               "continue from the newest usable checkpoint if there is one, else start afresh, "
               "so that a requeued job reruns its command unchanged; '--resume never' starts "
               "afresh whatever the CDL's Resume says (CDL Resume: \"Auto\" or \"Never\")")
      ->check(CLI::IsMember({"auto", "never"}));
  app.add_option("--warm-start", f.warm_start,
                 "start from this network's weights instead of random ones, matched to the data "
                 "by item name: kept items keep their rows, new items start as the network "
                 "initialises them, items that left are dropped (CDL WarmStart; "
                 "docs/retraining.md)")
      ->check(CLI::ExistingFile);
  f.plan_opt = app.add_option(
      "--plan", f.plan,
      "instead of training, predict the time per layer, step and epoch on this many processes "
      "(data or model parallel per layer, communication over --link, memory per rank) from a "
      "short profiled run on this machine scaled by the floors; the last line is \"predicted "
      "epoch: <s> s on <N> ranks (1 rank: <s> s)\" (docs/scaling.md)");
  app.add_option("--plan-steps", f.plan_steps,
                 "--plan: training steps timed for the measured compute (default 30, after 3 "
                 "untimed; 0 = the floors alone, nothing run)");
  app.add_option("--plan-device", f.plan_device,
                 "--plan for a device that is not here, from its peaks: h100-sxm or h200 (nothing "
                 "is timed)");
  app.add_option("--plan-step-ms", f.plan_step_ms,
                 "--plan-device: its measured one-rank step in ms; the compute is scaled to it");
  app.add_option("--link", f.link,
                 "the interconnect: nvlink-h100, ib-ndr, pcie-h100, eth-10g, eth-1g (figures and "
                 "sources in docs/scaling.md) or a file from --measure-link; under mpirun each "
                 "layer then takes the mode predicted faster over it (CDL Link; default: the mode "
                 "that moves fewer bytes; --plan's default eth-10g)");
  app.add_option("--measure-link", f.measure_link,
                 "under mpirun -np N: time the collectives between the ranks, fit a latency and a "
                 "bandwidth and write them to this JSON file for --link; trains nothing");
  app.add_option("--measure-link-max", f.measure_link_max,
                 "--measure-link: also time messages up to this size (e.g. 512M, the largest "
                 "weight array's gradient; default 32M)");
  app.add_flag("--validate", f.validate,
               "check gradients against finite differences on the first minibatch instead of "
               "training (as CDL Command Validate); exit status 1 when a check fails");
  app.add_option("--check-entries", f.check.max_entries,
                 "Validate: entries checked per weight/bias array, 0 = all (default 1000; larger "
                 "arrays are sampled)");
  app.add_option("--check-epsilon", f.check.epsilon,
                 "Validate: step of entry w, epsilon * max(1, |w|), raised where the loss's "
                 "rounding noise needs it (default 0.001)");
  app.add_option("--check-abs-tolerance", f.check.abs_tolerance,
                 "Validate: an entry passes when |backward - finite difference| <= abs + rel * "
                 "|finite difference| + noise * (the loss's rounding noise) / step (default abs "
                 "0.002)");
  app.add_option("--check-rel-tolerance", f.check.rel_tolerance,
                 "Validate: see --check-abs-tolerance (default rel 0.02)");
  app.add_option("--check-noise-factor", f.check.noise_factor,
                 "Validate: see --check-abs-tolerance (default noise 8; 0 leaves the loss's "
                 "rounding out of the tolerance)");
  f.backend_opt = app.add_option(
      "--backend", f.backend,
      "cpu, cuda or auto (default auto: cuda when this build has it and the device is usable; "
      "a CDL Backend key is used when the flag is absent)");
  f.device_opt = app.add_option("--device", f.device,
                                "CUDA device index (default: the CDL Device key, else the "
                                "node-local MPI rank modulo the GPUs of the host: 0 for a "
                                "single process)")
                     ->check(CLI::NonNegativeNumber);
  f.precision_opt =
      app.add_option("--precision", f.precision,
                     "fp32 or bf16: arithmetic of the dense matrix products (bf16: BF16 operands, "
                     "FP32 accumulation and FP32 weights; needs AVX512-BF16 on the CPU or compute "
                     "capability 8.0 on CUDA). Default: the CDL or network Precision key, else "
                     "fp32")
          ->check(CLI::IsMember({"fp32", "bf16"}, CLI::ignore_case));
  app.add_flag("--force-precision", f.force_precision,
               "keep BF16 even where it measures slower than FP32: on a CPU, a BF16 run first "
               "times the network's widest dense product in both precisions and, where BF16 is "
               "the slower, says so and computes in FP32");
  app.add_option("--threads", f.threads,
                 "CPU threads (default: the CPUs this process may use, shared among the ranks "
                 "of an mpirun job on this host)");
  app.add_flag("-q,--quiet", f.quiet, "print errors only");
  app.add_flag("--devices", f.devices,
               "print what this build and machine offer (CPU threads, the CUDA module and "
               "devices, the CUDA paths' switches) and exit (docs/cuda-backend.md)");
  add_memory_limit_option(app, f.memory_limit);
  app.add_flag("--stream", f.stream,
               "read the training data in windows of examples on a reader thread, shuffled by "
               "blocks (CDL TrainingParameters.Stream; default: only when the data do not fit "
               "the memory budget; docs/large-datasets.md)");
  app.add_flag("--no-stream", f.no_stream,
               "never stream: data too big for the memory budget is an error")
      ->excludes("--stream");
  app.add_option("--stream-chunk", f.stream_chunk,
                 "streaming: examples per chunk of the block shuffle (default: from the budget)");
  app.add_option("--stream-window", f.stream_window,
                 "streaming: chunks per window (default: as many as the budget allows)");
  app.add_option("--solver", f.solver,
                 "Gradient (minibatch steps with the optimizer) or LeastSquares: a linear Input "
                 "-> Output network with the L2 error solved in closed form, the exact minimiser "
                 "of its expected objective with Denoising and Lambda (CDL "
                 "TrainingParameters.Solver; docs/quality.md)")
      ->transform(CLI::IsMember({"Gradient", "LeastSquares"}, CLI::ignore_case));
  f.sparse_update_opt =
      app.add_option("--sparse-update", f.sparse_update,
                     "how matrices fed by sparse inputs are updated: Exact (default: only the "
                     "rows a minibatch touched wherever that equals the dense update, skipped "
                     "optimizer steps caught up in closed form), Dense (every weight every step) "
                     "or Lazy (touched rows only, untouched rows' optimizer state not decayed, as "
                     "LazyAdam) (CDL TrainingParameters.SparseUpdate; docs/wide-outputs.md)")
          ->transform(CLI::IsMember({"Exact", "Dense", "Lazy"}, CLI::ignore_case));
  f.profile_opt = app.add_flag(
      "--profile", f.profile,
      "at the end, print the time per phase (data, forward, loss, backward, communication, "
      "update) and layer of the training step, with each one's share of the step; rank 0's "
      "under mpirun, printed even with -q (CDL TrainingParameters.Profile; docs/performance.md)");
  f.trace_opt = app.add_option(
      "--trace", f.trace,
      "write a Chrome trace of the first --trace-steps steps of every epoch to this JSON file, "
      "for ui.perfetto.dev or chrome://tracing (CDL TrainingParameters.Trace)");
  f.trace_steps_opt = app.add_option(
      "--trace-steps", f.trace_steps,
      "steps per epoch in the --trace file, 0 = every step; at most 200000 events are kept "
      "(default 20; CDL TrainingParameters.TraceSteps)");
  f.tensorboard_opt = app.add_option(
      "--tensorboard", f.tensorboard,
      "write a TensorBoard event file into this directory (created if missing): every epoch's "
      "scalars (losses, validation metrics, learning rate, examples per second, epoch time) and "
      "the hyper-parameters; rank 0's under mpirun; a resumed run continues it (CDL "
      "TrainingParameters.TensorBoard; docs/monitoring.md)");
  f.tensorboard_interval_opt = app.add_option(
      "--tensorboard-interval", f.tensorboard_interval,
      "also write minibatch scalars (loss, learning rate, examples per second) every this many "
      "updates, 0 = epochs only (default 0; CDL TrainingParameters.TensorBoardInterval)");
}

// The profiling flags, over what the CDL said.
void apply_profile_flags(const Flags& f, api::TrainJob& job) {
  if (f.profile) job.profile = true;
  if (f.trace_opt->count()) job.trace = f.trace;
  if (f.trace_steps_opt->count()) job.trace_steps = f.trace_steps;
  if (f.trace_opt->count() && f.trace.empty()) throw UsageError("--trace: the file name is empty");
}

// The TensorBoard flags, over what the CDL said.
void apply_tensorboard_flags(const Flags& f, api::TrainJob& job) {
  if (f.tensorboard_opt->count()) job.tensorboard = f.tensorboard;
  if (f.tensorboard_interval_opt->count()) job.tensorboard_interval = f.tensorboard_interval;
  if (f.tensorboard_opt->count() && f.tensorboard.empty())
    throw UsageError("--tensorboard: the directory name is empty");
  if (job.tensorboard.empty() && job.tensorboard_interval > 0)
    throw UsageError(
        "--tensorboard-interval (CDL TensorBoardInterval) needs --tensorboard (CDL "
        "TensorBoard), the directory to write to");
}

// The streaming flags, over what the CDL said.
void apply_stream_flags(const Flags& f, api::TrainJob& job) {
  if (f.stream) job.stream = true;
  if (f.no_stream) job.stream = false;
  if (!f.solver.empty()) job.solver = f.solver;
  if (!f.sparse_update.empty()) job.sparse_update = f.sparse_update;
  job.stream_chunk = f.stream_chunk;
  job.stream_window_chunks = f.stream_window;
}

// The optimizer's name as the library spells it; UsageError listing the names otherwise.
std::string parse_optimizer(const std::string& name) {
  auto lower = [](std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::string choices;
  for (const std::string& n : api::optimizer_names()) {
    choices += (choices.empty() ? "" : ", ") + n;
    if (lower(n) == lower(name)) return n;
  }
  throw UsageError("--optimizer: unknown '" + name + "'; expected one of " + choices);
}

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A seed nobody chose: from the OS's entropy source, kept within 31 bits so it reads and types
// easily and fits every seed field (DSSTNE's included).
uint64_t random_seed() {
  std::random_device rd;
  return ((uint64_t(rd()) << 32) ^ rd()) % 2147483647u + 1;
}

struct Override {
  const CLI::Option* flag;
  const char* key;
  std::string cdl_value;
};

// One line per flag given with a CDL file: which key it overrides, from what to what.
std::vector<std::string> describe_overrides(const std::string& cdl,
                                            const std::vector<Override>& all) {
  std::vector<std::string> lines;
  for (const Override& o : all) {
    if (!o.flag->count()) continue;
    std::string value = o.flag->get_expected_min() == 0 ? "" : " " + o.flag->as<std::string>();
    lines.push_back(o.flag->get_name() + value + " overrides " + cdl + "'s " + o.key + " " +
                    (o.cdl_value.empty() ? "(unset)" : o.cdl_value));
  }
  return lines;
}

std::vector<std::string> cdl_overrides(const Flags& f, const api::CommandFile& cdl,
                                       const api::TrainJob& t) {
  std::string validation;
  for (const auto& file : t.validation_files) validation += (validation.empty() ? "" : ",") + file;
  return describe_overrides(
      f.cdl,
      {{f.epochs_opt, "Epochs", std::to_string(t.epochs)},
       {f.batch_opt, "MiniBatch", std::to_string(t.minibatch)},
       {f.alpha_opt, "Alpha", format_number(t.alpha)},
       {f.lambda_opt, "Lambda", format_number(t.lambda)},
       {f.lambda1_opt, "Lambda1", format_number(t.lambda1)},
       {f.mu_opt, "mu", format_number(t.mu)},
       {f.mu1_opt, "mu1", format_number(t.mu1)},
       {f.optimizer_opt, "Optimizer", t.optimizer},
       {f.checkpoint_name_opt, "CheckpointName", t.checkpoint_name},
       {f.checkpoint_interval_opt, "CheckpointInterval", std::to_string(t.checkpoint_interval)},
       {f.checkpoints_kept_opt, "CheckpointsKept", std::to_string(t.checkpoints_kept)},
       {f.seed_opt, "RandomSeed", cdl.random_seed() ? std::to_string(*cdl.random_seed()) : ""},
       {f.validation_opt, "ValidationData", validation},
       {f.validation_interval_opt, "ValidationInterval", std::to_string(t.validation_interval)},
       {f.validation_k_opt, "ValidationK", std::to_string(t.validation_k)},
       {f.patience_opt, "Patience", std::to_string(t.patience)},
       {f.no_keep_best_opt, "KeepBest", t.keep_best ? "true" : "false"},
       {f.rank_input_items_opt, "ValidationRankInputItems",
        t.validation_rank_input_items ? "true" : "false"},
       {f.precision_opt, "Precision", t.precision},
       {f.profile_opt, "Profile", t.profile ? "true" : "false"},
       {f.trace_opt, "Trace", t.trace},
       {f.trace_steps_opt, "TraceSteps", std::to_string(t.trace_steps)},
       {f.tensorboard_opt, "TensorBoard", t.tensorboard},
       {f.tensorboard_interval_opt, "TensorBoardInterval", std::to_string(t.tensorboard_interval)},
       {f.sparse_update_opt, "SparseUpdate", t.sparse_update}});
}

// The job of a CDL file with the flags given beside it applied (each override is described in
// `overrides`). Sets f.validate for Command Validate and *seed_chosen when the seed is drawn.
api::TrainJob job_from_cdl(Flags& f, int device, std::vector<std::string>& overrides,
                           bool& seed_chosen) {
  if (!f.config.empty() || !f.input.empty() || !f.output.empty() || !f.network.empty())
    throw UsageError("give either a CDL file or -c/-i/-o/-n, not both");
  const api::CommandFile cdl = api::CommandFile::read(f.cdl);
  if (cdl.command() == "Predict" || cdl.command() == "Serve")
    throw UsageError(
        f.cdl + ": Command is " + cdl.command() +
        "; nn-train runs Train and Validate (use nn-predict for Predict, nn-serve for Serve)");
  f.validate = f.validate || cdl.command() == "Validate";
  apply_memory_limit(f.memory_limit, cdl.memory_limit());
  // The CDL's settings mean the same here as in the library's train_cdl (nn/train_job.h);
  // flags given beside the CDL override its keys (each override is printed).
  api::TrainJob job = api::train_job(cdl, 0);
  if (f.backend_opt->count()) job.backend = f.backend;
  if (f.precision_opt->count()) job.precision = f.precision;
  if (f.force_precision) job.force_precision = true;
  if (f.device_opt->count() || !cdl.device()) job.device = device;
  overrides = cdl_overrides(f, cdl, job);
  if (f.seed_opt->count())
    job.seed = f.seed;
  else if (!cdl.random_seed())
    job.seed = random_seed(), seed_chosen = true;  // "left to the tool": a real random seed
  if (f.epochs_opt->count()) job.epochs = f.epochs;
  if (f.batch_opt->count()) job.minibatch = f.batch;
  if (f.optimizer_opt->count()) job.optimizer = parse_optimizer(f.optimizer);
  if (f.alpha_opt->count()) job.alpha = f.alpha;
  if (f.lambda_opt->count()) job.lambda = f.lambda;
  if (f.lambda1_opt->count()) job.lambda1 = f.lambda1;
  if (f.mu_opt->count()) job.mu = f.mu;
  if (f.mu1_opt->count()) job.mu1 = f.mu1 > 0.0f ? f.mu1 : 0.999f;
  if (!f.checkpoint_name.empty()) job.checkpoint_name = f.checkpoint_name;
  if (f.checkpoint_interval >= 0) job.checkpoint_interval = f.checkpoint_interval;
  if (f.checkpoints_kept >= 0) job.checkpoints_kept = f.checkpoints_kept;
  if (f.batch_opt->count() && f.batch == 0) throw UsageError("-b: the minibatch must be positive");
  if (f.epochs_opt->count() && f.epochs == 0) throw UsageError("-e: epochs must be positive");
  apply_stream_flags(f, job);
  return job;
}

// "net.nc" -> "net"; other names as they are.
std::string without_nc_suffix(const std::string& path) {
  const bool nc = path.size() > 3 && path.compare(path.size() - 3, 3, ".nc") == 0 &&
                  path[path.size() - 4] != '/';
  return nc ? path.substr(0, path.size() - 3) : path;
}

// The job of DSSTNE train's flags.
api::TrainJob job_from_flags(const Flags& f, int device) {
  if (f.config.empty() || f.input.empty() || f.output.empty() || (f.network.empty() && !f.validate))
    throw UsageError(f.validate ? "--validate needs -c, -i and -o (or a CDL file)"
                                : "need a CDL file, or all of -c, -i, -o and -n");
  if (f.batch == 0) throw UsageError("-b: the minibatch must be positive");
  apply_memory_limit(f.memory_limit, std::nullopt);
  if (f.epochs == 0) throw UsageError("-e: epochs must be positive");
  api::TrainJob job;
  job.backend = f.backend;
  job.precision = f.precision;
  job.force_precision = f.force_precision;
  job.device = device;
  job.network_json = f.config;
  job.data_files = {f.input};
  if (f.output != f.input) job.data_files.push_back(f.output);
  job.results = f.network;
  job.epochs = f.epochs;
  job.minibatch = f.batch;
  job.seed = f.seed;
  job.optimizer = parse_optimizer(f.optimizer);
  job.alpha = f.alpha;
  job.lambda = f.lambda;
  job.lambda1 = f.lambda1;
  job.mu = f.mu;
  job.mu1 = f.mu1 > 0.0f ? f.mu1 : 0.999f;
  // Checkpoints are named after the network file without its ".nc" (-n net.nc: net2.nc,
  // net4.nc; DSSTNE's train named them net.nc2.nc, which --resume still finds); a network
  // written to standard output has no name, so its checkpoints are checkpoint<epoch>.nc.
  job.checkpoint_name = !f.checkpoint_name.empty() ? f.checkpoint_name
                        : f.network == "-"         ? "checkpoint"
                                                   : without_nc_suffix(f.network);
  job.checkpoint_interval = f.checkpoint_interval >= 0 ? f.checkpoint_interval : 10;
  job.checkpoints_kept = f.checkpoints_kept >= 0 ? f.checkpoints_kept : 3;
  apply_stream_flags(f, job);
  return job;
}

// Validation flags override the CDL's keys (a flag set to its "unset" value leaves the CDL's).
void apply_validation_flags(const Flags& f, api::TrainJob& job) {
  if (!f.validation.empty()) job.validation_files = f.validation;
  if (f.validation_interval) job.validation_interval = f.validation_interval;
  if (f.validation_k) job.validation_k = f.validation_k;
  if (f.patience) job.patience = f.patience;
  if (f.no_keep_best) job.keep_best = false;
  if (f.rank_input_items) job.validation_rank_input_items = true;
  if (job.validation_files.empty() && job.patience > 0)
    throw UsageError(
        "--patience (CDL Patience) needs a validation set (--validation or CDL "
        "ValidationData)");
}

// The network file must not replace a file the run reads, however the names are spelled (the
// per-epoch log and loss curve beside it are checked by the library). Files are named by their
// flag, or by their CDL key when the command file gave them.
void check_files(const Flags& f, const api::TrainJob& job) {
  const bool cdl = !f.cdl.empty();
  std::vector<api::NamedFile> inputs = {{cdl ? "Network" : "-c", job.network_json}};
  for (size_t i = 0; i < job.data_files.size(); ++i)
    inputs.push_back({cdl ? "Data" : i == 0 ? "-i" : "-o", job.data_files[i]});
  for (const std::string& v : job.validation_files)
    inputs.push_back({f.validation.empty() ? "ValidationData" : "--validation", v});
  api::check_distinct_files({{cdl ? "Results" : "-n", job.results},
                             {f.trace_opt->count() || !cdl ? "--trace" : "Trace", job.trace}},
                            inputs);
}

// The run's log on standard error (rank 0's lines); with -q none, except the profile table,
// which was asked for.
LogSink tool_log(bool quiet, bool profile) {
  const LogSink full = stream_log(stderr);
  if (!quiet) return full;
  if (!profile) return null_log();
  return [full](const std::string& line) {
    if (line.rfind("profile: ", 0) == 0) full(line);
  };
}

// The gradient check; exit status 1 (reported by rank 0) when an array fails it.
int check_gradients(const Flags& f, const api::TrainJob& job, const LogSink& log) {
  if (!(f.check.epsilon > 0) || f.check.abs_tolerance < 0 || f.check.rel_tolerance < 0 ||
      f.check.noise_factor < 0)
    throw UsageError(
        "--check-epsilon must be positive and the tolerances and the noise factor non-negative");
  const api::GradientCheckResult result = api::run_gradient_check(job, f.check, log);
  if (result.passed()) return 0;
  if (api::world_rank() != 0) return 1;  // rank 0 reports; every rank computed the same check
  std::string names;
  for (const auto& name : result.failed) names += (names.empty() ? "" : ", ") + name;
  std::fprintf(stderr,
               "%s: error: gradient check failed for %zu of %zu weight and bias arrays: %s\n",
               kToolName, result.failed.size(), result.arrays, names.c_str());
  return 1;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "Train a neural network.\n"
      "  nn-train train.cdl                 run a CDL command file (Command: Train or Validate)\n"
      "  nn-train -c net.json -i in.nc -o out.nc -n net.nc [-b 1024] [-e 40] ...\n"
      "                                     DSSTNE train's flags\n"
      "  nn-train --validate -c net.json -i in.nc -o out.nc [-b 1024]\n"
      "                                     gradient check on the first minibatch",
      "nn-train"};
  Flags f;
  define_flags(app, f);
  int status = 0;
  if (parse_or_exit(
          app,
          join_optional_value(
              rewrite_single_dash(argc, argv, {"alpha", "lambda", "lambda1", "mu", "mu1"}),
              "--resume", {"auto", "never"}),
          status))
    return status;
  if (f.devices) {
    for (const std::string& line : api::device_report()) std::printf("%s\n", line.c_str());
    return 0;
  }

  // One process per GPU: without --device (or a CDL Device key) a rank takes the device of its
  // node-local rank; under mpirun the ranks on a host share its CPUs (nn/process.h).
  const int device = f.device_opt->count() ? f.device : api::default_device();
  const int threads = f.threads > 0 ? f.threads : api::default_thread_count();
  if (!f.measure_link.empty()) {
    uint64_t max_bytes = 0;
    if (!f.measure_link_max.empty()) {
      const auto bytes = api::parse_byte_size(f.measure_link_max);
      if (!bytes)
        throw UsageError("--measure-link-max: expected a size such as 512M or 2G, got '" +
                         f.measure_link_max + "'");
      max_bytes = *bytes;
    }
    api::measure_link(f.measure_link, tool_log(f.quiet, false), max_bytes);
    return 0;
  }
  std::vector<std::string> overrides;
  bool seed_chosen = false;
  api::TrainJob job =
      !f.cdl.empty() ? job_from_cdl(f, device, overrides, seed_chosen) : job_from_flags(f, device);
  job.threads = threads;
  if (!f.resume.empty()) job.resume = f.resume == "auto";
  if (!f.warm_start.empty()) job.warm_start = f.warm_start;
  if (!f.link.empty() && !f.plan_opt->count()) job.link = f.link;
  apply_validation_flags(f, job);
  apply_profile_flags(f, job);
  apply_tensorboard_flags(f, job);
  // Logs go to stderr like every other tool's; nn-train's results are the files it writes, so
  // standard output stays empty (and free for a pipeline).
  const LogSink log = tool_log(f.quiet, job.profile);
  for (const std::string& line : overrides) log(line);
  if (seed_chosen)
    log("random seed " + std::to_string(job.seed) +
        " (RandomSeed is absent or -1; set RandomSeed or --seed to this value to repeat the run)");
  if (f.validate) return check_gradients(f, job, log);
  if (f.plan_opt->count()) {
    api::run_scaling_plan(job, f.plan, f.link, stream_log(stderr), f.plan_steps, f.plan_device,
                          f.plan_step_ms);
    return 0;
  }
  check_files(f, job);
  api::run_training(job, log, nullptr, failure_injection_from_environment(api::world_rank()));
  return 0;
}

}  // namespace nn::tool
