// The per-epoch log a training run writes beside its results for following and judging it: a
// JSON-lines file with one record per epoch, written as each epoch ends (so `tail -f` works), and
// the names of the files beside the results. train/loss_curve.h draws the picture from it.
#pragma once

#include <cstdint>
#include <string>

#include "train/training_loop.h"

namespace nn {

// "<results without .nc><suffix>": net.nc + ".epochs.jsonl" -> net.epochs.jsonl.
std::string beside_results(const std::string& results, const std::string& suffix);

// One JSON object per line: {"epoch":3,"loss":..,"data_loss":..,"reg_loss":..,
// "examples_per_second":..,"seconds":..,"alpha":..,"validation":{"recall@10":..,...}}
// ("validation" only on epochs that were evaluated).
std::string epoch_record(const EpochReport& r);

class EpochLog {
 public:
  // A log at `path`; `append` keeps the records already there of epochs up to `last_epoch` (a
  // resumed run: the epochs its checkpoint holds; later ones, of a run that went on after that
  // checkpoint, are run again and recorded anew). Nothing is written until the first epoch ends.
  EpochLog(const std::string& path, bool append, uint64_t last_epoch = UINT64_MAX);
  // Adds one record and atomically replaces the file with all records so far. Throws IoError
  // (with the operating system's reason) when the file cannot be written.
  void write(const EpochReport& r);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string content_;
};

}  // namespace nn
