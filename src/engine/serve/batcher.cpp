// Dynamic batching (serve/batcher.h): the queue, the collecting worker and the merged forward
// passes.
#include "serve/batcher.h"

#include <algorithm>

#include "core/error.h"

namespace nn::serve {

Batcher::Batcher(int workers, uint32_t max_batch, double max_delay_ms, Metrics* metrics,
                 ModelStats* stats)
    : max_batch_(std::max<uint32_t>(1, max_batch)),
      max_delay_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double, std::milli>(std::max(0.0, max_delay_ms)))),
      metrics_(metrics),
      stats_model_(stats) {
  for (int w = 0; w < std::max(1, workers); ++w)
    workers_.emplace_back([this, w] { work(size_t(w)); });
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void Batcher::announce() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++coming_;
}

void Batcher::withdraw() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (coming_ > 0) --coming_;
  }
  wake_.notify_all();  // a collector waiting for it may go
}

void Batcher::run(Job& job, bool announced) {
  std::future<void> done = job.done.get_future();
  job.arrival = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(&job);
    if (announced && coming_ > 0) --coming_;
  }
  wake_.notify_all();
  done.wait();
}

BatcherStats Batcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

bool Batcher::compatible(const Job& a, const Job& b) {
  return a.gen == b.gen && a.kind == b.kind && a.layer == b.layer;
}

uint64_t Batcher::compatible_rows() const {
  uint64_t rows = 0;
  for (const Job* j : queue_)
    if (compatible(*queue_.front(), *j)) rows += j->rows;
  return rows;
}

