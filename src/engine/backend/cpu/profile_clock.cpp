// The CPU backend's profile clock (core/profile_clock.h): the host's steady clock. The backend
// is synchronous (a kernel has finished when its call returns), so the time of a call is the
// time of the work before it, and every mark is complete the moment it is taken.
#include <chrono>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace nn {
namespace {

class SteadyProfileClock final : public ProfileClock {
 public:
  void open(const char*) noexcept override { mark(); }
  void close() noexcept override { mark(); }
  void collect(bool, std::vector<double>& times) override {
    if (failed_) throw BackendError("profiling: out of memory for the clock's marks");
    for (const Clock::time_point t : marks_)
      times.push_back(std::chrono::duration<double, std::micro>(t - origin_).count());
    marks_.clear();
  }
  const char* description() const override { return "steady clock"; }

 private:
  using Clock = std::chrono::steady_clock;
  void mark() noexcept {
    const Clock::time_point now = Clock::now();
    if (!started_) origin_ = now, started_ = true;
    try {
      marks_.push_back(now);
    } catch (...) {
      failed_ = true;  // a lost mark would shift every later one: collect() reports it
    }
  }
  std::vector<Clock::time_point> marks_;
  Clock::time_point origin_;
  bool started_ = false, failed_ = false;
};

}  // namespace

std::unique_ptr<ProfileClock> CpuBackend::make_profile_clock() {
  return std::make_unique<SteadyProfileClock>();
}

}  // namespace nn
