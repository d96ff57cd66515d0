// The training loop's prefetcher (train/prefetcher.h): jobs run on one long-lived worker thread,
// in order, their results and exceptions come back through take(), and wait() lets a caller
// leave only after a job that refers to its locals has finished.
#include "train/prefetcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

namespace nn {
namespace {

TEST(Prefetcher, RunsEveryJobOnOneWorkerThreadAndReturnsItsResult) {
  Prefetcher<int> p;
  std::set<std::thread::id> threads;
  for (int i = 0; i < 50; ++i) {
    p.start([i, &threads] {
      threads.insert(std::this_thread::get_id());
      return i * i;
    });
    EXPECT_EQ(p.take(), i * i);
  }
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_NE(*threads.begin(), std::this_thread::get_id());
}

TEST(Prefetcher, AJobsExceptionComesBackThroughTake) {
  Prefetcher<int> p;
  p.start([]() -> int { throw std::runtime_error("no such batch"); });
  EXPECT_THROW(
      {
        try {
          p.take();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "no such batch");
          throw;
        }
      },
      std::runtime_error);
  // The worker goes on with the next job.
  p.start([] { return 7; });
  EXPECT_EQ(p.take(), 7);
}

TEST(Prefetcher, WaitReturnsOnlyWhenTheJobHasFinished) {
  Prefetcher<int> p;
  std::atomic<bool> done{false};
  p.start([&done] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    done = true;
    return 1;
  });
  p.wait();
  EXPECT_TRUE(done);
  EXPECT_EQ(p.take(), 1);  // the result is still there after wait()
  p.wait();                // nothing pending: returns at once
}

TEST(Prefetcher, DestroyedWithAJobRunningFinishesItFirst) {
  std::atomic<bool> done{false};
  {
    Prefetcher<int> p;
    p.start([&done] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      done = true;
      return 2;
    });
  }
  EXPECT_TRUE(done);
}

}  // namespace
}  // namespace nn
