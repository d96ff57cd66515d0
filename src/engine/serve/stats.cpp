// Triton's per-model statistics (serve/stats.h).
#include "serve/stats.h"

#include <chrono>

namespace nn::serve {

void ModelStats::request(bool ok, uint64_t rows, uint64_t ns, const JobTimes& t) {
  if (!ok) {
    fail_.add(ns);
    return;
  }
  success_.add(ns);
  queue_.add(t.queue);
  input_.add(t.input);
  infer_.add(t.infer);
  output_.add(t.output);
  rows_.fetch_add(rows, std::memory_order_relaxed);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  last_ms_.store(uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(now).count()),
                 std::memory_order_relaxed);
}

void ModelStats::batch(uint64_t rows, uint64_t input_ns, uint64_t infer_ns, uint64_t output_ns) {
  executions_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(batches_mutex_);
  api::BatchStats& b = batches_[rows];
  b.batch_size = rows;
  for (auto [d, ns] : {std::pair{&b.compute_input, input_ns}, std::pair{&b.compute_infer, infer_ns},
                       std::pair{&b.compute_output, output_ns}}) {
    ++d->count;
    d->ns += ns;
  }
}

api::ModelStatistics ModelStats::snapshot() const {
  api::ModelStatistics s;
  s.success = success_.read();
  s.fail = fail_.read();
  s.queue = queue_.read();
  s.compute_input = input_.read();
  s.compute_infer = infer_.read();
  s.compute_output = output_.read();
  s.inference_count = rows_.load(std::memory_order_relaxed);
  s.execution_count = executions_.load(std::memory_order_relaxed);
  s.last_inference_ms = last_ms_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(batches_mutex_);
  for (const auto& [rows, b] : batches_) s.batches.push_back(b);
  return s;
}

}  // namespace nn::serve
