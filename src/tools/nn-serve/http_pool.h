// The threads that run nn-serve's complete requests (http_server.h), and its gRPC inference calls
// (grpc_oip.h): a request may block for as long as its batch takes, so it runs here, off the I/O
// threads. The queue is bounded by the caller: HTTP's by the connections (each has at most one
// request in progress), gRPC's by a count of calls in progress.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nn::tool {

class HandlerPool {
 public:
  explicit HandlerPool(int threads);
  ~HandlerPool();  // stop()
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  // False (the task dropped) once stop() has begun.
  bool submit(std::function<void()> task);
  // Runs what is queued, then joins the threads; later submissions are dropped. Idempotent.
  void stop();

 private:
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace nn::tool
