// train/checkpoint_files: which files count as checkpoints of a prefix, and their order (newest
// first): epoch checkpoints, checkpoints of stopped runs (mid-epoch), and the names nn-train
// gave them before "-n net.nc" meant the prefix "net".
#include "train/checkpoint_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/data_test_util.h"

namespace nn {
namespace {

using test::TempDir;

TEST(CheckpointFiles, Names) {
  EXPECT_EQ(checkpoint_file_name("net", 4), "net4.nc");
  EXPECT_EQ(checkpoint_file_name("dir/ck", 3, 17), "dir/ck3_17.nc");
}

TEST(CheckpointFiles, NewestFirstWithStoppedRunsAndOldNames) {
  TempDir dir;
  for (const char* name :
       {"net2.nc", "net4.nc", "net4_3.nc", "net.nc6.nc", "net6.nc", "net.nc", "net.epochs.jsonl",
        "net4_0.nc", "net_3.nc", "netx2.nc", "other3.nc", "net3_x.nc", "net.nc1.nc"})
    std::ofstream(dir.file(name)) << "x";
  std::filesystem::create_directory(dir.file("net9.nc"));  // a directory is no checkpoint
  const std::vector<CheckpointFile> all = list_checkpoints(dir.file("net"));
  std::vector<std::string> names;
  for (const CheckpointFile& f : all) names.push_back(f.path.substr(dir.path().size() + 1));
  EXPECT_EQ(names, (std::vector<std::string>{"net6.nc", "net.nc6.nc", "net4_3.nc", "net4.nc",
                                             "net2.nc", "net.nc1.nc"}));
  EXPECT_EQ(all[2].epoch, 4u);
  EXPECT_EQ(all[2].batch, 3u);
  EXPECT_TRUE(all[1].old_name);
  uint64_t epoch = 0;
  EXPECT_EQ(newest_checkpoint(dir.file("net"), &epoch), dir.file("net6.nc"));
  EXPECT_EQ(epoch, 6u);
  EXPECT_TRUE(list_checkpoints(dir.file("missing")).empty());
}

}  // namespace
}  // namespace nn
