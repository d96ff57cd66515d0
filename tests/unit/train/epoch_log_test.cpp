// train/epoch_log: a resumed run keeps the records of the epochs its checkpoint holds and drops
// later ones (run again, they are recorded anew), so an epoch is never in the log twice.
#include "train/epoch_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "core/test_util.h"

namespace nn {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

EpochReport epoch(uint64_t n) {
  EpochReport r;
  r.epoch = n;
  r.loss = r.data_loss = 1.0 / double(n);
  r.alpha = 0.5;
  return r;
}

TEST(EpochLog, AResumedRunDropsTheEpochsAfterItsCheckpoint) {
  test::ScratchDir dir;
  const std::string path = dir.path() + "/net.epochs.jsonl";
  {
    EpochLog log(path, false);
    for (uint64_t e = 1; e <= 3; ++e) log.write(epoch(e));
  }
  // A hand-edited line that does not parse stays as it was.
  std::ofstream(path, std::ios::app) << "not json\n";
  EpochLog resumed(path, true, 1);
  resumed.write(epoch(2));
  EXPECT_EQ(slurp(path), epoch_record(epoch(1)) + "\nnot json\n" + epoch_record(epoch(2)) + "\n");
  // Without a checkpoint's epoch the records are all kept (appended to).
  EpochLog appended(path, true);
  appended.write(epoch(3));
  EXPECT_EQ(slurp(path), epoch_record(epoch(1)) + "\nnot json\n" + epoch_record(epoch(2)) + "\n" +
                             epoch_record(epoch(3)) + "\n");
}

}  // namespace
}  // namespace nn
