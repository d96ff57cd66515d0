// Files nn-train writes beside its results for following and judging a run: a JSON-lines log
// with one record per epoch (written as each epoch ends, so `tail -f` works) and a PNG of the
// loss and validation-metric curves drawn from that log by gnuplot or matplotlib when one is
// installed. Drawing is best-effort: it never fails the run.
#pragma once

#include <cstdio>
#include <string>

#include "core/log.h"
#include "train/training_loop.h"

namespace nn::tool {

// "<results without .nc><suffix>": net.nc + ".epochs.jsonl" -> net.epochs.jsonl.
std::string beside_results(const std::string& results, const std::string& suffix);

// One JSON object per line: {"epoch":3,"loss":..,"data_loss":..,"reg_loss":..,
// "examples_per_second":..,"seconds":..,"alpha":..,"validation":{"recall@10":..,...}}
// ("validation" only on epochs that were evaluated).
std::string epoch_record(const EpochReport& r);

class EpochLog {
 public:
  // A log at `path`; `append` keeps the records already there (a resumed run). Nothing is
  // written until the first epoch ends.
  EpochLog(const std::string& path, bool append);
  // Adds one record and atomically replaces the file with all records so far. Throws IoError
  // (with the operating system's reason) when the file cannot be written.
  void write(const EpochReport& r);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string content_;
};

// Draws the loss (and validation metric, when the log has one) per epoch from a log written by
// EpochLog into `png`. Returns true when the picture was written; otherwise logs one line saying
// why not (no gnuplot or matplotlib, or the plotter failed) and returns false.
bool plot_epoch_log(const std::string& log_path, const std::string& png, const LogSink& log);

}  // namespace nn::tool
