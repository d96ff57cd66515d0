// Triton's per-model statistics (api::ModelStatistics, GET /v2/models/<name>/stats): request
// counts and nanoseconds split into queue, input, forward pass and output, and the forward passes
// by batch size. Requests add to atomics (no lock); a batch takes a mutex once to find its size's
// entry, among at most a few hundred sizes.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>

#include "nn/serve.h"

namespace nn::serve {

// Where a request's time in the batcher went, in nanoseconds (summed over its jobs).
struct JobTimes {
  uint64_t queue = 0, input = 0, infer = 0, output = 0;
};

class ModelStats {
 public:
  // An inference request answered: `ok` (200) or not, `rows` scored, its time from arrival.
  void request(bool ok, uint64_t rows, uint64_t ns, const JobTimes& times);
  // A forward pass of `rows` rows and its three phases.
  void batch(uint64_t rows, uint64_t input_ns, uint64_t infer_ns, uint64_t output_ns);
  // Everything so far; the caller fills in name and version.
  api::ModelStatistics snapshot() const;

 private:
  struct Counter {
    std::atomic<uint64_t> count{0}, ns{0};
    void add(uint64_t n) {
      count.fetch_add(1, std::memory_order_relaxed);
      ns.fetch_add(n, std::memory_order_relaxed);
    }
    api::StatDuration read() const {
      return {count.load(std::memory_order_relaxed), ns.load(std::memory_order_relaxed)};
    }
  };
  Counter success_, fail_, queue_, input_, infer_, output_;
  std::atomic<uint64_t> rows_{0}, executions_{0}, last_ms_{0};
  mutable std::mutex batches_mutex_;
  std::map<uint64_t, api::BatchStats> batches_;
};

}  // namespace nn::serve
