// Time per phase and layer of the training step (nn-train --profile, docs/performance.md).
// Code under measurement opens named ranges (ProfileRange, below); the Profiler records a mark on
// the backend's clock (core/profile_clock.h) at each end and resolves the marks into durations
// later: the CPU backend's marks are already times, the CUDA backend's are events that are read
// when they have completed, or, waiting, at the end of an epoch, so a step never waits for the
// device on the profiler's account. Durations are summed per (phase, label) and, for a bounded
// number of steps per epoch, kept as events for a Chrome trace (core/profile_report.h).
//
// Cost when off: the code under measurement holds a null Profiler pointer, and a ProfileRange
// on it does nothing but test that pointer (its label is a string_view, made without copying).
//
// Not thread-safe: one thread (the training loop's) records ranges; add_loader_seconds() alone
// may be called from another.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/profile_clock.h"

namespace nn {

// Step encloses one training step; the others are the parts of it, in report order.
enum class ProfilePhase : uint8_t { Step, Data, Forward, Loss, Backward, Communication, Update };
inline constexpr size_t kProfilePhaseCount = 7;
const char* phase_name(ProfilePhase phase);  // "step", "data", "forward", ...

struct ProfilerOptions {
  // Keep events for a trace: those of the first `trace_steps` steps of every epoch (0: every
  // step), at most `trace_max_events` in all (the rest are counted, not kept).
  bool trace = false;
  uint32_t trace_steps = 20;
  size_t trace_max_events = 200000;
  // Leave the run's first step out of the sums (below); off for a caller that ran untimed steps
  // of its own first (nn-train --plan).
  bool leave_out_first_step = true;
};

// One (phase, label) pair: "forward Hidden1" is {Forward, "Hidden1"}.
struct ProfileKey {
  ProfilePhase phase;
  std::string label;
  std::string name;  // "<phase> <label>": the trace's and the external profiler's name
};

// The summed durations of one key.
struct ProfileTotal {
  uint32_t key = 0;
  double microseconds = 0;
  uint64_t count = 0;
  // Ranges directly inside a step (depth 1) partition it; deeper ones are parts of those.
  bool top_level = true;
};

// A resolved range kept for the trace.
struct ProfileEvent {
  uint32_t key = 0;
  double start_us = 0, duration_us = 0;  // on the clock's time line
  uint64_t step = 0;                     // the run's step (1-based; 0: outside a step)
  uint64_t epoch = 0;                    // 1-based
};

class Profiler {
 public:
  explicit Profiler(std::unique_ptr<ProfileClock> clock, ProfilerOptions options = {});
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // A range inside the current one (ProfileRange calls these).
  void open(ProfilePhase phase, std::string_view label);
  void close() noexcept;

  // A training step: `step` is the run's update number (1-based), `epoch` its epoch (1-based).
  // end_step() resolves what the clock has completed when many marks wait, without waiting.
  void begin_step(uint64_t step, uint64_t epoch);
  void end_step() noexcept;
  // The end of an epoch that took `wall_seconds` on the host: every mark is resolved (waiting
  // for the device) and the next epoch's first steps are traced again.
  void end_epoch(double wall_seconds);
  // Resolves every mark (waiting for the device): before reading the results.
  void finish();
  // Time the batch loader spent assembling minibatches on its own thread, overlapped with the
  // steps (thread-safe).
  void add_loader_seconds(double seconds);

