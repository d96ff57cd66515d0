// The checkpoint files of a training run on disk: their names, which ones a resumed run can
// continue from (newest first), and how a divergence message names the one to go back to.
//
// Names, for a checkpoint prefix P (CDL CheckpointName; nn-train -n net.nc gives P = "net"):
//   P<E>.nc      after epoch E (DSSTNE's name: P + epoch + ".nc")
//   P<E>_<B>.nc  a run stopped by a signal in epoch E + 1 after its minibatch B
//   P.nc<E>.nc   after epoch E, as nn-train named them when P was still "net.nc" (read only)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nn {

struct CheckpointFile {
  std::string path;    // spelled as the prefix was given ("ck" -> "ck3.nc", "dir/ck" -> "dir/...")
  uint64_t epoch = 0;  // epochs completed
  uint64_t batch = 0;  // minibatches of the next epoch completed (stopped mid-epoch), else 0
  bool old_name = false;  // P.nc<E>.nc
};

// "<name><epoch>.nc", or "<name><epoch>_<batch>.nc" when batch > 0.
std::string checkpoint_file_name(const std::string& name, uint64_t epoch, uint64_t batch = 0);

// Every checkpoint of prefix `name` on disk, newest first (by epoch, then minibatch; of two names
// for one state the current one first). Empty when there is none or the directory is unreadable.
std::vector<CheckpointFile> list_checkpoints(const std::string& name);

// Newest checkpoint's path ("" when there is none); *epoch (when given) receives its epoch.
std::string newest_checkpoint(const std::string& checkpoint_name, uint64_t* epoch = nullptr);

// The training loop's divergence message with its generic checkpoint remark replaced by the
// checkpoint to go back to (`checkpoint`: the last one written or resumed from; "" when none).
std::string with_checkpoint_note(std::string message, const std::string& checkpoint);

}  // namespace nn
