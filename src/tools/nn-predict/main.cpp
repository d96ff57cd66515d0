// nn-predict: scores examples with a trained network and prints the top-K outputs per example
// (DSSTNE's recommendation format), from a CDL file (nn-predict predict.cdl) or from DSSTNE
// predict's flags (nn-predict -n net.nc -r examples.txt -i in.idx -o out.idx -f filter -k 10).
// The flags become a PredictJob (nn/predict_job.h); the library runs it.
#include <string>
#include <vector>

#include "common/cli_support.h"
#include "common/stdin_spool.h"
#include "nn/command_file.h"
#include "nn/file_names.h"
#include "nn/predict_job.h"

const char* const nn::tool::kToolName = "nn-predict";

namespace nn::tool {
namespace {

// The command line: DSSTNE predict's flags and ours, most of them straight into the job. With a
// CDL file the flags given override its keys (the options say which were given).
struct Flags {
  api::PredictJob job;
  std::string cdl, type = "indicator", memory_limit;
  bool quiet = false;
  CLI::Option *k_opt, *backend_opt, *device_opt;
};

void define_flags(CLI::App& app, Flags& f) {
  app.add_option("cdl", f.cdl, "CDL command file (JSON) with Command Predict")
      ->check(CLI::ExistingFile);
  app.add_option("-n,--network", f.job.network,
                 "trained network file (.nc); - reads it from standard input")
      ->check(CLI::ExistingFile | CLI::IsMember({"-"}));
  app.add_option("-r,--examples", f.job.text_input,
                 "examples to score, text format (- reads standard input)")
      ->check(CLI::ExistingFile | CLI::IsMember({"-"}));
  app.add_option("-t,--type", f.type, "text examples are 'indicator' (default) or 'analog'");
  app.add_option("--data", f.job.data_files, "NetCDF dataset file(s) to score instead of -r");
  app.add_option("-d,--dataset", f.job.dataset_base,
                 "input dataset is <name>_input (DSSTNE); optional");
  app.add_option("-i,--input-index", f.job.input_index, "input feature index (label<TAB>index)")
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output-index", f.job.output_index,
                 "output feature index: labels for results")
      ->check(CLI::ExistingFile);
  app.add_option("--sample-index", f.job.sample_index, "sample index: names for --data examples")
      ->check(CLI::ExistingFile);
  app.add_option(
         "-f,--filter", f.job.filter,
         "items to exclude per sample: text (sample<TAB>item:... lines, or sample,item rows "
         "such as a ratings CSV; needs the sample and output indices) or a dataset "
         "FILE.nc such as the input dataset (row e filters example e)")
      ->check(CLI::ExistingPath);
  app.add_flag("--filter-multiply", f.job.filter_multiply,
               "multiply scores by the filter values instead of excluding (DSSTNE behaviour)");
  app.add_option("-s,--output", f.job.output, "recommendations file (default: standard output)");
  f.k_opt = app.add_option("-k,--top", f.job.k,
                           "results per example (default 100 with flags, as DSSTNE; CDL K "
                           "defaults to 10); no upper limit");
  app.add_option("-b,--batch", f.job.minibatch, "minibatch size (default 1024)");
  app.add_option("--score-block", f.job.score_block,
                 "score the ranked layer N columns at a time (its top K kept per block), 'full' "
                 "(every unit at once) or 'auto' (default: blocks of 8192 when a minibatch's "
                 "scores would pass 64 MiB); same results, less memory");
  app.add_option("-l,--layer", f.job.layer, "layer to score, any name (default: the output layer)");
  app.add_option("-p,--score-format", f.job.score_format,
                 "printf conversion for scores, with or without % (default %.3f; DSSTNE: 4.3f)");
  app.add_option("--target", f.job.target,
                 "NetCDF dataset of held-out items: print precision, recall and NDCG at 1..K, "
                 "or, when every example has one item (or with --classify), accuracy and a "
                 "confusion matrix")
      ->check(CLI::ExistingFile);
  app.add_flag("--rank-input-items", f.job.rank_input_items,
               "with --target: rank each example's input items too (default: left out of its "
               "ranking, as nn-train's validation does)");
  app.add_flag("--remap-index", f.job.remap_index,
               "match an input or output index that lists the network's items in another order "
               "(or a dataset indexed that way) to the network by name, instead of refusing it "
               "(CDL RemapIndex)");
  app.add_flag_callback(
      "--stream", [&f] { f.job.stream = 1; },
      "read the dataset files a segment of examples at a time, writing results as they are "
      "scored (default: only when the examples do not fit the memory budget)");
  app.add_flag_callback(
      "--no-stream", [&f] { f.job.stream = 0; },
      "always read the dataset files whole (examples beyond the memory budget are an error)");
  app.add_option("--stream-segment", f.job.stream_segment,
                 "streaming: examples per segment, a whole number of minibatches (default: a "
                 "quarter of the memory budget's worth)");
  app.add_flag("--classify", f.job.classify,
               "evaluate as a classifier: the target item with the largest value is the class");
  app.add_option("--top-classes", f.job.top_classes,
                 "also write each example's top K classes to this file (recommendation format)");
  app.add_option("--dump-layer", f.job.dump_layer,
                 "layer whose activations --dump writes (default: the scored layer)");
  app.add_option("--dump", f.job.dump,
                 "write a layer's activations for every example: FILE.nc = NetCDF dataset named "
                 "after the layer, else text lines sample<TAB>v1,v2,...; recommendations are then "
                 "written only with -s");
  f.backend_opt = app.add_option(
      "--backend", f.job.backend,
      "cpu, cuda or auto (default auto: cuda when this build has it and the device is usable; "
      "a CDL Backend key is used when the flag is absent)");
  f.device_opt =
      app.add_option("--device", f.job.device,
                     "CUDA device index (default: the CDL Device key, else the node-local "
                     "MPI rank modulo the GPUs of the host: 0 for a single process)")
          ->check(CLI::NonNegativeNumber);
  app.add_option("--precision", f.job.precision,
                 "fp32 or bf16: arithmetic of the dense matrix products (bf16: BF16 operands with "
                 "FP32 accumulation; needs AVX512-BF16 on the CPU or compute capability 8.0 on "
                 "CUDA). Default: the CDL Precision key, else fp32 (network files do not record "
                 "the precision they were trained in)")
      ->check(CLI::IsMember({"fp32", "bf16"}, CLI::ignore_case));
  app.add_flag("--force-precision", f.job.force_precision,
               "keep BF16 even where it measures slower than FP32: on a CPU, a BF16 run first "
               "times the network's widest dense product in both precisions and, where BF16 is "
               "the slower, says so and computes in FP32");
  app.add_option("--threads", f.job.threads,
                 "CPU threads (default: the CPUs this process may use, shared among the ranks "
                 "of an mpirun job on this host)");
  app.add_flag("-q,--quiet", f.quiet, "print errors only");
  add_memory_limit_option(app, f.memory_limit);
}

// The job of a CDL file with the flags given beside it applied (each override is described in
// `overrides`).
void job_from_cdl(CLI::App& app, Flags& f, std::vector<std::string>& overrides) {
  api::PredictJob& job = f.job;
  if (!job.network.empty() || !job.text_input.empty())
    throw UsageError("give either a CDL file or -n/-r, not both");
  const api::CommandFile file = api::CommandFile::read(f.cdl);
  if (file.command() != "Predict")
    throw UsageError(f.cdl + ": Command is " + file.command() +
                     "; nn-predict runs Predict (use nn-train for Train)");
  apply_memory_limit(f.memory_limit, file.memory_limit());
  if (f.backend_opt->count() == 0 && !file.backend().empty()) job.backend = file.backend();
  if (f.device_opt->count() == 0 && file.device()) job.device = *file.device();
  const api::PredictJob p = api::predict_job(file);  // the CDL's values, before the flags
  job.network = p.network;
  // Flags given with a CDL file override its keys; each override is printed.
  auto take = [&](const char* flag, const char* key, auto& value, const auto& from_cdl,
                  const std::string& cdl_text) {
    const CLI::Option* opt = app.get_option(flag);
    if (opt->count() == 0) {
      value = from_cdl;
      return;
    }
    const std::string given = opt->get_expected_min() == 0 ? "" : " " + opt->as<std::string>();
    overrides.push_back(opt->get_name() + given + " overrides " + f.cdl + "'s " + key + " " +
                        (cdl_text.empty() ? "(unset)" : cdl_text));
  };
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : ",") + x;
    return out;
  };
  take("--data", "Data", job.data_files, p.data_files, join(p.data_files));
  take("-k", "K", job.k, p.k, std::to_string(p.k));
  take("-s", "Output", job.output, p.output.empty() ? std::string("-") : p.output, p.output);
  take("-f", "Filter", job.filter, p.filter, p.filter);
  take("-o", "OutputIndex", job.output_index, p.output_index, p.output_index);
  take("--sample-index", "SampleIndex", job.sample_index, p.sample_index, p.sample_index);
  take("-i", "InputIndex", job.input_index, p.input_index, p.input_index);
  take("-l", "Layer", job.layer, p.layer, p.layer);
  take("--target", "Target", job.target, p.target, p.target);
  take("--rank-input-items", "RankInputItems", job.rank_input_items, p.rank_input_items,
       p.rank_input_items ? "true" : "false");
  take("--remap-index", "RemapIndex", job.remap_index, p.remap_index,
       p.remap_index ? "true" : "false");
  take("-p", "ScoreFormat", job.score_format, p.score_format, p.score_format);
  take("-b", "MiniBatch", job.minibatch, p.minibatch, std::to_string(p.minibatch));
  take("--precision", "Precision", job.precision, p.precision, p.precision);
  job.force_precision = job.force_precision || p.force_precision;  // the flag or the CDL key
}

