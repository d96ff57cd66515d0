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

// Each rung as the schedule sees it now: its results best first, whether it is final (nothing
// more can reach it) and how many of its best may go on.
struct RungView {
  std::vector<std::pair<double, uint32_t>> results;
  bool final = false;
  size_t quota = 0;
};

std::optional<uint32_t> pending_trial(const ScheduleState& s) {
  for (uint32_t t = 0; t < s.drawn; ++t)
    if (!has(s, t, 0)) return t;
  return std::nullopt;
}

std::vector<RungView> rung_views(const ScheduleState& s) {
  std::vector<RungView> views(s.rungs);
  bool final = s.drawn >= s.trials && !pending_trial(s);
  for (uint32_t rung = 0; rung < s.rungs; ++rung) {
    RungView& v = views[rung];
    for (const auto& key : s.running)
      if (key.second == rung) final = false;
    v.results = ranked(s, rung);
    v.final = final;
    if (rung + 1 == s.rungs) break;
    if (final)
      v.quota = (v.results.size() + s.eta - 1) / s.eta;
    else if (s.asynchronous)
      v.quota = v.results.size() / s.eta;
    // Trials still to go on from this rung: the next is not final.
    for (size_t i = 0; i < v.quota && i < v.results.size(); ++i)
      if (std::isfinite(v.results[i].first) && !has(s, v.results[i].second, rung + 1))
        final = false;
  }
  return views;
}

}  // namespace

Job next_job(const ScheduleState& s) {
  const std::vector<RungView> views = rung_views(s);
  // The deepest promotion first: the best trial of its rung's quota that has not gone on.
  for (uint32_t rung = s.rungs - 1; rung-- > 0;) {
    const RungView& v = views[rung];
    for (size_t i = 0; i < v.quota && i < v.results.size(); ++i) {
      const auto& [metric, trial] = v.results[i];
      if (std::isfinite(metric) && !has(s, trial, rung + 1))
        return Job{Job::Kind::Promote, trial, rung + 1};
    }
  }
  // Trials drawn but without their first rung (a restart after a kill): before any new draw.
  if (const auto pending = pending_trial(s)) return Job{Job::Kind::Start, *pending, 0};
  if (s.drawn < s.trials) return Job{Job::Kind::Draw, s.drawn, 0};
  return s.running.empty() ? Job{Job::Kind::Done} : Job{Job::Kind::Wait};
}

std::map<uint32_t, uint32_t> deepest_rungs(const ScheduleState& s) {
  std::map<uint32_t, uint32_t> deepest;
  for (const auto& [key, metric] : s.finished) {
    auto it = deepest.find(key.first);
    if (it == deepest.end() || key.second > it->second) deepest[key.first] = key.second;
  }
  return deepest;
}

std::vector<uint32_t> halving_members(const ScheduleState& s, uint32_t rung) {
  std::vector<uint32_t> out;
  if (rung == 0) {
    for (uint32_t trial = 0; trial < s.trials; ++trial) out.push_back(trial);
    return out;
  }
  const auto below = ranked(s, rung - 1);
  const size_t quota = (below.size() + s.eta - 1) / s.eta;
  for (size_t i = 0; i < quota && i < below.size(); ++i)
    if (std::isfinite(below[i].first)) out.push_back(below[i].second);
  return out;
}

std::vector<uint32_t> retired(const ScheduleState& s) {
  const std::vector<RungView> views = rung_views(s);
  const std::optional<Winner> best = winner(s);
  std::vector<uint32_t> out;
  for (const auto& [trial, rung] : deepest_rungs(s)) {
    bool running = false;
    for (const auto& key : s.running) running = running || key.first == trial;
    if (running || (best && best->trial == trial)) continue;
    const double metric = s.finished.at({trial, rung});
    const RungView& v = views[rung];
    bool may_go_on = false;
    if (std::isfinite(metric) && rung + 1 < s.rungs) {
      if (!v.final) {
        may_go_on = true;  // the rung may still promote it
      } else {
        for (size_t i = 0; i < v.quota && i < v.results.size(); ++i)
          may_go_on = may_go_on || v.results[i].second == trial;
      }
    }
    if (!may_go_on) out.push_back(trial);
  }
  return out;
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
