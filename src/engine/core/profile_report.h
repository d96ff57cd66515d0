// What a Profiler (core/profiler.h) measured, for people and for trace viewers: the table nn-train
// --profile logs at the end of a run, and the Chrome trace-event JSON of --trace (the
// "traceEvents" format that ui.perfetto.dev and chrome://tracing open). docs/performance.md
// explains how to read both.
#pragma once

#include <string>
#include <vector>

#include "core/profiler.h"

namespace nn {

// Who measured: the process's rank among `ranks` and the backend's name, for the headings.
struct ProfileSource {
  int rank = 0, ranks = 1;
  std::string backend;
};

// The table, one line per entry, each starting "profile: ": a heading (steps, epochs, mean step
// time, the steps' part of the epochs' wall time), then per phase one row per label and a row
// for the phase, the time between the ranges ("other") and the whole step, with total ms, ms
// per step and share of the step; the rows of a phase and "other" add up to 100%. Last, the
// batch loader's time on its own thread.
std::vector<std::string> profile_table(const Profiler& profiler, const ProfileSource& source);

// The kept events as a Chrome trace (JSON text): complete events ("ph": "X") with ts and dur in
// microseconds, pid = the rank, tid 0, and the step and epoch in args; metadata naming the
// process and thread; "otherData" says how the trace was bounded and what was left out.
std::string profile_trace_json(const Profiler& profiler, const ProfileSource& source);

// profile_trace_json written atomically to `path` (core/atomic_file.h); IoError on failure.
void write_profile_trace(const Profiler& profiler, const ProfileSource& source,
                         const std::string& path);

}  // namespace nn