// DSSTNE predict's flags alone.
void check_flags_job(Flags& f) {
  apply_memory_limit(f.memory_limit, std::nullopt);
  if (f.k_opt->count() == 0) f.job.k = 100;
  if (f.job.network.empty()) throw UsageError("need a CDL file or -n network.nc");
  if (f.job.text_input.empty() && f.job.data_files.empty())
    throw UsageError("need examples to score: -r examples.txt or --data file.nc");
}

// Each output a file of its own, none of them an input, however the names are spelled. Files
// are named by their flag, or by their CDL key when the command file gave them.
void check_files(const CLI::App& app, const Flags& f) {
  const api::PredictJob& job = f.job;
  const auto name = [&](const char* flag, const char* key) {
    return std::string(f.cdl.empty() || app.get_option(flag)->count() ? flag : key);
  };
  std::vector<api::NamedFile> inputs = {{name("-n", "Network"), job.network},
                                        {"-r", job.text_input},
                                        {name("-i", "InputIndex"), job.input_index},
                                        {name("-o", "OutputIndex"), job.output_index},
                                        {name("--sample-index", "SampleIndex"), job.sample_index},
                                        {name("-f", "Filter"), job.filter},
                                        {name("--target", "Target"), job.target}};
  for (const std::string& d : job.data_files) inputs.push_back({name("--data", "Data"), d});
  const std::string recs = api::is_stdout_path(job.output) ? std::string("-") : job.output;
  api::check_distinct_files({{name("-s", "Output"), job.write_recs ? recs : std::string()},
                             {"--top-classes", job.top_classes},
                             {"--dump", job.dump}},
                            inputs);
}

