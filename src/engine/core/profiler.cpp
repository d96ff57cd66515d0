// The Profiler's bookkeeping (core/profiler.h): ranges become pairs of clock marks; marks become
// times when the clock has them; ranges whose two times are known are summed and, in traced
// steps, kept as events.
#include "core/profiler.h"

#include <algorithm>

#include "core/error.h"

namespace nn {
namespace {

// Marks waiting for their times before end_step() asks the clock for the completed ones: enough
// that a step rarely asks (asking costs no wait, but is not free on a GPU), few enough that the
// waiting ranges stay small.
constexpr uint64_t kMarksBeforeCollect = 4096;

}  // namespace

const char* phase_name(ProfilePhase phase) {
  switch (phase) {
    case ProfilePhase::Step:
      return "step";
    case ProfilePhase::Data:
      return "data";
    case ProfilePhase::Forward:
      return "forward";
    case ProfilePhase::Loss:
      return "loss";
    case ProfilePhase::Backward:
      return "backward";
    case ProfilePhase::Communication:
      return "communication";
    case ProfilePhase::Update:
      return "update";
  }
  return "?";
}

Profiler::Profiler(std::unique_ptr<ProfileClock> clock, ProfilerOptions options)
    : clock_(std::move(clock)), options_(options) {
  NN_CHECK(clock_ != nullptr, "a profiler needs a clock");
}

uint32_t Profiler::key_id(ProfilePhase phase, std::string_view label) {
  auto& by_address = key_by_address_[size_t(phase)];
  const auto hit = by_address.find(label.data());
  if (hit != by_address.end() && keys_[hit->second].label == label) return hit->second;
  std::string name = phase_name(phase);
  if (!label.empty()) name += " " + std::string(label);
  auto [it, added] = key_by_name_.emplace(std::move(name), uint32_t(keys_.size()));
  if (added) {
    keys_.push_back({phase, std::string(label), it->first});
    ProfileTotal t;
    t.key = it->second;
    totals_.push_back(t);
  }
  by_address[label.data()] = it->second;
  return it->second;
}

void Profiler::open(ProfilePhase phase, std::string_view label) {
  const uint32_t key = key_id(phase, label);
  open_.push_back({key, marks_});
  clock_->open(keys_[key].name.c_str());
  ++marks_;
}

void Profiler::close() noexcept {
  if (open_.empty()) return;
  const Open o = open_.back();
  open_.pop_back();
  clock_->close();
  const uint64_t end = marks_++;
  try {
    closed_.push_back(
        {o.key, uint32_t(open_.size()), o.start_mark, end, step_, epoch_, trace_step_});
  } catch (...) {
    // Out of memory: this range goes unreported; its marks are dropped with the next trim.
  }
}

void Profiler::begin_step(uint64_t step, uint64_t epoch) {
  if (first_.step == 0) first_.step = step;
  step_ = step;
  epoch_ = epoch;
  trace_step_ =
      options_.trace && (options_.trace_steps == 0 || steps_in_epoch_ < options_.trace_steps);
  open(ProfilePhase::Step, "");
}

void Profiler::end_step() noexcept {
  close();
  ++steps_;
  ++steps_in_epoch_;
  step_ = 0;
  trace_step_ = false;
  if (marks_ - (times_base_ + times_.size()) < kMarksBeforeCollect) return;
  try {
    resolve(/*wait=*/false);
  } catch (...) {
    // A clock failure here is reported by the next resolve that may throw (end of the epoch).
  }
}

void Profiler::end_epoch(double wall_seconds) {
  resolve(/*wait=*/true);
  wall_seconds_ += wall_seconds;
  ++epochs_;
  steps_in_epoch_ = 0;
}

void Profiler::finish() {
  resolve(/*wait=*/true);
}

void Profiler::add_loader_seconds(double seconds) {
  loader_ns_.fetch_add(uint64_t(std::max(seconds, 0.0) * 1e9), std::memory_order_relaxed);
}

void Profiler::resolve(bool wait) {
  collected_.clear();
  clock_->collect(wait, collected_);
  times_.insert(times_.end(), collected_.begin(), collected_.end());
  const uint64_t known = times_base_ + times_.size();
  while (!closed_.empty() && closed_.front().end_mark < known) {
    fold(closed_.front());
    closed_.pop_front();
  }
  // Times still needed: from the earliest start of a range that is open or waiting.
  uint64_t keep = known;
  if (!open_.empty()) keep = std::min(keep, open_.front().start_mark);
  for (const Closed& c : closed_) keep = std::min(keep, c.start_mark);
  while (times_base_ < keep && !times_.empty()) {
    times_.pop_front();
    ++times_base_;
  }
}

void Profiler::fold(const Closed& c) {
  // A mark older than the times kept belongs to a range dropped for lack of memory.
  if (c.start_mark < times_base_) return;
  const double start = times_[c.start_mark - times_base_];
  const double duration = std::max(0.0, times_[c.end_mark - times_base_] - start);
  ProfileTotal& t = totals_[c.key];
  t.microseconds += duration;
  ++t.count;
  const bool step = keys_[c.key].phase == ProfilePhase::Step;
  if (step)
    step_us_ += duration;
  else if (c.depth == 1)
    covered_us_ += duration;
  else
    t.top_level = false;
  if (c.step != 0 && c.step == first_.step) {
    if (first_.us.size() < totals_.size()) {
      first_.us.resize(totals_.size(), 0.0);
      first_.count.resize(totals_.size(), 0);
    }
    first_.us[c.key] += duration;
    ++first_.count[c.key];
    if (step)
      first_.step_us += duration;
    else if (c.depth == 1)
      first_.covered_us += duration;
  }
  if (!c.traced) return;
  if (events_.size() < options_.trace_max_events)
    events_.push_back({c.key, start, duration, c.step, c.epoch});
  else
    ++dropped_events_;
}

std::vector<ProfileTotal> Profiler::totals() const {
  std::vector<ProfileTotal> out;
  for (ProfileTotal t : totals_) {
    if (keys_[t.key].phase == ProfilePhase::Step) continue;
    if (first_left_out() && t.key < first_.us.size()) {
      t.microseconds = std::max(0.0, t.microseconds - first_.us[t.key]);
      t.count -= first_.count[t.key];
    }
    // A range seen only in the first step is kept, with no time: the table still names it.
    out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(), [this](const ProfileTotal& a, const ProfileTotal& b) {
    return keys_[a.key].phase < keys_[b.key].phase;
  });
  return out;
}

}  // namespace nn
