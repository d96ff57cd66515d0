// nn-tune: searches a config's settings (docs/tuning.md). The trials' settings are drawn from
// the tune file's search space (random or grid); successive halving runs every trial for the
// first rung's epochs, keeps the best 1/Eta by the validation metric of nn-train --validation,
// continues those from their checkpoints to the next rung, and so on up to Max epochs. Each trial
// is an nn-train process of its own (the one beside this executable) in <Output>/trial-NNN, up to
// --parallel at a time; every finished rung is a row of <Output>/results.tsv, so a killed tune
// started again goes on where it stopped. The winner's network JSON, command file and trained
// network are copied to <Output>/best. A time budget (--seconds, "Seconds") stops new trials from
// starting once it is spent; the winner is then the best of the deepest rung reached.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/cli_support.h"
#include "common/tool_main.h"
#include "nn-tune/tune_file.h"
#include "nn/process.h"
#include "nn/stop.h"

const char* const nn::tool::kToolName = "nn-tune";

namespace nn::tool {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Row {  // one finished rung of one trial (results.tsv)
  uint32_t trial = 0, rung = 0, epochs = 0, best_epoch = 0;
  double metric = -std::numeric_limits<double>::infinity();
  double seconds = 0;
  std::string status;  // ok or failed (exit status)
};

std::string trial_dir(const TuneFile& t, uint32_t trial) {
  char name[32];
  std::snprintf(name, sizeof name, "trial-%03u", trial);
  return (fs::path(t.output) / name).string();
}

std::string nn_train_path() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw IoError("cannot find this executable's folder (/proc/self/exe)");
  path[n] = '\0';
  const fs::path train = fs::path(path).parent_path() / "nn-train";
  if (access(train.c_str(), X_OK) != 0)
    throw IoError(train.string() + ": nn-tune runs the nn-train beside it, which is missing");
  return train.string();
}

std::vector<Row> read_results(const std::string& path) {
  std::vector<Row> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == 't') continue;  // the header
    // A line cut short (the tune killed while writing it) does not parse: its rung runs again.
    std::istringstream s(line);
    Row r;
    std::string metric;
    if (!(s >> r.trial >> r.rung >> r.epochs >> metric >> r.best_epoch >> r.seconds >> r.status))
      continue;
    if (metric == "-") {
      r.metric = -std::numeric_limits<double>::infinity();
    } else {
      char* end = nullptr;
      r.metric = std::strtod(metric.c_str(), &end);
      if (end == metric.c_str() || *end != '\0') continue;
    }
    rows.push_back(r);
  }
  return rows;
}

void append_row(const std::string& path, const Row& r, const json& settings) {
  const bool fresh = !fs::exists(path);
  bool ends_line = true;  // a line cut short by a kill is ended before the next one
  if (!fresh && fs::file_size(path) > 0) {
    std::ifstream last(path, std::ios::binary);
    last.seekg(-1, std::ios::end);
    ends_line = last.get() == '\n';
  }
  std::ofstream out(path, std::ios::app);
  if (fresh) out << "trial\trung\tepochs\tmetric\tbest_epoch\tseconds\tstatus\tsettings\n";
  if (!ends_line) out << '\n';
  char metric[32];
  if (std::isfinite(r.metric))
    std::snprintf(metric, sizeof metric, "%.6f", r.metric);
  else
    std::snprintf(metric, sizeof metric, "-");
  out << r.trial << '\t' << r.rung << '\t' << r.epochs << '\t' << metric << '\t' << r.best_epoch
      << '\t' << std::fixed << std::setprecision(1) << r.seconds << '\t' << r.status << '\t'
      << settings.dump() << '\n';
  if (!out.flush()) throw IoError(path + ": cannot write");
}

// The trials' settings: drawn now, or those of the tune this output folder already holds (which
// must be the same draws: a changed tune file gets another Output).
std::vector<json> trial_settings(const TuneFile& t) {
  const std::vector<json> drawn = draw_trials(t);
  const fs::path file = fs::path(t.output) / "trials.jsonl";
  if (fs::exists(file)) {
    std::ifstream in(file);
    std::vector<json> kept;
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) kept.push_back(json::parse(line));
    if (kept != drawn)
      throw ConfigError(file.string() +
                        ": its trials differ from the tune file's draws (the "
                        "tune file changed since this tune started); give another Output");
    return kept;
  }
  fs::create_directories(t.output);
  std::ofstream out(fs::path(t.output) / "trials.jsonl.part");
  for (const json& s : drawn) out << s.dump() << '\n';
  out.close();
  fs::rename(fs::path(t.output) / "trials.jsonl.part", file);
  return drawn;
}

