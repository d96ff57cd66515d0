// The clock a Profiler (core/profiler.h) reads: marks recorded in the order of a backend's work
// and turned into times later. Each backend makes its own (Backend::make_profile_clock): the CPU
// backend is synchronous, so a mark is the host's steady clock at the call; the CUDA backend
// records an event on its stream, so a mark is the moment the GPU reaches that point of its
// work, and nothing waits for the GPU until collect() is asked to. Marks are numbered 0, 1, 2,
// ... in recording order and collected in that order.
#pragma once

#include <cstdint>
#include <vector>

namespace nn {

class ProfileClock {
 public:
  virtual ~ProfileClock() = default;
  // A mark at the start of a range named `name` (a clock that feeds an external profiler, such as
  // NVTX for Nsight Systems, opens a range of that name there; `name` lives until the clock is
  // destroyed). Must not throw: ranges close in destructors; a failure is kept and thrown by
  // the next collect().
  virtual void open(const char* name) noexcept = 0;
  // A mark at the end of the innermost open range.
  virtual void close() noexcept = 0;
  // Appends to `times` the times, in microseconds from the clock's first mark, of the marks not
  // collected yet, in order: as many as are complete without waiting, or every one when `wait`
  // (waiting for the device; call it only where a wait costs nothing, at the end of an epoch).
  virtual void collect(bool wait, std::vector<double>& times) = 0;
  // What the times measure, for the report ("steady clock", "CUDA events").
  virtual const char* description() const = 0;
};

}  // namespace nn
