// The measured profile beside the step's floors (train/floor_report.h).
#include "train/floor_report.h"

#include <algorithm>
#include <map>
#include <utility>

#include "core/format.h"

namespace nn {

std::vector<std::string> floor_table(const Profiler& p, const StepCost& cost,
                                     const MachinePeaks& peaks, const std::string& basis) {
  std::vector<std::string> lines;
  if (p.steps() == 0) return lines;
  const double steps = double(p.steps());
  // Floors and measured times by (phase, layer), in milliseconds per step.
  std::map<std::pair<std::string, std::string>, double> floor_ms, measured_ms;
  for (const PhaseCost& c : cost.phases)
    floor_ms[{c.phase, c.layer}] += StepCost::floor_seconds(c, peaks) * 1e3;
  for (const ProfileTotal& t : p.totals()) {
    if (!t.top_level) continue;
    const ProfileKey& k = p.key(t.key);
    measured_ms[{phase_name(k.phase), k.label}] += t.microseconds / 1e3 / steps;
  }
  lines.push_back(format(
      "profile: floors: the least time this machine needs per step for each part's arithmetic "
      "and memory traffic, at the peaks measured after training (%.1f GFLOP/s gemm, %.1f GB/s)",
      peaks.tensor_flops / 1e9, peaks.bytes_per_s / 1e9));
  size_t width = 24;
  for (const auto& [key, ms] : floor_ms) width = std::max(width, key.second.size() + 2);
  lines.push_back(format("profile: %-14s %-*s %10s %12s %9s", "phase", int(width), "part",
                         "ms/step", "floor ms", "of floor"));
  auto row = [&](const std::string& phase, const std::string& part, double measured, double floor) {
    std::string line = format("profile: %-14s %-*s %10.3f %12.3f", phase.c_str(), int(width),
                              part.c_str(), measured, floor);
    if (measured > 0) line += format(" %8.1f%%", 100.0 * floor / measured);
    return line;
  };
  double total_floor = 0;
  for (const char* phase : {"forward", "loss", "backward", "update"}) {
    double phase_measured = 0, phase_floor = 0;
    size_t rows = 0;
    for (const auto& [key, floor] : floor_ms) {
      if (key.first != phase) continue;
      const auto m = measured_ms.find(key);
      const double measured = m == measured_ms.end() ? 0.0 : m->second;
      lines.push_back(row(phase, key.second, measured, floor));
      phase_floor += floor;
      ++rows;
    }
    for (const auto& [key, measured] : measured_ms)
      if (key.first == phase) phase_measured += measured;
    if (rows > 1) lines.push_back(row(phase, "(all)", phase_measured, phase_floor));
    total_floor += phase_floor;
  }
  lines.push_back(row("step", "(all)", p.step_microseconds() / 1e3 / steps, total_floor));
  std::string counted = format(
      "profile: floors counted from the network's shapes (%s): %.3f GFLOP and %.1f MB per "
      "step; the step's time beyond them is data, communication, launches and waits",
      basis.c_str(), cost.flops() / 1e9, cost.bytes() / 1e6);
  if (!cost.unmodelled.empty()) {
    counted += "; not counted beyond their activations' traffic:";
    for (const std::string& l : cost.unmodelled) counted += " " + l;
  }
  lines.push_back(counted);
  return lines;
}

}  // namespace nn
