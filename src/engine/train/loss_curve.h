// The loss-curve picture a training run draws beside its results: the loss (and the validation
// metric, when the log has one) per epoch from the JSON-lines epoch log (train/epoch_log.h),
// drawn by gnuplot or matplotlib when one is installed. Best-effort: it never fails the run.
#pragma once

#include <string>

#include "core/log.h"

namespace nn {

// Draws the curves of the log at `log_path` into `png`. Returns true when the picture was
// written (and logs so); otherwise logs one line saying why not (no gnuplot or matplotlib, or the
// plotter failed) and returns false. The plotter's own output is discarded.
bool plot_epoch_log(const std::string& log_path, const std::string& png, const LogSink& log);

}  // namespace nn
