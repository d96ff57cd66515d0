// Files nn-train writes beside its results for following and judging a run: a JSON-lines log
// with one record per epoch (written as each epoch ends, so `tail -f` works) and a PNG of the
// loss and validation-metric curves drawn from that log by gnuplot or matplotlib when one is
// installed. Drawing is best-effort: it never fails the run.
#pragma once

#include <cstdio>
#include <string>

#include "core/log.h"
#include "model/trainer.h"

namespace nn::tool {

// "<results without .nc><suffix>": net.nc + ".epochs.jsonl" -> net.epochs.jsonl.
std::string beside_results(const std::string& results, const std::string& suffix);

// One JSON object per line: {"epoch":3,"loss":..,"data_loss":..,"reg_loss":..,
// "examples_per_second":..,"seconds":..,"alpha":..,"validation":{"recall@10":..,...}}
// ("validation" only on epochs that were evaluated).
std::string epoch_record(const EpochReport& r);

class EpochLog {
 public:
  // Writes to `path`, opened at the first record (so processes that never write, such as the
  // other ranks of a data-parallel run, leave it alone); `append` keeps earlier records (a
  // resumed run).
  EpochLog(const std::string& path, bool append);
  // Unless commit() was called, puts the file back as it was: a log this run created is
  // removed, an appended one cut back to its old length (a failed run changes nothing on disk).
  ~EpochLog();
  EpochLog(const EpochLog&) = delete;
  EpochLog& operator=(const EpochLog&) = delete;
  // Appends one record and flushes it. The log is secondary to the run: when the file cannot be
  // written (a full disk), it is put back as it was, later records are dropped, and the reason
  // is returned (otherwise "").
  std::string write(const EpochReport& r);
  // The run succeeded: keep the file.
  void commit();
  const std::string& path() const { return path_; }

 private:
  void restore();
  std::string path_;
  bool append_ = false, opened_ = false, failed_ = false, committed_ = false;
  long original_size_ = -1;  // appending: the file's length before this run (-1: none)
  std::FILE* file_ = nullptr;
};

// Draws the loss (and validation metric, when the log has one) per epoch from a log written by
// EpochLog into `png`. Returns true when the picture was written; otherwise logs one line saying
// why not (no gnuplot or matplotlib, or the plotter failed) and returns false.
bool plot_epoch_log(const std::string& log_path, const std::string& png, const LogSink& log);

}  // namespace nn::tool
