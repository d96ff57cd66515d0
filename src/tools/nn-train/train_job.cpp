// Executes a TrainJob: datasets -> network -> trainer -> result file.
#include "nn-train/train_job.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "backend/backend.h"
#include "config/parse.h"
#include "core/error.h"
#include "data/netcdf_dataset.h"
#include "model/binding.h"
#include "model/io/network_file.h"

namespace nn::tool {
namespace fs = std::filesystem;

std::string newest_checkpoint(const std::string& checkpoint_name, uint64_t* epoch_out) {
  const fs::path prefix(checkpoint_name);
  fs::path dir = prefix.parent_path();
  if (dir.empty()) dir = ".";
  const std::string stem = prefix.filename().string();
  std::string best;
  uint64_t best_epoch = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= stem.size() + 3 || name.compare(0, stem.size(), stem) != 0 ||
        name.compare(name.size() - 3, 3, ".nc") != 0)
      continue;
    const std::string digits = name.substr(stem.size(), name.size() - stem.size() - 3);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const uint64_t e = std::stoull(digits);
    if (best.empty() || e > best_epoch) {
      best = entry.path().string();
      best_epoch = e;
    }
  }
  if (epoch_out) *epoch_out = best_epoch;
  return best;
}

int run_train_job(const TrainJob& job, const LogSink& log) {
  const auto start = std::chrono::steady_clock::now();
  NetworkSpec spec = load_network_json(job.network_json);
  std::vector<DataSet> sets;
  std::string files;
  for (const auto& f : job.data_files) {
    auto more = read_datasets(f);
    for (auto& s : more) {
      log("dataset '" + s.name + "' from " + f + ": " + std::to_string(s.examples) +
          " examples, " + std::to_string(s.features()) + " features" +
          (s.is_sparse() ? ", " + std::to_string(s.nnz()) + " non-zeros" : std::string(", dense")));
      sets.push_back(std::move(s));
    }
    files += (files.empty() ? "" : ", ") + f;
  }
  resolve_auto_sizes(spec, sets);
  const BoundData bound = bind_datasets(spec, sets, /*need_outputs=*/true, files);

  auto backend = make_backend(job.backend, job.threads);
  Network net(*backend, spec, bound.sparse_inputs());
  TrainOptions options = job.options;
  options.shuffle = job.shuffle.value_or(spec.shuffle_indices);
  options.optimizer.decay = spec.decay;

  NetworkFile checkpoint;
  bool resumed = false;
  if (job.resume && !options.checkpoint_name.empty()) {
    uint64_t epoch = 0;
    const std::string path = newest_checkpoint(options.checkpoint_name, &epoch);
    if (!path.empty()) {
      checkpoint = read_network_file(path);
      if (!checkpoint.training.present)
        throw DataError(path + ": has no training state (not written by nn-train); cannot resume");
      net.load_arrays(checkpoint);
      resumed = true;
      log("resuming from " + path);
    } else {
      log("no checkpoint matching '" + options.checkpoint_name + "<epoch>.nc'; starting afresh");
    }
  }
  if (!resumed) net.initialize(options.seed);
  if (resumed) options.seed = checkpoint.training.seed;

  Trainer trainer(net, bound, options, log);
  if (resumed) trainer.restore(checkpoint.training);
  if (trainer.epoch() >= options.epochs)
    log("already trained for " + std::to_string(trainer.epoch()) + " epochs; nothing to do");
  trainer.run();
  write_network_file(job.results, trainer.snapshot());
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", secs);
  log("wrote " + job.results + " (total " + buf + " s)");
  return 0;
}

}  // namespace nn::tool
