// Backend::make_profile_clock on every backend (the CUDA instance skips without a device): marks
// come back in order and never go backwards; a range around real work has a positive length;
// collect without waiting returns only completed marks and never more than were recorded, and
// collect with waiting returns all of them; the clock can be reused after a collect.
#include <gtest/gtest.h>

#include "backend/backend_test_util.h"

namespace nn {
namespace {

class ProfileClockTest : public test::BackendTest {};

// A gemm big enough to take measurable time on either backend.
void work(Backend& be, DeviceArray<float>& a, DeviceArray<float>& c, int n) {
  be.gemm(false, false, n, n, n, 1.0f, a.data(), n, a.data(), n, 0.0f, c.data(), n);
}

TEST_P(ProfileClockTest, MarksComeBackInOrderAndRangesHaveLength) {
  auto be = backend(2);
  const int n = 256;
  Rng rng(4);
  auto a = test::to_device(*be, test::uniform(size_t(n) * n, rng, -1, 1));
  DeviceArray<float> c(*be, size_t(n) * n);
  auto clock = be->make_profile_clock();
  ASSERT_NE(clock, nullptr);
  EXPECT_NE(std::string(clock->description()), "");
  std::vector<double> times;
  for (int round = 0; round < 2; ++round) {  // the second round reuses what the first collected
    for (int i = 0; i < 8; ++i) {
      clock->open("work");
      work(*be, a, c, n);
      clock->close();
    }
    std::vector<double> early;
    clock->collect(/*wait=*/false, early);
    EXPECT_LE(early.size(), 16u);
    clock->collect(/*wait=*/true, early);
    ASSERT_EQ(early.size(), 16u) << "round " << round;
    times.insert(times.end(), early.begin(), early.end());
  }
  for (size_t i = 1; i < times.size(); ++i) EXPECT_GE(times[i], times[i - 1]) << "mark " << i;
  for (size_t i = 0; i < times.size(); i += 2)
    EXPECT_GT(times[i + 1] - times[i], 0.0) << "range " << i / 2 << " around a 256^3 gemm";
  EXPECT_EQ(times[0], 0.0);  // times count from the clock's first mark
  std::vector<double> none;
  clock->collect(true, none);
  EXPECT_TRUE(none.empty());
}

NN_INSTANTIATE_ON_BACKENDS(ProfileClockTest);

}  // namespace
}  // namespace nn
