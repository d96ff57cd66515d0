// Reads CDL command files (docs/config-reference.md, "Command file (CDL)"; DSSTNE's reader is
// utils/cdl.cpp) into a CdlSpec: case-insensitive keys, DSSTNE's defaults, plus what DSSTNE
// documented but never parsed (MiniBatch, ShuffleIndices, Lambda1, Mu1, every optimizer,
// PredictionParameters, Data arrays). Relative paths are resolved against the CDL file's
// directory.
#include <cctype>
#include <climits>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>

#include "config/enum_names.h"
#include "config/json_reader.h"
#include "config/parse.h"
#include "config/sampling_json.h"
#include "core/error.h"
#include "core/memory_budget.h"

namespace nn {
namespace {

using config_detail::Json;
using config_detail::JsonReader;
using config_detail::Member;

constexpr int64_t kMaxInt = INT_MAX;
constexpr int64_t kMaxU32 = UINT32_MAX;

class CdlParser {
 public:
  explicit CdlParser(const std::string& source) : r_(source) {}

  CdlSpec parse(const Json& root) {
    CdlSpec spec;
    bool has_network = false, has_command = false, has_data = false;
    const auto members = r_.members(root, "");
    for (const auto& m : members) {
      // A network description given where a command file belongs is a common first mistake.
      if (m.lower == "layers" && !root.contains("Command") && !root.contains("command"))
        r_.fail("",
                "this looks like a network file, not a command file: it has Layers and no "
                "Command. A CDL command file names the network and the data, e.g. "
                "{\"Command\": \"Train\", \"Network\": \"net.json\", \"Data\": "
                "[\"in.nc\", \"out.nc\"], \"TrainingParameters\": {\"Epochs\": 10}}; or "
                "give the network with -c (nn-train -c net.json -i in.nc -o out.nc -n out.nc)");
    }
    for (const auto& m : members) {
      const std::string& k = m.lower;
      if (k == "version") {
        spec.version = r_.get_float(m);
      } else if (k == "network") {
        spec.network = non_empty_string(m);
        has_network = true;
      } else if (k == "command") {
        spec.command = r_.get_enum<Command>(m);
        has_command = true;
      } else if (k == "data") {
        spec.data = r_.get_string_list(*m.value, m.path, /*allow_empty=*/false);
        for (const auto& d : spec.data)
          if (d.empty()) r_.fail(m.path, "dataset file names must not be empty");
        has_data = true;
      } else if (k == "randomseed") {
        // DSSTNE's CDL document: -1 means "seed from the clock", i.e. let the tool pick.
        const int64_t seed = r_.get_int(*m.value, m.path, -1, std::numeric_limits<int64_t>::max());
        if (seed >= 0) spec.random_seed = uint64_t(seed);
      } else if (k == "memorylimit") {
        spec.memory_limit = memory_limit(m);
      } else if (k == "parallel") {
        const std::string mode = to_lower(r_.get_string(m));
        if (mode == "auto")
          spec.parallel = ParallelMode::Auto;
        else if (mode == "data")
          spec.parallel = ParallelMode::Data;
        else if (mode == "model")
          spec.parallel = ParallelMode::Model;
        else
          r_.fail(m.path,
                  "expected \"Auto\", \"Data\" or \"Model\", not \"" + r_.get_string(m) + "\"");
      } else if (k == "link") {
        spec.link = r_.get_string(m);
        if (spec.link.empty()) r_.fail(m.path, "expected a link preset's name or a file name");
      } else if (k == "backend") {
        spec.backend = r_.get_string(m);
        if (spec.backend != "cpu" && spec.backend != "cuda" && spec.backend != "auto")
          r_.fail(m.path,
                  "expected \"cpu\", \"cuda\" or \"auto\", got " + Json(spec.backend).dump());
      } else if (k == "precision") {
        spec.precision = r_.get_enum<Precision>(m);
      } else if (k == "forceprecision") {
        spec.force_precision = r_.get_bool(m);
      } else if (k == "device") {
        spec.device = int(r_.get_int(*m.value, m.path, 0, kMaxInt));
      } else if (k == "trainingparameters") {
        parse_training(m, spec.training);
      } else if (k == "predictionparameters") {
        parse_prediction(m, spec.prediction);
      } else if (k == "serveparameters") {
        parse_serve(m, spec.serve);
      } else {
        r_.unknown_key(m, {"Version", "Network", "Command", "Data", "RandomSeed", "MemoryLimit",
                           "Parallel", "Link", "Backend", "Device", "Precision", "ForcePrecision",
                           "TrainingParameters", "PredictionParameters", "ServeParameters"});
      }
    }
    if (!has_network) {
      r_.fail("Network",
              "missing; required (the network JSON file to train or validate, or the "
              "trained network .nc file to predict with)");
    }
    if (!has_command) r_.fail("Command", "missing; required (Train, Predict, Validate or Serve)");
    // A server reads its examples from requests.
    if (!has_data && spec.command != Command::Serve)
      r_.fail("Data", "missing; required (a NetCDF dataset file or an array of them)");
    // Closed-form training is one solve: no epochs to give.
    if (spec.command == Command::Train && !has_epochs_ && spec.training.solver != "LeastSquares") {
      r_.fail("TrainingParameters.Epochs",
              "missing; required when Command is Train (a number of epochs > 0)");
    }
    return spec;
  }

