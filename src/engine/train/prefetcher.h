// One worker thread that runs the next piece of work (the next minibatch's assembly) while the
// caller does the current one: the training loop's double buffering. The thread lives as long as
// the Prefetcher. Why not std::async per batch: creating a thread for every minibatch cost tens
// of microseconds on the step's critical path (the creation happens on the training thread), a
// visible share of a GPU step of a few hundred microseconds, and on a busy machine the new
// thread waited for a core before it could start.
#pragma once

#include <condition_variable>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

namespace nn {

template <typename T>
class Prefetcher {
 public:
  Prefetcher() : worker_([this] { run(); }) {}
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    ready_.notify_all();
    worker_.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Runs `job` on the worker thread. The previous job must have been taken or waited for.
  void start(std::function<T()> job) {
    std::packaged_task<T()> task(std::move(job));
    result_ = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      task_ = std::move(task);
      pending_ = true;
    }
    ready_.notify_all();
  }
  // The last job's result, waiting for it; its exception, if it threw one.
  T take() { return result_.get(); }
  // Waits for the last job, if one was started and not taken (its result is kept for take()).
  // Callers whose job refers to their own locals call it before those go (a scope guard).
  void wait() const {
    if (result_.valid()) result_.wait();
  }

 private:
  void run() {
    for (;;) {
      std::packaged_task<T()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || pending_; });
        if (!pending_) return;  // stopped with nothing left to do
        task = std::move(task_);
        pending_ = false;
      }
      task();  // a throw is kept in the future for take()
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::packaged_task<T()> task_;
  bool pending_ = false, stop_ = false;
  std::future<T> result_;
  std::thread worker_;  // last: started once everything it uses exists
};

}  // namespace nn
