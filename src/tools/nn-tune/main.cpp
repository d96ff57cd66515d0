// nn-tune: searches a config's settings (docs/tuning.md). The trials' settings are drawn from
// the tune file's search space (random, grid, or TPE from the results so far: sampler.h); the
// schedule (schedule.h) runs each trial for the first rung's epochs and continues the best 1/Eta
// of a rung from their checkpoints to the next, Eta times longer, up to Max epochs: rung by rung
// (successive halving) or as soon as a trial is among the best of its rung so far (ASHA). Each
// trial is an nn-train process of its own (the one beside this executable) in
// <Output>/trial-NNN, up to --parallel at a time; every finished rung is a row of
// <Output>/results.tsv and every draw a line of trials.jsonl (results.h), so a killed tune
// started again goes on where it stopped. The winner's network JSON, command file and trained
// network are copied to <Output>/best. A time budget (--seconds, "Seconds") stops new trials from
// starting once it is spent; the winner is then the best of the deepest rung reached.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/cli_support.h"
#include "common/tool_main.h"
#include "nn-tune/results.h"
#include "nn-tune/sampler.h"
#include "nn-tune/schedule.h"
#include "nn-tune/tune_file.h"
#include "nn-tune/workers.h"
#include "nn/process.h"
#include "nn/stop.h"

const char* const nn::tool::kToolName = "nn-tune";

namespace nn::tool {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using Clock = std::chrono::steady_clock;

// The tune as it runs: the trials' settings, the schedule's state and the records.
struct Tune {
  const TuneFile& t;
  std::vector<json> settings;
  std::vector<uint32_t> rungs;
  ScheduleState state;
  std::string results;
  bool quiet = false;
  std::set<uint32_t> announced;  // Halving: rungs whose start was printed
  bool keep_files = false;       // --keep-files
  std::set<uint32_t> pruned;     // trials whose checkpoints and network are gone

  // A trial that will never run again and cannot win needs neither its checkpoints nor its
  // network (a few hundred MB each for an item x item network): they go as soon as that is
  // certain, so a search of many trials does not fill the disk.
  void prune() {
    if (keep_files) return;
    for (uint32_t trial : retired(state)) {
      if (!pruned.insert(trial).second) continue;
      std::error_code ignored;
      for (const auto& entry : fs::directory_iterator(trial_dir(t, trial), ignored)) {
        const std::string name = entry.path().filename().string();
        if (name == "network.nc" ||
            (name.rfind("checkpoint", 0) == 0 && entry.path().extension() == ".nc"))
          fs::remove(entry.path(), ignored);
      }
    }
  }

  // TPE's view of the trials so far: each drawn trial's deepest finished rung and its metric.
  std::vector<Observation> observations() const {
    std::vector<Observation> out;
    for (const auto& [trial, rung] : deepest_rungs(state))
      if (trial < settings.size())
        out.push_back({settings[trial], rung, state.finished.at({trial, rung})});
    return out;
  }

  // The drawn trials without a finished rung (running, or waiting for a worker).
  std::vector<json> pending() const {
    std::set<uint32_t> finished;
    for (const auto& [trial, rung] : deepest_rungs(state)) finished.insert(trial);
    std::vector<json> out;
    for (uint32_t trial = 0; trial < settings.size(); ++trial)
      if (!finished.count(trial)) out.push_back(settings[trial]);
    return out;
  }

  void draw() {
    const uint32_t index = uint32_t(settings.size());
    std::mt19937_64 rng = trial_rng(t.seed, index);
    const bool model = index >= t.startup_trials;
    std::vector<Observation> seen = model ? observations() : std::vector<Observation>();
    const size_t results = seen.size();
    if (model && t.constant_liar && results > 0) seen = with_liars(std::move(seen), pending());
    TpeOptions options;
    options.multivariate = t.multivariate;
    json s = model ? tpe_draw(t.space, seen, settings, rng, options)
                   : distinct_random_draw(t.space, settings, rng);
    append_trial(t, s);
    settings.push_back(s);
    state.drawn = uint32_t(settings.size());
    if (!quiet && model) {
      const std::string liars = seen.size() > results
                                    ? " and " + std::to_string(seen.size() - results) +
                                          " trials without one (as the worst)"
                                    : "";
      std::fprintf(stderr, "nn-tune: trial %u drawn by TPE from %zu results%s: %s\n", index,
                   results, liars.c_str(), s.dump().c_str());
    }
  }

