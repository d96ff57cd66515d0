// nn-train: trains a network from a CDL command file (nn-train train.cdl) or from DSSTNE
// train's flags (nn-train -c config.json -i in.nc -o out.nc -n net.nc -b 256 -e 10 ...), or
// checks its gradients (CDL Command "Validate", or --validate with the flags).
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/cli_support.h"
#include "config/parse.h"
#include "core/error.h"
#include "distributed/device_placement.h"
#include "distributed/process.h"
#include "api/train_setup.h"
#include "nn-train/train_job.h"

const char* const nn::tool::kToolName = "nn-train";

namespace nn::tool {
namespace {

OptimizerKind parse_optimizer(const std::string& name) {
  static const OptimizerKind all[] = {OptimizerKind::SGD,      OptimizerKind::Momentum,
                                      OptimizerKind::Nesterov, OptimizerKind::AdaGrad,
                                      OptimizerKind::AdaDelta, OptimizerKind::RMSProp,
                                      OptimizerKind::Adam};
  std::string lower, choices;
  for (char c : name) lower += char(std::tolower(static_cast<unsigned char>(c)));
  for (OptimizerKind k : all) {
    std::string n = to_string(k);
    choices += (choices.empty() ? "" : ", ") + n;
    for (auto& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (n == lower) return k;
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
  std::string cdl, config, input, output, network;
  uint32_t batch = 1024, epochs = 40;
  float alpha = 0.025f, lambda = 0.0001f, lambda1 = 0.0f, mu = 0.5f, mu1 = 0.0f;
  std::string optimizer = "SGD", backend = "auto";
  uint64_t seed = 12134;
  int threads = 0, checkpoint_interval = -1;
  std::string checkpoint_name, dataset_name;
  bool resume = false, quiet = false, validate = false;
  size_t check_entries = 1000;
  GradientCheckOptions check;
  app.add_option("cdl", cdl, "CDL command file (JSON) with Command Train")
      ->check(CLI::ExistingFile);
  app.add_option("-c,--config", config, "JSON network description")->check(CLI::ExistingFile);
  app.add_option("-i,--input", input, "NetCDF file with the input dataset(s)")
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output", output, "NetCDF file with the output (target) dataset(s)")
      ->check(CLI::ExistingFile);
  app.add_option("-n,--network", network, "network file to write when training ends (- for standard output)");
  app.add_option("-d,--dataset", dataset_name,
                 "accepted and ignored (DSSTNE's train lists it in its usage but never used it)");
  // With a CDL file these flags override its keys, and each override is printed.
  auto* batch_opt = app.add_option("-b,--batch", batch, "minibatch size (default 1024)");
  auto* epochs_opt = app.add_option("-e,--epochs", epochs, "epochs (default 40)");
  auto* alpha_opt = app.add_option("--alpha", alpha, "learning rate (default 0.025)");
  auto* lambda_opt = app.add_option("--lambda", lambda, "L2 weight decay (default 0.0001)");
  auto* lambda1_opt = app.add_option("--lambda1", lambda1, "L1 weight decay (default 0)");
  auto* mu_opt = app.add_option("--mu", mu, "momentum / RMSProp decay / Adam beta1 (default 0.5)");
  auto* mu1_opt = app.add_option("--mu1", mu1, "Adam beta2 (default 0 => 0.999)");
  auto* optimizer_opt =
      app.add_option("--optimizer", optimizer,
                     "SGD, Momentum, Nesterov, AdaGrad, AdaDelta, RMSProp or Adam (default SGD)");
  auto* seed_opt = app.add_option(
      "--seed", seed,
      "random seed (default with flags 12134; with a CDL its RandomSeed, or a random seed "
      "that is printed when RandomSeed is absent or -1)");
  auto* checkpoint_name_opt =
      app.add_option("--checkpoint-name", checkpoint_name,
                     "checkpoint prefix: files are <prefix><epoch>.nc (default: the -n value)");
  auto* checkpoint_interval_opt =
      app.add_option("--checkpoint-interval", checkpoint_interval,
                     "epochs between checkpoints, 0 = none (default 10 with flags)");
  int checkpoints_kept = -1;
  auto* checkpoints_kept_opt = app.add_option(
      "--checkpoints-kept", checkpoints_kept,
      "newest checkpoints kept on disk, older ones are deleted; 0 = keep all (default 3; CDL "
      "CheckpointsKept)");
  std::vector<std::string> validation;
  uint32_t validation_interval = 0, validation_k = 0, patience = 0;
  bool no_keep_best = false;
  auto* validation_opt =
      app.add_option(
             "--validation", validation,
             "held-out NetCDF file(s) with datasets named like the training data; evaluated "
             "during training (CDL TrainingParameters.ValidationData)")
          ->check(CLI::ExistingFile);
  auto* validation_interval_opt =
      app.add_option("--validation-interval", validation_interval,
                     "epochs between validation evaluations (default 1)");
  auto* validation_k_opt =
      app.add_option("--validation-k", validation_k, "cut-off K of recall@K/NDCG@K (default 10)");
  auto* patience_opt =
      app.add_option("--patience", patience,
                     "stop after this many evaluations without improvement (default 0 = never)");
  auto* no_keep_best_opt =
      app.add_flag("--no-keep-best", no_keep_best,
                   "write the last epoch's network instead of the best evaluated one");
  app.add_flag("--resume", resume, "continue from the newest checkpoint if there is one");
  app.add_flag("--validate", validate,
               "check gradients against finite differences on the first minibatch instead of "
               "training (as CDL Command Validate); exit status 1 when a check fails");
  app.add_option("--check-entries", check_entries,
                 "Validate: entries checked per weight/bias array, 0 = all (default 1000; larger "
                 "arrays are sampled)");
  app.add_option("--check-epsilon", check.epsilon,
                 "Validate: perturbation of each entry (default 0.001)");
  app.add_option("--check-abs-tolerance", check.abs_tolerance,
                 "Validate: an entry passes when |backward - finite difference| <= abs + rel * "
                 "|finite difference| (default abs 0.002)");
  app.add_option("--check-rel-tolerance", check.rel_tolerance,
                 "Validate: see --check-abs-tolerance (default rel 0.02)");
  int device = 0;
  auto* backend_opt = app.add_option(
      "--backend", backend,
      "cpu, cuda or auto (default auto: cuda when this build has it and the device is usable; "
      "a CDL Backend key is used when the flag is absent)");
  auto* device_opt =
      app.add_option("--device", device,
                     "CUDA device index (default: the CDL Device key, else the node-local "
                     "MPI rank modulo the GPUs of the host: 0 for a single process)")
          ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads,
                 "CPU threads (default: the CPUs this process may use, shared among the ranks "
                 "of an mpirun job on this host)");
  app.add_flag("-q,--quiet", quiet, "print errors only");
  std::string memory_limit;
  add_memory_limit_option(app, memory_limit);
  int status = 0;
  if (parse_or_exit(app,
                    rewrite_single_dash(argc, argv, {"alpha", "lambda", "lambda1", "mu", "mu1"}),
                    status))
    return status;

  TrainJob job;
  std::vector<std::string> overrides;
  bool seed_chosen = false;
  job.backend = backend;
  // One process per GPU: without --device (or a CDL Device key, applied below) a rank takes
  // the device of its node-local rank (distributed/device_placement.h).
  job.device = device_opt->count() ? device : default_device();
  // Under mpirun the ranks on a host share its CPUs (distributed/process.h).
  job.threads = threads > 0 ? threads : default_thread_count();
  job.resume = resume;
  if (!cdl.empty()) {
    if (!config.empty() || !input.empty() || !output.empty() || !network.empty())
      throw UsageError("give either a CDL file or -c/-i/-o/-n, not both");
    const CdlSpec spec = load_cdl(cdl);
    if (spec.command == Command::Predict)
      throw UsageError(cdl + ": Command is " + to_string(spec.command) +
                       "; nn-train runs Train and Validate (use nn-predict for Predict)");
    validate = validate || spec.command == Command::Validate;
    apply_memory_limit(memory_limit, spec.memory_limit);
    job.parallel = spec.parallel;
    if (backend_opt->count() == 0 && !spec.backend.empty()) job.backend = spec.backend;
    if (device_opt->count() == 0 && spec.device) job.device = *spec.device;
    const TrainingParameters& t = spec.training;
    job.network_json = spec.network;
    std::string cdl_validation;
    for (const auto& f : t.validation_data)
      cdl_validation += (cdl_validation.empty() ? "" : ",") + f;
    overrides = describe_overrides(
        cdl,
        {{epochs_opt, "Epochs", std::to_string(t.epochs)},
         {batch_opt, "MiniBatch", std::to_string(t.minibatch)},
         {alpha_opt, "Alpha", format_number(t.alpha)},
         {lambda_opt, "Lambda", format_number(t.lambda)},
         {lambda1_opt, "Lambda1", format_number(t.lambda1)},
         {mu_opt, "mu", format_number(t.mu)},
         {mu1_opt, "mu1", format_number(t.mu1)},
         {optimizer_opt, "Optimizer", to_string(t.optimizer)},
         {checkpoint_name_opt, "CheckpointName", t.checkpoint_name},
         {checkpoint_interval_opt, "CheckpointInterval", std::to_string(t.checkpoint_interval)},
         {checkpoints_kept_opt, "CheckpointsKept", std::to_string(t.checkpoints_kept)},
         {seed_opt, "RandomSeed", spec.random_seed ? std::to_string(*spec.random_seed) : ""},
         {validation_opt, "ValidationData", cdl_validation},
         {validation_interval_opt, "ValidationInterval", std::to_string(t.validation_interval)},
         {validation_k_opt, "ValidationK", std::to_string(t.validation_k)},
         {patience_opt, "Patience", std::to_string(t.patience)},
         {no_keep_best_opt, "KeepBest", t.keep_best ? "true" : "false"}});
    job.data_files = spec.data;
    job.results = t.results;
    job.shuffle = t.shuffle_indices;
    job.validation_files = t.validation_data;
    // The CDL's settings mean the same here as in the library's train_cdl (api/train_setup.h);
    // flags given beside the CDL override its keys (each override is printed).
    job.options = api::cdl_train_options(spec, 0);
    TrainOptions& o = job.options;
    if (seed_opt->count())
      o.seed = seed;
    else if (!spec.random_seed)
      o.seed = random_seed(), seed_chosen = true;  // "left to the tool": a real random seed
    if (epochs_opt->count()) o.epochs = epochs;
    if (batch_opt->count()) o.minibatch = batch;
    if (optimizer_opt->count()) o.optimizer.kind = parse_optimizer(optimizer);
    if (alpha_opt->count()) o.optimizer.alpha = alpha;
    if (lambda_opt->count()) o.optimizer.lambda = lambda;
    if (lambda1_opt->count()) o.optimizer.lambda1 = lambda1;
    if (mu_opt->count()) o.optimizer.mu = mu;
    if (mu1_opt->count()) o.optimizer.mu1 = mu1 > 0.0f ? mu1 : 0.999f;
    if (!checkpoint_name.empty()) o.checkpoint_name = checkpoint_name;
    if (checkpoint_interval >= 0) o.checkpoint_interval = checkpoint_interval;
    if (checkpoints_kept >= 0) o.checkpoints_kept = checkpoints_kept;
    if (batch_opt->count() && batch == 0) throw UsageError("-b: the minibatch must be positive");
    if (epochs_opt->count() && epochs == 0) throw UsageError("-e: epochs must be positive");
  } else {
    if (config.empty() || input.empty() || output.empty() || (network.empty() && !validate))
      throw UsageError(validate ? "--validate needs -c, -i and -o (or a CDL file)"
                                : "need a CDL file, or all of -c, -i, -o and -n");
    if (batch == 0) throw UsageError("-b: the minibatch must be positive");
    apply_memory_limit(memory_limit, std::nullopt);
    if (epochs == 0) throw UsageError("-e: epochs must be positive");
    job.network_json = config;
    job.data_files = {input};
    if (output != input) job.data_files.push_back(output);
    job.results = network;
    TrainOptions& o = job.options;
    o.epochs = epochs;
    o.minibatch = batch;
    o.seed = seed;
    o.optimizer = {parse_optimizer(optimizer), alpha, lambda, lambda1, mu,
                   mu1 > 0.0f ? mu1 : 0.999f,  0.0f,  0,      1.0f};
    // Checkpoints are named after the network file; a network written to standard output has
    // no name, so its checkpoints are checkpoint<epoch>.nc.
    o.checkpoint_name =
        !checkpoint_name.empty() ? checkpoint_name : network == "-" ? "checkpoint" : network;
    o.checkpoint_interval = checkpoint_interval >= 0 ? checkpoint_interval : 10;
    o.checkpoints_kept = checkpoints_kept >= 0 ? checkpoints_kept : 3;
  }
  // Validation flags override the CDL's keys (a flag set to its "unset" value leaves the CDL's).
  if (!validation.empty()) job.validation_files = validation;
  if (validation_interval) job.options.validation_interval = validation_interval;
  if (validation_k) job.options.validation_k = validation_k;
  if (patience) job.options.patience = patience;
  if (no_keep_best) job.options.keep_best = false;
  if (job.validation_files.empty() && job.options.patience > 0)
    throw UsageError(
        "--patience (CDL Patience) needs a validation set (--validation or CDL "
        "ValidationData)");
  // Logs go to stderr like every other tool's; nn-train's results are the files it writes, so
  // standard output stays empty (and free for a pipeline).
  const LogSink log = quiet ? null_log() : stream_log(stderr);
  for (const std::string& line : overrides) log(line);
  if (seed_chosen)
    log("random seed " + std::to_string(job.options.seed) +
        " (RandomSeed is absent or -1; set RandomSeed or --seed to this value to repeat the run)");
  if (validate) {
    if (!(check.epsilon > 0) || check.abs_tolerance < 0 || check.rel_tolerance < 0)
      throw UsageError("--check-epsilon must be positive and the tolerances non-negative");
    check.max_entries = check_entries;
    check.seed = job.options.seed;
    return run_validate_job(job, check, log);
  }
  return run_train_job(job, log);
}

}  // namespace nn::tool
