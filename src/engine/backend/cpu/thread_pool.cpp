// ThreadPool: workers sleep on a condition variable between jobs after a short spin (kernels
// often come back to back), claim tasks through an atomic counter, and the caller waits only
// for workers that actually joined the job. A task that throws ends the job early (the tasks not
// yet claimed are dropped) and its exception is rethrown on the calling thread.
#include "backend/cpu/thread_pool.h"

#include <exception>
#include <utility>

namespace nn::cpu {
namespace {

// Polls before sleeping: about 50 microseconds on current x86 cores.
constexpr int kSpinPolls = 2000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::drain() {
  for (;;) {
    const size_t i = next_.fetch_add(1);
    if (i >= tasks_) return;
    try {
      fn_(ctx_, i);
    } catch (...) {
      // The first failure is kept for the caller; the tasks not yet claimed are dropped.
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      next_.store(tasks_);
    }
  }
}

void ThreadPool::run_erased(size_t tasks, TaskFn fn, const void* ctx) {
  if (tasks == 0) return;
  std::unique_lock<std::mutex> job(job_mutex_, std::try_to_lock);
  if (workers_.empty() || tasks == 1 || !job.owns_lock()) {
    for (size_t i = 0; i < tasks; ++i) fn(ctx, i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = fn;
    ctx_ = ctx;
    tasks_ = tasks;
    next_.store(0);
    open_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  drain();
  // Every task has been claimed; wait for the workers still running one.
  std::unique_lock<std::mutex> lock(mutex_);
  open_ = false;
  idle_.wait(lock, [this] { return active_ == 0; });
  if (error_) {
    std::exception_ptr error = std::move(error_);
    error_ = nullptr;
    lock.unlock();
    std::rethrow_exception(error);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    for (int i = 0; i < kSpinPolls && generation_.load(std::memory_order_acquire) == seen; ++i)
      cpu_relax();
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] { return generation_.load() != seen; });
    seen = generation_.load();
    if (stop_) return;
    if (!open_) continue;  // woke after the job was finished by others
    ++active_;
    lock.unlock();
    drain();
    lock.lock();
    if (--active_ == 0) idle_.notify_all();
  }
}

}  // namespace nn::cpu