 private:
  // A byte count (number) or a size with a unit ("8G", "512M").
  uint64_t memory_limit(const Member& m) const {
    if (m.value->is_number())
      return uint64_t(r_.get_int(*m.value, m.path, 1, std::numeric_limits<int64_t>::max()));
    const auto bytes = parse_byte_size(r_.get_string(m));
    if (!bytes) r_.fail(m.path, "expected a size such as \"8G\", \"512M\" or a number of bytes");
    return *bytes;
  }

  std::string non_empty_string(const Member& m) const {
    std::string s = r_.get_string(m);
    if (s.empty()) r_.fail(m.path, "must not be empty");
    return s;
  }

  // Resume: "Auto" (or true) continues from a checkpoint when there is one; "Never" (or false)
  // starts afresh.
  bool resume_mode(const Member& m) const {
    if (m.value->is_boolean()) return r_.get_bool(m);
    const std::string mode = m.value->is_string() ? to_lower(m.value->get<std::string>()) : "";
    if (mode == "auto") return true;
    if (mode == "never") return false;
    r_.fail(m.path, "expected \"Auto\", \"Never\", true or false, got " + m.value->dump());
    return false;
  }

  uint32_t positive_u32(const Member& m) const {
    return uint32_t(r_.get_int(*m.value, m.path, 1, kMaxU32));
  }

  float float_at_least(const Member& m, float lo, const char* rule) const {
    const float v = r_.get_float(m);
    r_.require(v >= lo, m.path, rule, v);
    return v;
  }

  float unit_interval(const Member& m) const {
    const float v = r_.get_float(m);
    r_.require(v >= 0 && v < 1, m.path, "in [0, 1)", v);
    return v;
  }

