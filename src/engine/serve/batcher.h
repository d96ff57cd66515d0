// Dynamic batching: requests from many HTTP threads are queued as jobs; a pool of workers (one
// Evaluator each) takes them in minibatches. One idle worker at a time collects: it takes the
// oldest job and waits for more until the batch has max_batch rows or max_delay has passed since
// that job arrived, then runs the batch while the next idle worker starts collecting. It waits
// only while more jobs are on their way (requests accepted and announced, not queued yet): a
// request that is alone runs at once instead of waiting max_delay for company that is not coming.
// Only compatible jobs share a batch (the same generation of the model, the same kind of answer and
// layer), so every job is computed by the model it was accepted with; rows never influence each
// other (the Model is batch-invariant), so a job's answer is the one it would get alone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/generation.h"
#include "serve/metrics.h"
#include "serve/stats.h"

namespace nn::serve {

using Clock = std::chrono::steady_clock;

struct Job {
  enum class Kind { TopK, Outputs };
  Kind kind = Kind::TopK;
  std::shared_ptr<const Generation> gen;
  uint64_t rows = 0;
  // TopK: CSR rows over the input layer (values always present), the columns each row leaves
  // out of its ranking (ascending), and k.
  std::vector<uint64_t> row_ptr{0};
  std::vector<uint32_t> index;
  std::vector<float> value;
  std::vector<uint64_t> ex_ptr{0};
  std::vector<uint32_t> ex_index;
  uint32_t k = 0;
  // Outputs: dense rows [rows][cols] (cols <= the input layer's units) and the layer to read.
  std::vector<float> dense;
  uint64_t cols = 0;
  std::string layer;
  // Results: top_index/top_score [rows][k], or outputs [rows][units of layer]; or an error.
  std::vector<uint32_t> top_index;
  std::vector<float> top_score;
  std::vector<float> outputs;
  uint64_t units = 0;
  std::exception_ptr error;
  Clock::time_point arrival;
  JobTimes times;  // set with the results: queue, and its batch's input, pass and output
  std::promise<void> done;
};

struct BatcherStats {
  uint64_t batches = 0, rows = 0, max_rows = 0;
};

class Batcher {
 public:
  // `metrics` (may be null) gets each job's queue time and each batch's rows; `stats` (may be
  // null) each batch's rows and phases.
  Batcher(int workers, uint32_t max_batch, double max_delay_ms, Metrics* metrics = nullptr,
          ModelStats* stats = nullptr);
  ~Batcher();  // finishes the queued jobs, then stops the workers
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // A request was accepted and will queue a job soon (announce), or will not after all
  // (withdraw, e.g. it was malformed). run(job, true) queues the announced request's job and
  // withdraws its announcement at once.
  void announce();
  void withdraw();
  // Queues the job and returns when it has its results (or job.error).
  void run(Job& job, bool announced = false);
  BatcherStats stats() const;

 private:
  void work(size_t worker);
  // Takes the oldest job and the compatible jobs after it, up to max_batch rows (the lock held).
  std::vector<Job*> take_batch();
  uint64_t compatible_rows() const;  // rows that could join a batch of the oldest job
  static bool compatible(const Job& a, const Job& b);
  void execute(size_t worker, const std::vector<Job*>& batch);
  // Each returns the ends of its input and forward-pass phases (the output phase ends on return).
  struct Phases {
    Clock::time_point input_done, infer_done;
  };
  Phases execute_top_k(api::Evaluator& ev, const std::vector<Job*>& batch);
  Phases execute_outputs(api::Evaluator& ev, const std::vector<Job*>& batch);

  const uint32_t max_batch_;
  const Clock::duration max_delay_;
  Metrics* const metrics_;
  ModelStats* const stats_model_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;  // a job arrived, collecting ended, or stopping
  std::deque<Job*> queue_;
  uint64_t coming_ = 0;  // announced requests whose job is not queued yet
  bool collecting_ = false;
  bool stopping_ = false;
  BatcherStats stats_;
  std::vector<std::thread> workers_;
};

}  // namespace nn::serve