  // Halving prints each rung's start once: how many trials it runs now.
  void announce(uint32_t rung) {
    if (quiet || t.asynchronous || announced.count(rung)) return;
    announced.insert(rung);
    size_t to_run = 0, before = 0;
    for (uint32_t trial : halving_members(state, rung))
      (state.finished.count({trial, rung}) ? before : to_run) += 1;
    std::fprintf(stderr, "nn-tune: rung %u of %zu: %zu trials to %u epochs%s\n", rung + 1,
                 rungs.size(), to_run, rungs[rung], before ? " (the others ran before)" : "");
  }
};

// Runs the schedule's jobs, up to `parallel` at a time, until it is done. A stop request
// (SIGTERM, SIGINT, SIGHUP: common/signals.h) is passed on to the running trials, which
// checkpoint and end; their rungs are not recorded (the next run resumes them) and no more
// start. After `deadline` (the time budget) no more start either; those running finish.
void run_jobs(Tune& tune, Workers& workers, Clock::time_point deadline) {
  const TuneFile& t = tune.t;
  bool forwarded = false;
  for (;;) {
    const bool stopping = api::stop_signal() != 0;
    while (!stopping && Clock::now() < deadline && workers.free_slots() > 0) {
      const Job job = next_job(tune.state);
      if (job.kind == Job::Kind::Wait || job.kind == Job::Kind::Done) break;
      if (job.kind == Job::Kind::Draw) tune.draw();
      const std::string dir = trial_dir(t, job.trial);
      if (job.rung == 0) write_trial_files(t, tune.settings[job.trial], dir);
      tune.announce(job.rung);
      if (!tune.quiet && t.asynchronous && job.kind == Job::Kind::Promote)
        std::fprintf(stderr, "nn-tune: promoting trial %u to rung %u (%u epochs)\n", job.trial,
                     job.rung + 1, tune.rungs[job.rung]);
      const int rank = workers.start(job.trial, job.rung, dir, tune.rungs[job.rung]);
      if (!tune.quiet && api::world_size() > 1)
        std::fprintf(stderr, "nn-tune: trial %u to %u epochs on rank %d\n", job.trial,
                     tune.rungs[job.rung], rank);
      tune.state.running.insert({job.trial, job.rung});
    }
    if (workers.running() == 0) break;
    const std::optional<TrialEnd> finished = workers.poll();
    if (!finished) {
      if (stopping && !forwarded) {
        workers.stop_all();
        forwarded = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    tune.state.running.erase({finished->trial, finished->rung});
    const int status = finished->status;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    // Stopped mid-rung: resumed by the next run, not a failure. The signal is checked again
    // here: under mpirun (or a process group's kill) the trials get it beside nn-tune, and a
    // trial can end before this loop has passed it on (it was recorded failed:exit143 once).
    if (!ok && (forwarded || api::stop_signal() != 0)) continue;
    Row r;
    r.trial = finished->trial;
    r.rung = finished->rung;
    r.epochs = tune.rungs[finished->rung];
    r.seconds = finished->seconds;
    r.status = ok ? "ok"
                  : (WIFEXITED(status) ? "failed:exit" + std::to_string(WEXITSTATUS(status))
                                       : "failed:signal" + std::to_string(WTERMSIG(status)));
    if (ok) std::tie(r.metric, r.best_epoch) = best_metric(t, trial_dir(t, r.trial), r.epochs);
    append_row(tune.results, r, tune.settings[r.trial]);
    tune.state.finished[{r.trial, r.rung}] = r.metric;
    tune.prune();
    // One write per line: stderr is unbuffered, and under mpirun a line written in pieces can
    // be cut by the other stream's output (the final "best:" line on stdout landed inside one).
    if (!tune.quiet && ok)
      std::fprintf(stderr, "nn-tune: trial %u, %u epochs: %s@%u %.4f (epoch %u), %.1f s\n", r.trial,
                   r.epochs, t.metric.c_str(), t.k, r.metric, r.best_epoch, r.seconds);
    else if (!tune.quiet)
      std::fprintf(stderr, "nn-tune: trial %u, %u epochs: %s (see %s/train.log)\n", r.trial,
                   r.epochs, r.status.c_str(), trial_dir(t, r.trial).c_str());
  }
}

void copy_winner(const TuneFile& t, const Row& best, const json& settings) {
  const fs::path from = trial_dir(t, best.trial), to = fs::path(t.output) / "best";
  fs::create_directories(to);
  for (const char* f : {"network.json", "train.cdl", "network.nc"})
    fs::copy_file(from / f, to / f, fs::copy_options::overwrite_existing);
  std::ofstream(to / "settings.json") << json{{"trial", best.trial},
                                              {"metric", t.metric + "@" + std::to_string(t.k)},
                                              {"value", best.metric},
                                              {"epoch", best.best_epoch},
                                              {"settings", settings}}
                                             .dump(2)
                                      << "\n";
}

// The devices the trials of this process are spread over: --devices as given (checked against
// the host's GPUs where it has any; without GPUs nn-train's CPU backend ignores them); else the
// rank's own GPU under mpirun; else, for a single nn-tune running several trials at a time on a
// host with several GPUs, all of them; else none (nn-train's default).
std::vector<int> trial_devices(const std::string& text, bool ranks, int parallel, int gpus) {
  std::vector<int> out;
  if (!text.empty()) {
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
      char* end = nullptr;
      const long d = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end != '\0' || d < 0 || d > 4095)
        throw UsageError("--devices: \"" + item +
                         "\" is not a device index (expected a list "
                         "such as 0,1,2,3)");
      if (gpus > 0 && d >= gpus)
        throw UsageError("--devices: device " + item + " does not exist: this host has " +
                         std::to_string(gpus) + " CUDA device" + (gpus == 1 ? "" : "s") + " (0-" +
                         std::to_string(gpus - 1) + ")");
      out.push_back(int(d));
    }
    return out;
  }
  if (ranks) return {api::default_device()};
  if (parallel > 1 && gpus > 1)
    for (int d = 0; d < gpus; ++d) out.push_back(d);
  return out;
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "Search a config's settings (random, grid or TPE draws; successive halving or "
      "ASHA) on the validation metric.",
      kToolName};
  std::string tune_path;
  int parallel = 1, threads = 0;
  bool quiet = false;
  app.add_option("tune", tune_path, "the tune file (JSON; docs/tuning.md)")->required();
  app.add_option("--parallel", parallel,
                 "trials at a time, each an nn-train process (default 1; under mpirun, on each "
                 "rank)")
      ->check(CLI::Range(1, 256));
  app.add_option("--threads", threads,
                 "CPU threads per trial (default: the CPUs divided among --parallel trials, and "
                 "among the ranks on the host under mpirun)")
      ->check(CLI::Range(0, 4096));
  double seconds = 0;
  app.add_option("--seconds", seconds,
                 "time budget of this run in seconds: no trial starts after it, and the winner "
                 "is the best of the deepest rung reached (default: the tune file's Seconds, "
                 "else none)")
      ->check(CLI::PositiveNumber);
  app.add_flag("-q,--quiet", quiet, "print errors and the final table only");
  std::string devices_text;
  app.add_option("--devices", devices_text,
                 "CUDA devices to spread this process's trials over, e.g. 0,1,2,3 (a trial starts "
                 "on the one running the fewest; default: every GPU of the host for a single "
                 "nn-tune with --parallel above 1, the rank's own GPU under mpirun)");
  bool keep_files = false;
  app.add_flag("--keep-files", keep_files,
               "keep every trial's checkpoints and network.nc (default: removed once the trial "
               "can neither run again nor win)");
  int status = 0;
  if (parse_or_exit(app, std::vector<std::string>(argv, argv + argc), status)) return status;
  // Under mpirun every rank runs trials (rank 0 schedules them): each its share of the host's
  // CPUs and its own CUDA device. Both defaults are collective, so every rank asks.
  const bool ranks = api::world_size() > 1;
  if (threads == 0 && (parallel > 1 || ranks))
    threads = std::max(1, int(api::default_thread_count()) / parallel);
  TrialCommand command{nn_train_path(), threads,
                       trial_devices(devices_text, ranks, parallel, api::cuda_device_count())};
  if (api::world_rank() != 0) return worker_loop(command, parallel);

