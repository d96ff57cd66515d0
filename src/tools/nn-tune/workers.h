// Where nn-tune's trials run: nn-train processes started by this process and, under mpirun, by
// the job's other ranks, each rank running up to --parallel trials at a time on its own CUDA
// device (its node-local rank modulo the host's GPUs). Rank 0 schedules; the other ranks run
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

// How each rank starts nn-train: the executable beside nn-tune, its threads, and a device when
// the job has several ranks (-1: nn-train's own default).
struct TrialCommand {
  std::string nn_train;
  int threads = 0;
  int device = -1;
};

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
