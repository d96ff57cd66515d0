// Where nn-tune's trials run: nn-train processes started by this process and, under mpirun, by
// the job's other ranks, each rank running up to --parallel trials at a time on its CUDA devices
// (under mpirun its own, its node-local rank modulo the host's GPUs; a single nn-tune spreads its
// trials over every GPU of the host). Rank 0 schedules; the other ranks run
// worker_loop, which starts what rank 0 sends and reports each trial's end. Messages are small
// JSON texts (api::send_text): {"run": {...}}, {"stop": true}, {"end": true} to a worker;
// {"trial", "rung", "status"} back.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nn::tool {

struct TrialEnd {
  uint32_t trial, rung;
  int status;  // the wait status of nn-train (WIFEXITED, WEXITSTATUS apply)
  double seconds;
};

// How each rank starts nn-train: the executable beside nn-tune, its threads, and the CUDA
// devices its trials are spread over (each trial started on the one running the fewest of this
// rank's trials; empty: nn-train's own default device).
struct TrialCommand {
  std::string nn_train;
  int threads = 0;
  std::vector<int> devices;
};

// The device for a trial starting now: of `devices`, the first of those running the fewest of
// `in_use` (the devices of the trials running); -1 when `devices` is empty.
inline int pick_device(const std::vector<int>& devices, const std::vector<int>& in_use) {
  int best = -1;
  long best_count = 0;
  for (int d : devices) {
    long count = 0;
    for (int u : in_use) count += u == d;
    if (best < 0 || count < best_count) {
      best = d;
      best_count = count;
    }
  }
  return best;
}

// The nn-train beside this executable (IoError when it is missing).
std::string nn_train_path();

class Workers {
 public:
  // `per_rank` trials at a time on every rank of the job.
  Workers(TrialCommand command, int per_rank);
  int free_slots() const;
  size_t running() const { return local_.size() + remote_.size(); }
  // Starts the trial in `dir` (its train.cdl) for `epochs` epochs at a free slot: this rank's
  // first, then the other ranks' in turn. Returns the rank it runs on.
  int start(uint32_t trial, uint32_t rung, const std::string& dir, uint32_t epochs);
  // A trial that has ended, if any (never waits long: the caller loops).
  std::optional<TrialEnd> poll();
  // Asks every running trial to checkpoint and stop (SIGTERM, here and on the other ranks).
  void stop_all();
  // Tells the other ranks that there is no more work: their worker_loop returns.
  void end();

 private:
  struct Local {
    pid_t pid;
    uint32_t trial, rung;
    std::chrono::steady_clock::time_point start;
    int device;
  };
  struct Remote {
    int rank;
    uint32_t trial, rung;
    std::chrono::steady_clock::time_point start;
  };
  TrialCommand command_;
  int per_rank_, ranks_;
  std::vector<Local> local_;
  std::vector<Remote> remote_;
  int next_rank_ = 1;
};

// A rank other than 0 under mpirun: runs the trials rank 0 sends, `per_rank` at a time, until
// rank 0 says end. A stop request (SIGTERM) here is passed on to this rank's trials, as on rank
// 0. Returns the exit status for this rank.
int worker_loop(const TrialCommand& command, int per_rank);

}  // namespace nn::tool