// The checks every job passes; returns whether results go to standard output (log lines are
// then prefixed with the tool's name, so they stand out from the results in a terminal).
bool check_job(Flags& f) {
  api::PredictJob& job = f.job;
  if (f.type != "indicator" && f.type != "analog")
    throw UsageError("-t: expected 'indicator' or 'analog', got '" + f.type + "'");
  job.text_analog = f.type == "analog";
  if (job.k == 0) throw UsageError("-k: must be positive");
  if (!job.dump_layer.empty() && job.dump.empty())
    throw UsageError("--dump-layer needs --dump FILE");
  // With a dump, recommendations are wanted only when an output file is named.
  if (!job.dump.empty() && api::is_stdout_path(job.output)) job.write_recs = false;
  const bool to_stdout =
      (job.write_recs && api::is_stdout_path(job.output)) ||
      (!job.dump.empty() && api::is_stdout_path(job.dump) && !api::is_netcdf_path(job.dump));
  if (job.write_recs && api::is_stdout_path(job.output) && !job.top_classes.empty() &&
      api::is_stdout_path(job.top_classes))
    throw UsageError("--top-classes -: standard output already carries the recommendations");
  if (job.minibatch == 0) throw UsageError("-b: must be positive");
  return to_stdout;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "Score examples with a trained network; print the top K outputs per example as\n"
      "  sample<TAB>label,score:label,score:...:\n"
      "  nn-predict predict.cdl             run a CDL command file (Command: Predict)\n"
      "  nn-predict -n net.nc -r examples.txt -i input.idx -o output.idx [-f filter] [-k 10]\n"
      "                                     DSSTNE predict's flags",
      "nn-predict"};
  Flags f;
  define_flags(app, f);
  int status = 0;
  if (parse_or_exit(app, rewrite_single_dash(argc, argv, {}), status)) return status;

  // One process per GPU: without --device (or a CDL Device key, applied below) a rank takes
  // the device of its node-local rank (nn/process.h).
  if (f.device_opt->count() == 0) f.job.device = api::default_device();
  std::vector<std::string> overrides;
  if (!f.cdl.empty())
    job_from_cdl(app, f, overrides);
  else
    check_flags_job(f);
  const bool to_stdout = check_job(f);
  check_files(app, f);
  api::PredictJob& job = f.job;
  if (job.threads <= 0) job.threads = api::default_thread_count();
  const LogSink log = f.quiet ? null_log() : stream_log(stderr, to_stdout ? "nn-predict: " : "");
  for (const std::string& line : overrides) log(line);
  if (job.network == "-" && job.text_input == "-")
    throw UsageError("-n - and -r - both read standard input; give one of them a file");
  const StdinSpool network_from_stdin(job.network, "network");
  api::run_prediction(job, log);
  return 0;
}

}  // namespace nn::tool
