// The profile's measured times beside their floors (nn-train --profile, docs/performance.md,
// "Floors"): per phase and layer, the ms per step the Profiler measured, the least time the
// machine needs for that part's arithmetic and memory traffic (train/step_cost.h) and the share
// of the floor reached (floor / measured; 100% is the hardware's limit).
#pragma once

#include <string>
#include <vector>

#include "core/profiler.h"
#include "train/step_cost.h"

namespace nn {

// Lines starting "profile: ", for the log after profile_table. `basis` says what the floors
// were computed for (batch, non-zeros), printed with the counts.
std::vector<std::string> floor_table(const Profiler& profiler, const StepCost& cost,
                                     const MachinePeaks& peaks, const std::string& basis);

}  // namespace nn