  TuneFile t = read_tune_file(tune_path);
  if (seconds > 0) t.seconds = seconds;
  const Clock::time_point started = Clock::now();
  const Clock::time_point deadline = t.seconds > 0
                                         ? started + std::chrono::duration_cast<Clock::duration>(
                                                         std::chrono::duration<double>(t.seconds))
                                         : Clock::time_point::max();
  // One tune per Output folder at a time (the lock goes with the process, however it ends).
  fs::create_directories(t.output);
  const std::string lock_path = (fs::path(t.output) / ".lock").string();
  const int lock = open(lock_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0)
    throw IoError(t.output + ": another nn-tune is working in this Output folder (" + lock_path +
                  " is locked)");
  Tune tune{
      t, load_trials(t), rung_epochs(t), {}, (fs::path(t.output) / "results.tsv").string(), quiet,
      {}};
  tune.state.rungs = uint32_t(tune.rungs.size());
  tune.state.eta = t.eta;
  tune.state.asynchronous = t.asynchronous;
  tune.state.trials = t.sampler == "TPE" ? t.trials : uint32_t(tune.settings.size());
  tune.settings.resize(std::min<size_t>(tune.settings.size(), tune.state.trials));
  tune.state.drawn = uint32_t(tune.settings.size());
  for (const Row& r : read_results(tune.results))
    if (r.trial < tune.state.drawn && r.rung < tune.state.rungs)
      tune.state.finished[{r.trial, r.rung}] = r.metric;
  if (!quiet)
    std::fprintf(
        stderr, "nn-tune: %u trials (%s, %s), rungs of %s epochs, %s@%u, output %s\n",
        tune.state.trials, t.sampler.c_str(), t.asynchronous ? "ASHA" : "successive halving",
        [&] {
          std::string s;
          for (uint32_t e : tune.rungs) s += (s.empty() ? "" : "/") + std::to_string(e);
          return s;
        }()
            .c_str(),
        t.metric.c_str(), t.k, t.output.c_str());
  tune.keep_files = keep_files;
  tune.prune();
  if (!quiet && ranks)
    std::fprintf(stderr, "nn-tune: %d ranks, %d trials at a time on each (%d threads per trial)\n",
                 api::world_size(), parallel, threads);
  Workers workers(command, parallel);
  run_jobs(tune, workers, deadline);
  workers.end();
  const std::string& results = tune.results;
  if (const int signal = api::stop_signal()) {
    std::fprintf(stderr,
                 "nn-tune: stopped by %s; %s holds every finished rung, and the same command "
                 "goes on from there\n",
                 api::signal_name(signal).c_str(), results.c_str());
    return 128 + signal;
  }
  const std::optional<Winner> won = winner(tune.state);
  if (next_job(tune.state).kind != Job::Kind::Done) {
    // The time budget ran out: the winner is the best of the deepest rung reached (the rung
    // before when none of that rung finished). The same command with a larger budget goes on.
    uint32_t deepest = 0;
    for (const auto& [trial, rung] : deepest_rungs(tune.state)) deepest = std::max(deepest, rung);
    size_t finished = 0;
    for (const auto& [key, metric] : tune.state.finished) finished += key.second == deepest;
    const size_t expected = halving_members(tune.state, deepest).size();
    const bool from_deepest = won && won->rung == deepest;
    std::fprintf(stderr,
                 "nn-tune: the time budget of %g s ran out in rung %u: %zu of %zu trials "
                 "finished it; the winner is the best of %s\n",
                 t.seconds, deepest + 1, finished, expected,
                 from_deepest ? "those" : "the rung before");
  }
  if (!won)
    throw Error("no trial finished with a validation " + t.metric + "@" + std::to_string(t.k) +
                "; see the trials' train.log under " + t.output);
  Row best;
  best.trial = won->trial;
  best.rung = won->rung;
  best.metric = won->metric;
  best.epochs = tune.rungs[won->rung];
  best.best_epoch = best_metric(t, trial_dir(t, won->trial), best.epochs).second;
  const std::vector<json>& settings = tune.settings;
  copy_winner(t, best, settings[best.trial]);
  std::printf("best: trial %u, %s@%u %.4f at epoch %u of %u: %s\n", best.trial, t.metric.c_str(),
              t.k, best.metric, best.best_epoch, best.epochs, settings[best.trial].dump().c_str());
  std::printf("wrote %s/best (network.json, train.cdl, network.nc, settings.json) and %s\n",
              t.output.c_str(), results.c_str());
  return 0;
}

}  // namespace nn::tool