  void parse_training(const Member& parent, TrainingParameters& t) {
    for (const auto& m : r_.members(*parent.value, parent.path)) {
      const std::string& k = m.lower;
      if (k == "epochs") {
        t.epochs = int(r_.get_int(*m.value, m.path, 1, kMaxInt));
        has_epochs_ = true;
      } else if (k == "minibatch") {
        t.minibatch = positive_u32(m);
      } else if (k == "alpha") {
        t.alpha = float_at_least(m, 0, ">= 0");
      } else if (k == "lambda") {
        t.lambda = float_at_least(m, 0, ">= 0");
      } else if (k == "lambda1") {
        t.lambda1 = float_at_least(m, 0, ">= 0");
      } else if (k == "mu") {
        t.mu = unit_interval(m);
      } else if (k == "mu1") {
        t.mu1 = unit_interval(m);
      } else if (k == "alphainterval") {
        // DSSTNE reads a number and truncates it to whole epochs.
        const double v = r_.get_double(*m.value, m.path);
        r_.require(v >= 0 && v <= kMaxInt, m.path, ">= 0", v);
        t.alpha_interval = int(v);
      } else if (k == "alphamultiplier") {
        t.alpha_multiplier = r_.get_float(m);
        r_.require(t.alpha_multiplier > 0, m.path, "> 0", t.alpha_multiplier);
      } else if (k == "optimizer") {
        t.optimizer = r_.get_enum<OptimizerKind>(m);
      } else if (k == "checkpointname") {
        t.checkpoint_name = non_empty_string(m);
      } else if (k == "checkpointinterval") {
        t.checkpoint_interval = int(r_.get_int(*m.value, m.path, 0, kMaxInt));
      } else if (k == "checkpointskept") {
        t.checkpoints_kept = int(r_.get_int(*m.value, m.path, 0, kMaxInt));
      } else if (k == "results") {
        t.results = non_empty_string(m);
      } else if (k == "shuffleindices") {
        t.shuffle_indices = r_.get_bool(m);
      } else if (k == "validationdata") {
        t.validation_data = r_.get_string_list(*m.value, m.path, /*allow_empty=*/true);
        for (const auto& d : t.validation_data)
          if (d.empty()) r_.fail(m.path, "dataset file names must not be empty");
      } else if (k == "validationinterval") {
        t.validation_interval = positive_u32(m);
      } else if (k == "validationk") {
        t.validation_k = positive_u32(m);
      } else if (k == "validationrankinputitems") {
        t.validation_rank_input_items = r_.get_bool(m);
      } else if (k == "patience") {
        t.patience = uint32_t(r_.get_int(*m.value, m.path, 0, kMaxU32));
      } else if (k == "keepbest") {
        t.keep_best = r_.get_bool(m);
      } else if (k == "stream") {
        t.stream = r_.get_bool(m);
      } else if (k == "sampling") {
        t.sampling = parse_sampling(r_, m);
      } else if (k == "fitbias") {
        t.fit_bias = r_.get_bool(m);
      } else if (k == "zerodiagonal") {
        t.zero_diagonal = r_.get_bool(m);
      } else if (k == "sparseupdate") {
        t.sparse_update = r_.get_string(*m.value, m.path);
        const std::string lower = to_lower(t.sparse_update);
        if (lower != "exact" && lower != "dense" && lower != "lazy")
          r_.fail(m.path,
                  "expected \"Exact\", \"Dense\" or \"Lazy\", got \"" + t.sparse_update + "\"");
      } else if (k == "lazyupdate") {
        t.sparse_update = r_.get_bool(m) ? "Lazy" : "Exact";
      } else if (k == "profile") {
        t.profile = r_.get_bool(m);
      } else if (k == "trace") {
        t.trace = non_empty_string(m);
      } else if (k == "tracesteps") {
        t.trace_steps = uint32_t(r_.get_int(*m.value, m.path, 0, kMaxU32));
      } else if (k == "tensorboard") {
        t.tensorboard = non_empty_string(m);
      } else if (k == "warmstart") {
        t.warm_start = non_empty_string(m);
      } else if (k == "resume") {
        t.resume = resume_mode(m);
      } else if (k == "tensorboardinterval") {
        t.tensorboard_interval = uint32_t(r_.get_int(*m.value, m.path, 0, kMaxU32));
      } else if (k == "solver") {
        t.solver = r_.get_string(*m.value, m.path);
        if (t.solver != "Gradient" && t.solver != "LeastSquares")
          r_.fail(m.path, "expected \"Gradient\" or \"LeastSquares\", got \"" + t.solver + "\"");
      } else {
        r_.unknown_key(m, {"Epochs",
                           "MiniBatch",
                           "Alpha",
                           "Lambda",
                           "Lambda1",
                           "Mu",
                           "Mu1",
                           "AlphaInterval",
                           "AlphaMultiplier",
                           "Optimizer",
                           "CheckpointName",
                           "CheckpointInterval",
                           "CheckpointsKept",
                           "Results",
                           "ShuffleIndices",
                           "ValidationData",
                           "ValidationInterval",
                           "ValidationK",
                           "ValidationRankInputItems",
                           "Patience",
                           "KeepBest",
                           "Stream",
                           "Sampling",
                           "Solver",
                           "FitBias",
                           "ZeroDiagonal",
                           "SparseUpdate",
                           "LazyUpdate",
                           "Profile",
                           "Trace",
                           "TraceSteps",
                           "TensorBoard",
                           "TensorBoardInterval",
                           "WarmStart",
                           "Resume"});
      }
    }
  }

  void parse_prediction(const Member& parent, PredictionParameters& p) {
    std::set<std::string> seen;
    for (const auto& m : r_.members(*parent.value, parent.path)) {
      const std::string& k = m.lower;
      if (k == "minibatch") {
        p.minibatch = positive_u32(m);
      } else if (k == "k" || k == "topk") {
        if (!seen.insert("K").second) r_.fail(m.path, "given twice (K and its alias TopK)");
        p.k = int(r_.get_int(*m.value, m.path, 1, kMaxInt));
      } else if (k == "output") {
        p.output = r_.get_string(m);
      } else if (k == "filter") {
        p.filter = r_.get_string(m);
      } else if (k == "inputindex") {
        p.input_index = r_.get_string(m);
      } else if (k == "outputindex") {
        p.output_index = r_.get_string(m);
      } else if (k == "sampleindex") {
        p.sample_index = r_.get_string(m);
      } else if (k == "layer") {
        p.layer = r_.get_string(m);
      } else if (k == "scoreformat") {
        p.score_format = r_.get_string(m);
        if (!valid_score_format(p.score_format)) {
          r_.fail(m.path,
                  "expected a printf format with exactly one floating-point conversion "
                  "(e.g. \"%.3f\"), got " +
                      Json(p.score_format).dump());
        }
      } else if (k == "target") {
        p.target = r_.get_string(m);
      } else if (k == "rankinputitems") {
        p.rank_input_items = r_.get_bool(m);
      } else if (k == "remapindex") {
        p.remap_index = r_.get_bool(m);
      } else {
        r_.unknown_key(
            m, {"MiniBatch", "K", "TopK", "Output", "Filter", "InputIndex", "OutputIndex",
                "SampleIndex", "Layer", "ScoreFormat", "Target", "RankInputItems", "RemapIndex"});
      }
    }
  }