  // Results (after finish()). The first step of a run of several holds one-time set-up (on a
  // GPU: library handles, kernels loaded on first use, 100 ms and more on an H200), which would
  // swamp the table; steps(), step_microseconds(), covered_microseconds() and totals() leave it
  // out, and first_step_microseconds() says how long it took (0 when nothing was left out).
  uint64_t steps() const { return steps_ - (first_left_out() ? 1 : 0); }
  uint64_t all_steps() const { return steps_; }
  uint64_t epochs() const { return epochs_; }
  double step_microseconds() const { return step_us_ - (first_left_out() ? first_.step_us : 0); }
  double first_step_microseconds() const { return first_left_out() ? first_.step_us : 0; }
  // The part of the steps inside their top-level ranges (the rest is bookkeeping between them).
  double covered_microseconds() const {
    return covered_us_ - (first_left_out() ? first_.covered_us : 0);
  }
  double wall_seconds() const { return wall_seconds_; }
  double loader_seconds() const { return loader_ns_.load() * 1e-9; }
  const ProfileKey& key(uint32_t id) const { return keys_[id]; }
  // One total per key in report order: by phase, then in the order first seen (the step's own
  // total is step_microseconds()).
  std::vector<ProfileTotal> totals() const;
  const std::vector<ProfileEvent>& events() const { return events_; }
  uint64_t dropped_events() const { return dropped_events_; }
  const ProfilerOptions& options() const { return options_; }
  const char* clock_description() const { return clock_->description(); }

 private:
  struct Open {
    uint32_t key;
    uint64_t start_mark;
  };
  struct Closed {
    uint32_t key;
    uint32_t depth;
    uint64_t start_mark, end_mark;
    uint64_t step, epoch;
    bool traced;
  };
  // The run's first step, kept apart as well as in the sums (left out when there are others).
  struct FirstStep {
    uint64_t step = 0;  // its number (the run's first update; later ones on a resumed run)
    double step_us = 0, covered_us = 0;
    std::vector<double> us;  // by key id
    std::vector<uint64_t> count;
  };
  bool first_left_out() const {
    return options_.leave_out_first_step && steps_ > 1 && first_.step_us > 0;
  }
  uint32_t key_id(ProfilePhase phase, std::string_view label);
  // Takes the clock's completed marks and folds every range whose ends are both known.
  void resolve(bool wait);
  void fold(const Closed& c);

  std::unique_ptr<ProfileClock> clock_;
  ProfilerOptions options_;
  std::deque<ProfileKey> keys_;  // a deque: names stay put (the clock keeps their pointers)
  std::unordered_map<std::string, uint32_t> key_by_name_;
  // Fast path: a label's characters by address (layer names and literals do not move), per phase;
  // the key found is checked against the label before it is used.
  std::array<std::unordered_map<const char*, uint32_t>, kProfilePhaseCount> key_by_address_;
  std::vector<ProfileTotal> totals_;  // by key id
  std::vector<Open> open_;
  std::deque<Closed> closed_;      // waiting for their marks, in closing (= end mark) order
  std::deque<double> times_;       // collected mark times not needed by a waiting range yet
  uint64_t times_base_ = 0;        // the mark number of times_.front()
  uint64_t marks_ = 0;             // marks recorded
  std::vector<double> collected_;  // scratch for collect()
  uint64_t step_ = 0, epoch_ = 0;  // the current step and epoch (0: none)
  bool trace_step_ = false;
  uint32_t steps_in_epoch_ = 0;
  uint64_t steps_ = 0, epochs_ = 0;
  double step_us_ = 0, covered_us_ = 0, wall_seconds_ = 0;
  std::atomic<uint64_t> loader_ns_{0};
  std::vector<ProfileEvent> events_;
  uint64_t dropped_events_ = 0;
  FirstStep first_;
};

// A range for the scope of this object, on `profiler` when it is not null (else nothing).
class ProfileRange {
 public:
  ProfileRange(Profiler* profiler, ProfilePhase phase, std::string_view label)
      : profiler_(profiler) {
    if (profiler_) profiler_->open(phase, label);
  }
  ~ProfileRange() {
    if (profiler_) profiler_->close();
  }
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;

 private:
  Profiler* profiler_;
};

// A training step for the scope of this object (Profiler::begin_step/end_step), when not null.
class ProfileStep {
 public:
  ProfileStep(Profiler* profiler, uint64_t step, uint64_t epoch) : profiler_(profiler) {
    if (profiler_) profiler_->begin_step(step, epoch);
  }
  ~ProfileStep() {
    if (profiler_) profiler_->end_step();
  }
  ProfileStep(const ProfileStep&) = delete;
  ProfileStep& operator=(const ProfileStep&) = delete;

 private:
  Profiler* profiler_;
};

}  // namespace nn
