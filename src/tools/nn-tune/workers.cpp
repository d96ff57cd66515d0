// nn-tune's trial processes, here and on the other ranks of an mpirun job (workers.h).
#include "nn-tune/workers.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "nn/error.h"
#include "nn/process.h"
#include "nn/stop.h"

extern char** environ;

namespace nn::tool {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

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

namespace {

// The environment of a trial: this one without what says "an MPI launcher started you". A
// trial is a single process; inheriting nn-tune's rank variables, nn-train would take itself
// for a rank of nn-tune's job (or, under srun, refuse to run as one task of many).
std::vector<std::string> trial_environment() {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    const auto starts = [&](const char* prefix) { return v.rfind(prefix, 0) == 0; };
    if (starts("OMPI_") || starts("PMIX_") || starts("PMI_") || starts("MV2_") ||
        starts("MPI_LOCAL") || starts("SLURM_PROCID=") || starts("SLURM_STEP_NUM_TASKS="))
      continue;
    out.push_back(v);
  }
  return out;
}

pid_t start_process(const TrialCommand& c, const std::string& dir, uint32_t epochs, int device) {
  std::vector<std::string> args = {c.nn_train, "train.cdl", "-e", std::to_string(epochs),
                                   "--resume=auto"};
  if (c.threads > 0) args.insert(args.end(), {"--threads", std::to_string(c.threads)});
  if (device >= 0) args.insert(args.end(), {"--device", std::to_string(device)});
  // The command heads the trial's log (each run of the trial appends its own).
  std::string line = "nn-tune: trial command:";
  for (const std::string& a : args) line += " " + (a == c.nn_train ? std::string("nn-train") : a);
  line += "\n";
  std::vector<std::string> env = trial_environment();
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
      // The log is for people: a trial whose first line could not be written runs all the same.
      const ssize_t written = write(fd, line.data(), line.size());
      (void)written;
    }
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    execve(c.nn_train.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// A child of this process that has ended: its pid and wait status.
std::optional<std::pair<pid_t, int>> reap() {
  int status = 0;
  const pid_t done = waitpid(-1, &status, WNOHANG);
  if (done < 0 && errno != EINTR && errno != ECHILD)
    throw IoError(std::string("waitpid failed while trials ran: ") + std::strerror(errno));
  if (done <= 0) return std::nullopt;
  return std::make_pair(done, status);
}

}  // namespace

Workers::Workers(TrialCommand command, int per_rank)
    : command_(std::move(command)), per_rank_(per_rank), ranks_(api::world_size()) {}

int Workers::free_slots() const {
  return per_rank_ * ranks_ - int(running());
}

int Workers::start(uint32_t trial, uint32_t rung, const std::string& dir, uint32_t epochs) {
  if (int(local_.size()) < per_rank_) {
    std::vector<int> in_use;
    for (const Local& l : local_) in_use.push_back(l.device);
    const int device = pick_device(command_.devices, in_use);
    local_.push_back(
        {start_process(command_, dir, epochs, device), trial, rung, Clock::now(), device});
    return 0;
  }
  // The next rank round the ring with a free slot.
  for (int tried = 0; tried < ranks_ - 1; ++tried) {
    const int rank = next_rank_;
    next_rank_ = next_rank_ + 1 < ranks_ ? next_rank_ + 1 : 1;
    const auto busy = std::count_if(remote_.begin(), remote_.end(),
                                    [rank](const Remote& r) { return r.rank == rank; });
    if (busy >= per_rank_) continue;
    api::send_text(
        rank,
        json{{"run",
              {{"trial", trial}, {"rung", rung}, {"dir", fs::absolute(dir)}, {"epochs", epochs}}}}
            .dump());
    remote_.push_back({rank, trial, rung, Clock::now()});
    return rank;
  }
  throw Error("nn-tune: no free slot for a trial (a scheduling bug)");
}

std::optional<TrialEnd> Workers::poll() {
  if (const auto done = reap()) {
    const auto it = std::find_if(local_.begin(), local_.end(),
                                 [&](const Local& l) { return l.pid == done->first; });
    if (it != local_.end()) {
      const TrialEnd end{it->trial, it->rung, done->second,
                         std::chrono::duration<double>(Clock::now() - it->start).count()};
      local_.erase(it);
      return end;
    }
  }
  if (const auto message = api::poll_text()) {
    const json j = json::parse(message->second);
    const uint32_t trial = j.at("trial"), rung = j.at("rung");
    const auto it = std::find_if(remote_.begin(), remote_.end(), [&](const Remote& r) {
      return r.rank == message->first && r.trial == trial && r.rung == rung;
    });
    if (it != remote_.end()) {
      const TrialEnd end{trial, rung, j.at("status").get<int>(),
                         std::chrono::duration<double>(Clock::now() - it->start).count()};
      remote_.erase(it);
      return end;
    }
  }
  return std::nullopt;
}

void Workers::stop_all() {
  for (const Local& l : local_) kill(l.pid, SIGTERM);
  for (int rank = 1; rank < ranks_; ++rank) api::send_text(rank, json{{"stop", true}}.dump());
}

void Workers::end() {
  for (int rank = 1; rank < ranks_; ++rank) api::send_text(rank, json{{"end", true}}.dump());
}

int worker_loop(const TrialCommand& command, int per_rank) {
  struct Running {
    pid_t pid;
    uint32_t trial, rung;
    int device;
  };
  std::vector<Running> running;
  bool stopped = false, ended = false;
  while (!ended || !running.empty()) {
    bool idle = true;
    if (!stopped && api::stop_signal() != 0) {
      for (const Running& r : running) kill(r.pid, SIGTERM);
      stopped = true;
    }
    if (const auto message = api::poll_text()) {
      idle = false;
      const json j = json::parse(message->second);
      if (j.contains("end")) {
        ended = true;
      } else if (j.contains("stop")) {
        for (const Running& r : running) kill(r.pid, SIGTERM);
        stopped = true;
      } else {
        const json& run = j.at("run");
        const uint32_t trial = run.at("trial"), rung = run.at("rung");
        if (stopped || int(running.size()) >= per_rank) {
          // A stop crossed the order (or more orders than slots, which rank 0 never sends):
          // the trial is reported stopped by SIGTERM without running, and is not recorded.
          api::send_text(0, json{{"trial", trial}, {"rung", rung}, {"status", SIGTERM}}.dump());
        } else {
          std::vector<int> in_use;
          for (const Running& r : running) in_use.push_back(r.device);
          const int device = pick_device(command.devices, in_use);
          running.push_back({start_process(command, run.at("dir").get<std::string>(),
                                           run.at("epochs").get<uint32_t>(), device),
                             trial, rung, device});
        }
      }
    }
    if (const auto done = reap()) {
      idle = false;
      const auto it = std::find_if(running.begin(), running.end(),
                                   [&](const Running& r) { return r.pid == done->first; });
      if (it != running.end()) {
        api::send_text(
            0, json{{"trial", it->trial}, {"rung", it->rung}, {"status", done->second}}.dump());
        running.erase(it);
      }
    }
    if (idle) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return stopped && api::stop_signal() != 0 ? 128 + api::stop_signal() : 0;
}

}  // namespace nn::tool
