// nn-tune's schedule of trials and promotions (schedule.h).
#include "nn-tune/schedule.h"

#include <algorithm>
#include <cmath>

namespace nn::tool {

namespace {

bool has(const ScheduleState& s, uint32_t trial, uint32_t rung) {
  return s.finished.count({trial, rung}) > 0 || s.running.count({trial, rung}) > 0;
}

// The results of one rung, best first (ties: the lower trial first, so the order is stable).
std::vector<std::pair<double, uint32_t>> ranked(const ScheduleState& s, uint32_t rung) {
  std::vector<std::pair<double, uint32_t>> out;
  for (const auto& [key, metric] : s.finished)
    if (key.second == rung) out.push_back({metric, key.first});
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  return out;
}

}  // namespace

Job next_job(const ScheduleState& s) {
  // Trials drawn but without their first rung (a restart after a kill): before any new draw.
  std::optional<uint32_t> pending;
  for (uint32_t t = 0; t < s.drawn && !pending; ++t)
    if (!has(s, t, 0)) pending = t;
  const bool all_in = s.drawn >= s.trials && !pending;

  // From the first rung up: what each rung may promote now, and whether the rung is final.
  std::optional<Job> deepest;
  bool final = all_in;
  for (uint32_t rung = 0; rung + 1 < s.rungs; ++rung) {
    for (const auto& key : s.running)
      if (key.second == rung) final = false;
    const auto results = ranked(s, rung);
    size_t quota = 0;
    if (final)
      quota = (results.size() + s.eta - 1) / s.eta;
    else if (s.asynchronous)
      quota = results.size() / s.eta;
    bool promotable = false;
    for (size_t i = 0; i < quota && i < results.size(); ++i) {
      const auto& [metric, trial] = results[i];
      if (!std::isfinite(metric) || has(s, trial, rung + 1)) continue;
      promotable = true;
      deepest = Job{Job::Kind::Promote, trial, rung + 1};
      break;
    }
    // Trials still to come into the next rung: it is not final.
    if (promotable) final = false;
  }
  if (deepest) return *deepest;
  if (pending) return Job{Job::Kind::Start, *pending, 0};
  if (s.drawn < s.trials) return Job{Job::Kind::Draw, s.drawn, 0};
  return s.running.empty() ? Job{Job::Kind::Done} : Job{Job::Kind::Wait};
}

std::optional<Winner> winner(const ScheduleState& s) {
  for (uint32_t rung = s.rungs; rung-- > 0;) {
    const auto results = ranked(s, rung);
    if (!results.empty() && std::isfinite(results.front().first))
      return Winner{results.front().second, rung, results.front().first};
  }
  return std::nullopt;
}

}  // namespace nn::tool
