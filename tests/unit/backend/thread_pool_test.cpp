// The CPU backend's thread pool: every task runs exactly once, jobs come back to back, nested and
// concurrent jobs fall back to running inline, a task's exception reaches the caller, and a
// backend is usable from several threads.
#include "backend/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnceAcrossManyJobs) {
  for (int threads : {1, 2, 4}) {
    cpu::ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (size_t tasks : {size_t(0), size_t(1), size_t(3), size_t(100), size_t(1000)}) {
      for (int job = 0; job < 50; ++job) {
        std::vector<std::atomic<int>> hits(tasks);
        pool.run(tasks, [&](size_t i) { hits[i].fetch_add(1); });
        for (size_t i = 0; i < tasks; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << i;
      }
    }
  }
}

TEST(ThreadPool, NestedJobsRunInline) {
  cpu::ThreadPool pool(3);
  std::atomic<int> inner{0};
  pool.run(6, [&](size_t) { pool.run(5, [&](size_t) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 30);
}

// A task that throws (a library error inside a parallel kernel) ends its job, and the exception
// reaches the caller instead of ending the process; the pool then runs the next job whole. The
// throwing task is on whichever thread claims it: over many jobs both the caller and the workers
// take it.
TEST(ThreadPool, ATaskThatThrowsReachesTheCaller) {
  for (int threads : {1, 2, 4}) {
    cpu::ThreadPool pool(threads);
    for (int job = 0; job < 200; ++job) {
      std::atomic<int> ran{0};
      const size_t bad = size_t(job) % 64;
      try {
        pool.run(64, [&](size_t i) {
          if (i == bad) throw std::runtime_error("task " + std::to_string(i) + " failed");
          ran.fetch_add(1);
        });
        FAIL() << "no exception from job " << job << " on " << threads << " threads";
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "task " + std::to_string(bad) + " failed");
      }
      EXPECT_LE(ran.load(), 63);
      std::vector<std::atomic<int>> hits(64);
      pool.run(64, [&](size_t i) { hits[i].fetch_add(1); });
      for (size_t i = 0; i < 64; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << i;
    }
  }
}

TEST(ThreadPool, ConcurrentCallersEachGetAllTheirTasks) {
  cpu::ThreadPool pool(2);
  std::vector<std::thread> callers;
  std::vector<long> sums(4, 0);
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int job = 0; job < 200; ++job) {
        std::vector<int> out(64, 0);
        pool.run(out.size(), [&](size_t i) { out[i] = int(i) + c; });
        for (int v : out) sums[c] += v;
      }
    });
  for (auto& t : callers) t.join();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(sums[c], 200L * (64 * 63 / 2 + 64 * c)) << c;
}

TEST(ThreadPool, ParallelRangesCoverEachIndexOnceOnAlignedBoundaries) {
  cpu::ThreadPool pool(3);
  for (size_t count : {size_t(1), size_t(17), size_t(1000), size_t(100003)}) {
    std::vector<int> hits(count, 0);
    std::atomic<int> bad_boundary{0};
    cpu::parallel_ranges(
        pool, count, 16,
        [&](size_t lo, size_t hi) {
          if (lo % 16 != 0) bad_boundary.fetch_add(1);
          for (size_t i = lo; i < hi; ++i) ++hits[i];
        },
        16);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(hits[i], 1) << count << " " << i;
    EXPECT_EQ(bad_boundary.load(), 0);
  }
}

TEST(CpuBackendThreads, OneBackendServesSeveralThreads) {
  CpuBackend be(2);
  Rng rng(4);
  const uint32_t rows = 64, cols = 2000;
  const auto z = test::uniform(size_t(rows) * cols, rng, -4, 4);
  ActivationParams ap;
  ap.kind = Activation::SoftMax;
  auto want = z;
  be.activate(ap, want.data(), rows, cols);
  std::vector<std::thread> users;
  std::atomic<int> mismatches{0};
  for (int u = 0; u < 3; ++u)
    users.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto a = z;
        be.activate(ap, a.data(), rows, cols);
        if (!test::bitwise_equal(a, want)) mismatches.fetch_add(1);
      }
    });
  for (auto& t : users) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace nn