struct Running {
  pid_t pid;
  uint32_t trial;
  std::chrono::steady_clock::time_point start;
};

pid_t start_trial(const std::string& nn_train, const std::string& dir, uint32_t epochs,
                  int threads) {
  std::vector<std::string> args = {nn_train, "train.cdl", "-e", std::to_string(epochs),
                                   "--resume=auto"};
  if (threads > 0) args.insert(args.end(), {"--threads", std::to_string(threads)});
  const pid_t pid = fork();
  if (pid < 0) throw IoError("fork failed: cannot start nn-train");
  if (pid == 0) {
    // A trial never outlives its tune: SIGTERM makes nn-train write a checkpoint and stop, so
    // the tune started again resumes it rather than running it twice at once.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1) _exit(125);  // the tune ended between fork and prctl
    if (chdir(dir.c_str()) != 0) _exit(126);
    const int fd = open("train.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(nn_train.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

using Clock = std::chrono::steady_clock;

// Runs `trials` for `epochs` each, up to `parallel` at a time; returns their rows. A stop
// request (SIGTERM, SIGINT, SIGHUP: common/signals.h) is passed on to the running trials, which
// checkpoint and end; their rungs are not recorded (the next run resumes them) and no more
// start. After `deadline` (the time budget) no more start either; those running finish.
std::vector<Row> run_rung(const TuneFile& t, const std::vector<json>& settings,
                          const std::vector<uint32_t>& trials, uint32_t rung, uint32_t epochs,
                          int parallel, int threads, const std::string& results, bool quiet,
                          Clock::time_point deadline) {
  const std::string nn_train = nn_train_path();
  std::vector<Row> rows;
  std::vector<Running> running;
  size_t next = 0;
  bool forwarded = false;
  while (next < trials.size() || !running.empty()) {
    const bool stopping = api::stop_signal() != 0;
    if (Clock::now() >= deadline && running.empty()) break;
    while (!stopping && Clock::now() < deadline && next < trials.size() &&
           int(running.size()) < parallel) {
      const uint32_t trial = trials[next++];
      const std::string dir = trial_dir(t, trial);
      if (rung == 0) write_trial_files(t, settings[trial], dir);
      running.push_back(
          {start_trial(nn_train, dir, epochs, threads), trial, std::chrono::steady_clock::now()});
    }
    if (stopping && running.empty()) break;
    int status = 0;
    const pid_t done = waitpid(-1, &status, WNOHANG);
    if (done < 0 && errno != EINTR) throw IoError("waitpid failed while trials ran");
    if (done <= 0) {
      if (stopping && !forwarded) {
        for (const Running& r : running) kill(r.pid, SIGTERM);
        forwarded = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const auto it = std::find_if(running.begin(), running.end(),
                                 [done](const Running& r) { return r.pid == done; });
    if (it == running.end()) continue;
    Row r;
    r.trial = it->trial;
    r.rung = rung;
    r.epochs = epochs;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - it->start).count();
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (forwarded && !ok) {  // stopped mid-rung: resumed by the next run, not a failure
      running.erase(it);
      continue;
    }
    r.status = ok ? "ok"
                  : (WIFEXITED(status) ? "failed:exit" + std::to_string(WEXITSTATUS(status))
                                       : "failed:signal" + std::to_string(WTERMSIG(status)));
    if (ok) std::tie(r.metric, r.best_epoch) = best_metric(t, trial_dir(t, r.trial), epochs);
    append_row(results, r, settings[r.trial]);
    if (!quiet) {
      std::fprintf(stderr, "nn-tune: trial %u, %u epochs: ", r.trial, epochs);
      if (ok)
        std::fprintf(stderr, "%s@%u %.4f (epoch %u), %.1f s\n", t.metric.c_str(), t.k, r.metric,
                     r.best_epoch, r.seconds);
      else
        std::fprintf(stderr, "%s (see %s/train.log)\n", r.status.c_str(),
                     trial_dir(t, r.trial).c_str());
    }
    rows.push_back(r);
    running.erase(it);
  }
  return rows;
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

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"Search a config's settings by successive halving on the validation metric.",
               kToolName};
  std::string tune_path;
  int parallel = 1, threads = 0;
  bool quiet = false;
  app.add_option("tune", tune_path, "the tune file (JSON; docs/tuning.md)")->required();
  app.add_option("--parallel", parallel, "trials at a time, each an nn-train process (default 1)")
      ->check(CLI::Range(1, 256));
  app.add_option("--threads", threads,
                 "CPU threads per trial (default: the CPUs divided among --parallel trials)")
      ->check(CLI::Range(0, 4096));
  double seconds = 0;
  app.add_option("--seconds", seconds,
                 "time budget of this run in seconds: no trial starts after it, and the winner "
                 "is the best of the deepest rung reached (default: the tune file's Seconds, "
                 "else none)")
      ->check(CLI::PositiveNumber);
  app.add_flag("-q,--quiet", quiet, "print errors and the final table only");
  int status = 0;
  if (parse_or_exit(app, std::vector<std::string>(argv, argv + argc), status)) return status;
  if (threads == 0 && parallel > 1)
    threads = std::max(1, int(api::default_thread_count()) / parallel);

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
  const std::vector<json> settings = trial_settings(t);
  const std::vector<uint32_t> rungs = rung_epochs(t);
  const std::string results = (fs::path(t.output) / "results.tsv").string();
  const std::vector<Row> done = read_results(results);
  if (!quiet)
    std::fprintf(
        stderr, "nn-tune: %zu trials (%s), rungs of %s epochs, %s@%u, output %s\n", settings.size(),
        t.sampler.c_str(),
        [&] {
          std::string s;
          for (uint32_t e : rungs) s += (s.empty() ? "" : "/") + std::to_string(e);
          return s;
        }()
            .c_str(),
        t.metric.c_str(), t.k, t.output.c_str());
  std::vector<uint32_t> alive(settings.size());
  for (uint32_t i = 0; i < alive.size(); ++i) alive[i] = i;
  std::vector<Row> last_rows;
  for (uint32_t rung = 0; rung < rungs.size() && !alive.empty(); ++rung) {
    std::map<uint32_t, Row> rows;
    for (const Row& r : done)
      if (r.rung == rung) rows[r.trial] = r;
    std::vector<uint32_t> to_run;
    for (uint32_t trial : alive)
      if (!rows.count(trial)) to_run.push_back(trial);
    if (!quiet && !to_run.empty())
      std::fprintf(stderr, "nn-tune: rung %u of %zu: %zu trials to %u epochs%s\n", rung + 1,
                   rungs.size(), to_run.size(), rungs[rung],
                   to_run.size() < alive.size() ? " (the others ran before)" : "");
    for (const Row& r : run_rung(t, settings, to_run, rung, rungs[rung], parallel, threads, results,
                                 quiet, deadline))
      rows[r.trial] = r;
    if (const int signal = api::stop_signal()) {
      std::fprintf(stderr,
                   "nn-tune: stopped by %s; %s holds every finished rung, and the same command "
                   "goes on from there\n",
                   api::signal_name(signal).c_str(), results.c_str());
      return 128 + signal;
    }
    std::vector<Row> ranked;
    for (uint32_t trial : alive)
      if (rows.count(trial)) ranked.push_back(rows.at(trial));
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Row& a, const Row& b) { return a.metric > b.metric; });
    if (ranked.size() < alive.size()) {
      // The time budget ran out in this rung: the winner is the best of the trials that
      // finished it, or of the rung before when none did. The same command with a larger budget
      // goes on from here.
      const bool from_this_rung = !ranked.empty() && std::isfinite(ranked.front().metric);
      if (from_this_rung) last_rows = ranked;
      std::fprintf(stderr,
                   "nn-tune: the time budget of %g s ran out in rung %u: %zu of %zu trials "
                   "finished it; the winner is the best of %s\n",
                   t.seconds, rung + 1, ranked.size(), alive.size(),
                   from_this_rung ? "those" : "the rung before");
      break;
    }
    last_rows = ranked;
    const size_t keep =
        rung + 1 < rungs.size() ? (ranked.size() + t.eta - 1) / t.eta : ranked.size();
    alive.clear();
    for (size_t i = 0; i < keep && i < ranked.size(); ++i)
      if (std::isfinite(ranked[i].metric)) alive.push_back(ranked[i].trial);
  }
  if (last_rows.empty() || !std::isfinite(last_rows.front().metric))
    throw Error("no trial finished with a validation " + t.metric + "@" + std::to_string(t.k) +
                "; see the trials' train.log under " + t.output);
  const Row& best = last_rows.front();
  copy_winner(t, best, settings[best.trial]);
  std::printf("best: trial %u, %s@%u %.4f at epoch %u of %u: %s\n", best.trial, t.metric.c_str(),
              t.k, best.metric, best.best_epoch, best.epochs, settings[best.trial].dump().c_str());
  std::printf("wrote %s/best (network.json, train.cdl, network.nc, settings.json) and %s\n",
              t.output.c_str(), results.c_str());
  return 0;
}

}  // namespace nn::tool
