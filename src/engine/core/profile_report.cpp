// The profile table and the Chrome trace (core/profile_report.h).
#include "core/profile_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/format.h"

namespace nn {
namespace {

std::string heading(const Profiler& p, const ProfileSource& s) {
  std::string who = s.ranks > 1 ? format("rank %d of %d, ", s.rank, s.ranks) : std::string();
  std::string line = "profile: " + who + s.backend + " backend (" + p.clock_description() + "): ";
  if (p.steps() == 0) return line + "no training steps were profiled";
  const double per_step_ms = p.step_microseconds() / 1e3 / double(p.steps());
  line += format("%.0f steps in %.0f epoch(s), %.3f ms per step", double(p.all_steps()),
                 double(p.epochs()), per_step_ms);
  const double all_steps_us = p.step_microseconds() + p.first_step_microseconds();
  if (p.wall_seconds() > 0)
    line += format("; the steps took %.1f%% of the epochs' ",
                   100.0 * all_steps_us / 1e6 / p.wall_seconds()) +
            (p.wall_seconds() < 1 ? format("%.1f ms", p.wall_seconds() * 1e3)
                                  : format("%.2f s", p.wall_seconds()));
  return line;
}

}  // namespace

std::vector<std::string> profile_table(const Profiler& p, const ProfileSource& s) {
  std::vector<std::string> lines{heading(p, s)};
  if (p.steps() == 0) return lines;
  if (p.first_step_microseconds() > 0)
    lines.push_back(format(
        "profile: the run's first step took %.3f ms and is left out of the time per step and of "
        "the table: it holds one-time set-up (library handles, kernels loaded on first use)",
        p.first_step_microseconds() / 1e3));
  const std::vector<ProfileTotal> totals = p.totals();
  size_t width = 24;
  for (const ProfileTotal& t : totals) width = std::max(width, p.key(t.key).label.size() + 2);
  const double steps = double(p.steps());
  const double step_us = std::max(p.step_microseconds(), 1e-9);
  auto row = [&](const char* phase, const std::string& part, double us, bool share) {
    std::string line = format("profile: %-14s %-*s %12.3f %10.3f", phase, int(width), part.c_str(),
                              us / 1e3, us / 1e3 / steps);
    if (share) line += format(" %6.1f%%", 100.0 * us / step_us);
    return line;
  };
  lines.push_back(format("profile: %-14s %-*s %12s %10s %7s", "phase", int(width), "part",
                         "total ms", "ms/step", "share"));
  for (size_t i = 0; i < totals.size();) {
    const ProfilePhase phase = p.key(totals[i].key).phase;
    double phase_us = 0;
    size_t rows = 0;
    for (; i < totals.size() && p.key(totals[i].key).phase == phase; ++i, ++rows) {
      const ProfileTotal& t = totals[i];
      // Ranges nested in others are parts of those: no share of their own, so that the shares
      // of the step's parts add up to 100%.
      std::string label = p.key(t.key).label.empty() ? "(unnamed)" : p.key(t.key).label;
      if (!t.top_level) label += " (within another range)";
      lines.push_back(row(phase_name(phase), label, t.microseconds, t.top_level));
      if (t.top_level) phase_us += t.microseconds;
    }
    if (rows > 1) lines.push_back(row(phase_name(phase), "(all)", phase_us, true));
  }
  lines.push_back(
      row("other", "between the ranges", std::max(0.0, step_us - p.covered_microseconds()), true));
  lines.push_back(row("step", "(all)", p.step_microseconds(), true));
  if (p.loader_seconds() > 0)
    lines.push_back(format(
        "profile: the batch loader assembled minibatches on its own thread for %.3f ms per step, "
        "overlapped with the steps (\"data wait for batch\" is what the steps waited for it)",
        p.loader_seconds() * 1e3 / double(p.all_steps())));
  if (p.options().trace) {
    const uint32_t per_epoch = p.options().trace_steps;
    std::string line =
        format("profile: trace: %.0f events kept (", double(p.events().size())) +
        (per_epoch ? "the first " + std::to_string(per_epoch) + " steps of every epoch)"
                   : std::string("every step)"));
    if (p.dropped_events())
      line += format(", %.0f more left out (at most %.0f are kept)", double(p.dropped_events()),
                     double(p.options().trace_max_events));
    lines.push_back(line);
  }
  return lines;
}

std::string profile_trace_json(const Profiler& p, const ProfileSource& s) {
  using nlohmann::json;
  json events = json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", s.rank},
                    {"tid", 0},
                    {"args", {{"name", "nn-train rank " + std::to_string(s.rank)}}}});
  events.push_back(
      {{"name", "thread_name"},
       {"ph", "M"},
       {"pid", s.rank},
       {"tid", 0},
       {"args",
        {{"name", "training steps, " + s.backend + " backend (" + p.clock_description() + ")"}}}});
  // In start order, enclosing ranges before the ranges they hold: viewers that build the nesting
  // from the order (the older chrome://tracing) then see it right.
  std::vector<const ProfileEvent*> order;
  for (const ProfileEvent& e : p.events()) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const ProfileEvent* a, const ProfileEvent* b) {
    if (a->start_us != b->start_us) return a->start_us < b->start_us;
    return a->duration_us > b->duration_us;
  });
  for (const ProfileEvent* e : order) {
    const ProfileKey& k = p.key(e->key);
    events.push_back({{"name", k.name},
                      {"cat", phase_name(k.phase)},
                      {"ph", "X"},
                      {"ts", e->start_us},
                      {"dur", e->duration_us},
                      {"pid", s.rank},
                      {"tid", 0},
                      {"args", {{"step", e->step}, {"epoch", e->epoch}}}});
  }
  json trace = {{"traceEvents", std::move(events)},
                {"displayTimeUnit", "ms"},
                {"otherData",
                 {{"tool", "nn-train"},
                  {"backend", s.backend},
                  {"clock", p.clock_description()},
                  {"rank", s.rank},
                  {"ranks", s.ranks},
                  {"steps_per_epoch", p.options().trace_steps},
                  {"max_events", p.options().trace_max_events},
                  {"events_left_out", p.dropped_events()}}}};
  return trace.dump() + "\n";
}

void write_profile_trace(const Profiler& p, const ProfileSource& s, const std::string& path) {
  write_file_atomically(path, profile_trace_json(p, s));
}

}  // namespace nn
