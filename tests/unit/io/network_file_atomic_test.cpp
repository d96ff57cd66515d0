// Atomic writing: a failed write leaves no partial file and no temporary file, and never damages
// a good file already at the target path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "io/model_io_test_support.h"
#include "io/network_file.h"

namespace nn::test {
namespace {

namespace fs = std::filesystem;

TEST(NetworkFileAtomicWrite, MissingDirectoryThrowsAndCreatesNothing) {
  ScratchDir dir;
  const std::string path = dir.file("no/such/dir/net.nc");
  try {
    write_network_file(path, rich_network_file());
    FAIL() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.entries().empty());
}

TEST(NetworkFileAtomicWrite, NonWritableDirectoryThrowsAndLeavesNothing) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  ScratchDir dir;
  fs::create_directory(dir.file("locked"));
  fs::permissions(dir.file("locked"), fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THROW(write_network_file(dir.file("locked/net.nc"), rich_network_file()), IoError);
  fs::permissions(dir.file("locked"), fs::perms::owner_all);
  EXPECT_TRUE(fs::is_empty(dir.file("locked")));
}

TEST(NetworkFileAtomicWrite, FailedRenameRemovesTheTemporaryFile) {
  // The target is a directory: the whole file gets written, then the final rename fails.
  ScratchDir dir;
  fs::create_directory(dir.file("net.nc"));
  try {
    write_network_file(dir.file("net.nc"), rich_network_file());
    FAIL() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("into place"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"net.nc"});
  EXPECT_TRUE(fs::is_directory(dir.file("net.nc")));
}

TEST(NetworkFileAtomicWrite, FailedWriteKeepsTheOldFile) {
  ScratchDir dir;
  const std::string path = dir.file("net.nc");
  const NetworkFile good = rich_network_file();
  write_network_file(path, good);
  const std::string before = read_file_bytes(path);

  NetworkFile bad = conv_network_file();
  bad.weights[1].weights[3] = NAN;
  EXPECT_THROW(write_network_file(path, bad), DataError);
  EXPECT_EQ(read_file_bytes(path), before);
  expect_same_network_file(good, read_network_file(path));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"net.nc"});
}

TEST(NetworkFileAtomicWrite, WritesIntoTheCurrentDirectoryForABareName) {
  ScratchDir dir;
  const fs::path previous = fs::current_path();
  fs::current_path(dir.path());
  try {
    write_network_file("bare.nc", conv_network_file());
    expect_same_network_file(conv_network_file(), read_network_file("bare.nc"));
  } catch (...) {
    fs::current_path(previous);
    throw;
  }
  fs::current_path(previous);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"bare.nc"});
}

}  // namespace
}  // namespace nn::test