  void parse_serve(const Member& parent, ServeParameters& p) {
    for (const auto& m : r_.members(*parent.value, parent.path)) {
      const std::string& k = m.lower;
      if (k == "inputindex") {
        p.input_index = non_empty_string(m);
      } else if (k == "outputindex") {
        p.output_index = non_empty_string(m);
      } else if (k == "remapindex") {
        p.remap_index = r_.get_bool(m);
      } else if (k == "host") {
        p.host = non_empty_string(m);
      } else if (k == "port") {
        p.port = int(r_.get_int(*m.value, m.path, 0, 65535));
      } else if (k == "grpcport") {
        p.grpc_port = int(r_.get_int(*m.value, m.path, 0, 65535));
      } else if (k == "grpctlscert") {
        p.grpc_tls_cert = non_empty_string(m);
      } else if (k == "grpctlskey") {
        p.grpc_tls_key = non_empty_string(m);
      } else if (k == "threads") {
        p.threads = int(r_.get_int(*m.value, m.path, 1, 4096));
      } else if (k == "maxbatch") {
        p.max_batch = positive_u32(m);
      } else if (k == "maxdelayms") {
        const double v = r_.get_double(*m.value, m.path);
        r_.require(v >= 0 && v <= 10000, m.path, "in [0, 10000]", float(v));
        p.max_delay_ms = v;
      } else if (k == "k") {
        p.k = positive_u32(m);
      } else if (k == "maxk") {
        p.max_k = positive_u32(m);
      } else if (k == "maxbody") {
        p.max_body = memory_limit(m);
      } else if (k == "modelname") {
        p.model_name = non_empty_string(m);
      } else {
        r_.unknown_key(m, {"InputIndex", "OutputIndex", "Host", "Port", "GrpcPort", "GrpcTlsCert",
                           "GrpcTlsKey", "Threads", "MaxBatch", "MaxDelayMs", "K", "MaxK",
                           "MaxBody", "ModelName", "RemapIndex"});
      }
    }
  }

  JsonReader r_;
  bool has_epochs_ = false;
};

}  // namespace

// The predict tool hands the format one float per score, so anything else would read garbage.
bool valid_score_format(const std::string& format) {
  int conversions = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') continue;
    if (++i < format.size() && format[i] == '%') continue;
    while (i < format.size() && std::strchr("-+ #0", format[i])) ++i;
    while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) ++i;
    if (i < format.size() && format[i] == '.') {
      ++i;
      while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i]))) ++i;
    }
    if (i >= format.size() || !std::strchr("fFeEgGaA", format[i])) return false;
    ++conversions;
  }
  return conversions == 1;
}

CdlSpec parse_cdl(const std::string& text, const std::string& source) {
  using config_detail::resolve_path;
  const std::string where = source.empty() ? "<CDL>" : source;
  if (config_detail::looks_like_netcdf(text))
    throw ConfigError(where +
                      ": this is a NetCDF file (a dataset or a trained network), not a "
                      "command file; a CDL command file is JSON text");
  CdlSpec spec = CdlParser(where).parse(config_detail::parse_json_text(text, where));
  spec.source = source;

  // Paths in a command file are relative to the file, so a run does not depend on the CWD.
  const std::string base = config_detail::parent_directory(source);
  spec.network = resolve_path(base, spec.network);
  // A link file (not a preset's name, which has neither) is relative to the command file.
  if (spec.link.find('/') != std::string::npos ||
      (spec.link.size() > 5 && spec.link.compare(spec.link.size() - 5, 5, ".json") == 0))
    spec.link = resolve_path(base, spec.link);
  for (auto& d : spec.data) d = resolve_path(base, d);
  TrainingParameters& t = spec.training;
  t.results = resolve_path(base, t.results);
  t.checkpoint_name = resolve_path(base, t.checkpoint_name);
  t.trace = resolve_path(base, t.trace);
  t.tensorboard = resolve_path(base, t.tensorboard);
  t.warm_start = resolve_path(base, t.warm_start);
  for (auto& d : t.validation_data) d = resolve_path(base, d);
  PredictionParameters& p = spec.prediction;
  for (std::string* path :
       {&p.output, &p.filter, &p.input_index, &p.output_index, &p.sample_index, &p.target})
    *path = resolve_path(base, *path);
  for (std::string* path : {&spec.serve.input_index, &spec.serve.output_index,
                            &spec.serve.grpc_tls_cert, &spec.serve.grpc_tls_key})
    *path = resolve_path(base, *path);
  return spec;
}

CdlSpec load_cdl(const std::string& path) {
  return parse_cdl(config_detail::read_text_file(path, "CDL command file"), path);
}

}  // namespace nn
