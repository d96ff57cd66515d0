// The TensorBoard event file of a training run (`nn-train --tensorboard DIR`): one file,
// DIR/events.out.tfevents.nn-train, with the run's hyper-parameters (the hparams plugin's session
// record), every epoch's scalars at step = epoch (train/loss, train/data_loss, train/reg_loss,
// train/learning_rate, train/examples_per_second, train/epoch_seconds and validation/<metric>,
// the numbers of the JSON-lines epoch log), and, when asked for, minibatch scalars at step = the
// update's number (minibatch/loss, minibatch/learning_rate, minibatch/examples_per_second).
//
// The file is created whole through the atomic write path and then grows by whole records
// appended in place, so a running TensorBoard (which follows a file as it grows, but not a file
// replaced under it) shows each epoch as it ends. A failed append (full disk, file-size limit) is
// cut back to the last whole record before the error is thrown; a kill mid-append can leave a
// torn last record, which TensorBoard's reader skips and a resumed run removes.
//
// A resumed run keeps the records up to the epoch and update its checkpoint holds and drops the
// rest (the file is then rewritten atomically, unless nothing is dropped): the steps continue
// without duplicates. Bounded: one record per epoch, at most kMaxMinibatchPoints minibatch
// records (later ones are not written, and the log says so once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/log.h"
#include "train/tensorboard_event.h"
#include "train/training_loop.h"

namespace nn {

// Where a resumed run continues: the epochs and updates its checkpoint holds.
struct TensorBoardResume {
  uint64_t epoch = 0;
  uint64_t step = 0;
};

class TensorBoardLog {
 public:
  static constexpr const char* kFileName = "events.out.tfevents.nn-train";
  static constexpr size_t kMaxMinibatchPoints = 100000;

  // Creates `dir` (and its parents) when missing and writes the file's first records, the
  // hyper-parameters among them. `resume` null: a fresh run, whatever file is there is
  // replaced. Throws IoError with the operating system's reason.
  // `max_minibatch_points`: the bound (tests lower it).
  TensorBoardLog(const std::string& dir, const std::vector<HyperParameter>& hparams,
                 const TensorBoardResume* resume, LogSink log,
                 size_t max_minibatch_points = kMaxMinibatchPoints);

  void write_epoch(const EpochReport& r);
  void write_minibatch(const MinibatchReport& r);
  // The hparams plugin's end-of-run record (TensorBoard shows the run's status).
  void finish(bool success);

  // DIR/events.out.tfevents.nn-train.
  const std::string& path() const { return path_; }
  static std::string path_in(const std::string& dir);

 private:
  // Appends one event (framed) to the file; `sync`: flushed to stable storage.
  void append(const std::string& event, bool sync);

  std::string path_;
  std::string content_;  // the file's bytes as written (a rewrite needs them: bounded)
  size_t minibatch_points_ = 0, max_minibatch_points_;
  LogSink log_;
};

// The scalars of an epoch's report, as write_epoch() records them.
std::vector<TensorBoardScalar> epoch_scalars(const EpochReport& r);

}  // namespace nn
