// core/file_identity: one file is recognised however it is named (relative and absolute
// spellings of files that do not exist yet, "..", symbolic and hard links), and the output check
// names both options; special files and standard streams follow their own rules.
#include "core/file_identity.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "core/test_util.h"

namespace nn {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::ScratchDir;

// Runs the test body inside a scratch directory, so relative names are relative to it.
class InScratchDir {
 public:
  InScratchDir() : old_(fs::current_path()) { fs::current_path(dir_.path()); }
  ~InScratchDir() { fs::current_path(old_); }
  const ScratchDir& dir() const { return dir_; }

 private:
  ScratchDir dir_;
  fs::path old_;
};

TEST(FileIdentity, SpellingsOfAFileThatDoesNotExistYet) {
  InScratchDir here;
  fs::create_directory("sub");
  EXPECT_TRUE(same_file("x.idx", "./x.idx"));  // the case weakly_canonical alone misses
  EXPECT_TRUE(same_file("x.idx", here.dir().path() + "/x.idx"));
  EXPECT_TRUE(same_file("sub/../x.idx", "x.idx"));
  EXPECT_TRUE(same_file("nosuchdir/../x.idx", "x.idx"));
  EXPECT_FALSE(same_file("x.idx", "sub/x.idx"));
  EXPECT_FALSE(same_file("x.idx", "y.idx"));
}

TEST(FileIdentity, LinksToAnExistingFile) {
  InScratchDir here;
  here.dir().write("data.nc", "data");
  fs::create_symlink("data.nc", "soft.nc");
  fs::create_hard_link("data.nc", "hard.nc");
  fs::create_directory("d");
  fs::create_directory_symlink("d", "dlink");
  EXPECT_TRUE(same_file("data.nc", "soft.nc"));
  EXPECT_TRUE(same_file("hard.nc", "./data.nc"));
  EXPECT_TRUE(same_file("dlink/new.idx", "d/new.idx"));  // a linked directory, a new file
  EXPECT_FALSE(same_file("data.nc", "other.nc"));
}

TEST(FileIdentity, StandardStreams) {
  EXPECT_TRUE(same_file("-", "-"));
  EXPECT_FALSE(same_file("-", "./-"));
}

TEST(FileIdentity, TwoOutputsNamingOneFileAreRefusedWithBothOptions) {
  InScratchDir here;
  const std::string message = error_of<ArgumentError>([] {
    check_distinct_files({{"-o", "d.nc"}, {"-f", "x.idx"}, {"-s", "./x.idx"}});
  });
  EXPECT_EQ(message,
            "-f x.idx and -s ./x.idx name the same file; each output needs a file of its own");
}

TEST(FileIdentity, AnOutputNamingAnInputIsRefused) {
  InScratchDir here;
  here.dir().write("r.txt", "u1\ta:b\n");
  const std::string message = error_of<ArgumentError>([] {
    check_distinct_files({{"-o", "./r.txt"}}, {{"-i", "r.txt"}});
  });
  EXPECT_EQ(message,
            "-o ./r.txt names the same file as the input -i r.txt, which it would replace; "
            "write the output to another file");
}

TEST(FileIdentity, SpecialFilesEmptyNamesAndStandardInputPass) {
  InScratchDir here;
  EXPECT_NO_THROW(check_distinct_files(
      {{"-s", "/dev/null"}, {"--dump", "/dev/null"}, {"-x", ""}, {"-y", ""}, {"-o", "-"}},
      {{"-r", "-"}, {"-n", "/dev/null"}}));
  EXPECT_CONTAINS(error_of<ArgumentError>([] {
                    check_distinct_files({{"-s", "-"}, {"--dump", "-"}});
                  }),
                  "-s and --dump both name standard output");
}

}  // namespace
}  // namespace nn