std::vector<Job*> Batcher::take_batch() {
  std::vector<Job*> batch{queue_.front()};
  queue_.pop_front();
  uint64_t rows = batch.front()->rows;
  // Later compatible jobs join while they fit; the others keep their places in the queue.
  for (auto it = queue_.begin(); it != queue_.end() && rows < max_batch_;) {
    if (compatible(*batch.front(), **it) && rows + (*it)->rows <= max_batch_) {
      rows += (*it)->rows;
      batch.push_back(*it);
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  ++stats_.batches;
  const Clock::time_point now = Clock::now();
  for (Job* j : batch)
    j->times.queue = uint64_t(std::chrono::nanoseconds(now - j->arrival).count());
  if (metrics_) {
    for (const Job* j : batch)
      metrics_->queue_time(std::chrono::duration<double>(now - j->arrival).count());
    metrics_->batch(rows);
  }
  stats_.rows += rows;
  stats_.max_rows = std::max(stats_.max_rows, rows);
  return batch;
}

void Batcher::work(size_t worker) {
  for (;;) {
    std::vector<Job*> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // One collector at a time: the others wait here until it has taken its batch.
      wake_.wait(lock,
                 [&] { return (stopping_ && !collecting_) || (!collecting_ && !queue_.empty()); });
      if (queue_.empty()) return;  // stopping, nothing left
      collecting_ = true;
      const Clock::time_point deadline = queue_.front()->arrival + max_delay_;
      while (!stopping_ && coming_ > 0 && compatible_rows() < max_batch_ && Clock::now() < deadline)
        wake_.wait_until(lock, deadline);
      batch = take_batch();
      collecting_ = false;
    }
    wake_.notify_all();  // the next idle worker may collect
    execute(worker, batch);
  }
}

void Batcher::execute(size_t worker, const std::vector<Job*>& batch) {
  try {
    api::Evaluator& ev = *batch.front()->gen->evaluators.at(worker);
    const Clock::time_point start = Clock::now();
    const Phases p = batch.front()->kind == Job::Kind::TopK ? execute_top_k(ev, batch)
                                                            : execute_outputs(ev, batch);
    const Clock::time_point end = Clock::now();
    auto ns = [](Clock::duration d) { return uint64_t(std::chrono::nanoseconds(d).count()); };
    // Every job of the batch waited for the whole pass: each is charged all of it (as Triton
    // charges a batch's compute to each of its requests).
    uint64_t rows = 0;
    for (Job* j : batch) {
      j->times.input = ns(p.input_done - start);
      j->times.infer = ns(p.infer_done - p.input_done);
      j->times.output = ns(end - p.infer_done);
      rows += j->rows;
    }
    if (stats_model_)
      stats_model_->batch(rows, ns(p.input_done - start), ns(p.infer_done - p.input_done),
                          ns(end - p.infer_done));
  } catch (...) {
    for (Job* j : batch) j->error = std::current_exception();
  }
  for (Job* j : batch) j->done.set_value();
}

Batcher::Phases Batcher::execute_top_k(api::Evaluator& ev, const std::vector<Job*>& batch) {
  // The jobs' rows one after another, and the largest k: the first k of a row's top K_max are
  // its top k (the ranking is a total order: score, then the lower column).
  std::vector<uint64_t> row_ptr{0}, ex_ptr{0};
  std::vector<uint32_t> index, ex_index;
  std::vector<float> value;
  uint32_t k = 0;
  uint64_t rows = 0;
  for (const Job* j : batch) {
    k = std::max(k, j->k);
    for (uint64_t r = 0; r < j->rows; ++r) {
      index.insert(index.end(), j->index.begin() + j->row_ptr[r],
                   j->index.begin() + j->row_ptr[r + 1]);
      value.insert(value.end(), j->value.begin() + j->row_ptr[r],
                   j->value.begin() + j->row_ptr[r + 1]);
      row_ptr.push_back(index.size());
      ex_index.insert(ex_index.end(), j->ex_index.begin() + j->ex_ptr[r],
                      j->ex_index.begin() + j->ex_ptr[r + 1]);
      ex_ptr.push_back(ex_index.size());
    }
    rows += j->rows;
  }
  const Generation& gen = *batch.front()->gen;
  std::vector<uint32_t> top_index(rows * k);
  std::vector<float> top_score(rows * k);
  const api::CsrInput input{row_ptr.data(), index.data(), value.data(), rows, gen.input_units};
  const api::Exclusion exclude{ex_ptr.data(), ex_index.data(), rows};
  Phases phases;
  phases.input_done = Clock::now();
  ev.top_k(input, k, gen.output_layer, &exclude, top_index.data(), top_score.data());
  phases.infer_done = Clock::now();
  uint64_t first = 0;
  for (Job* j : batch) {
    j->top_index.resize(j->rows * j->k);
    j->top_score.resize(j->rows * j->k);
    for (uint64_t r = 0; r < j->rows; ++r) {
      std::copy_n(top_index.begin() + (first + r) * k, j->k, j->top_index.begin() + r * j->k);
      std::copy_n(top_score.begin() + (first + r) * k, j->k, j->top_score.begin() + r * j->k);
    }
    first += j->rows;
  }
  return phases;
}

Batcher::Phases Batcher::execute_outputs(api::Evaluator& ev, const std::vector<Job*>& batch) {
  const Generation& gen = *batch.front()->gen;
  const std::string& layer = batch.front()->layer;
  const uint64_t units = ev.units(layer);
  uint64_t rows = 0;
  for (const Job* j : batch) rows += j->rows;
  // Every job's rows padded to the input layer's width, one after another.
  std::vector<float> x(rows * gen.input_units, 0.0f);
  uint64_t first = 0;
  for (const Job* j : batch) {
    for (uint64_t r = 0; r < j->rows; ++r)
      std::copy_n(j->dense.begin() + r * j->cols, j->cols,
                  x.begin() + (first + r) * gen.input_units);
    first += j->rows;
  }
  std::vector<float> out(rows * units);
  Phases phases;
  phases.input_done = Clock::now();
  ev.outputs(api::DenseInput{x.data(), rows, gen.input_units}, layer, out.data());
  phases.infer_done = Clock::now();
  first = 0;
  for (Job* j : batch) {
    j->units = units;
    j->outputs.assign(out.begin() + first * units, out.begin() + (first + j->rows) * units);
    first += j->rows;
  }
  return phases;
}

}  // namespace nn::serve
