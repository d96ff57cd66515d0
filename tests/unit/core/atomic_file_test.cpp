// core/atomic_file: outputs replace their target only when complete, report the OS reason on
// failure, never leave a temporary file, commit several files as one unit, and clear temporary
// files left by killed processes. Write failures come from RLIMIT_FSIZE ("File too large"),
// which needs no root and no special file system.
#include "core/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/test_util.h"

namespace nn {
namespace {

namespace fs = std::filesystem;
using test::error_of;
using test::ScratchDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Limits the size of files this process may write, for the lifetime of the object.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG
    ::getrlimit(RLIMIT_FSIZE, &old_);
    rlimit rl = old_;
    rl.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &rl);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_;
  sighandler_t old_handler_;
};

TEST(AtomicFile, CommitReplacesTheTargetAndLeavesNoTemporaryFile) {
  ScratchDir dir;
  const std::string target = dir.write("out.txt", "old");
  AtomicFile f(target);
  f.write("new ");
  f.write(std::string(200000, 'x'));  // beyond the buffer: written straight through
  EXPECT_EQ(slurp(target), "old");    // nothing visible before commit
  f.commit();
  EXPECT_EQ(slurp(target), "new " + std::string(200000, 'x'));
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"out.txt"});
}

// A block larger than the file's write pieces (8 MiB) goes through in several writes, between
// buffered small ones, and arrives whole and in order.
TEST(AtomicFile, BlocksLargerThanOneWriteArriveWholeAndInOrder) {
  ScratchDir dir;
  const std::string target = dir.path() + "/big.bin";
  std::string big(size_t(20) << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = char('a' + (i * 7919) % 26);
  big += "end";
  AtomicFile f(target);
  f.write("head ");
  f.write(big);
  f.write(" tail");
  f.commit();
  EXPECT_TRUE(slurp(target) == "head " + big + " tail") << "size " << fs::file_size(target);
}

// A FIFO (like /dev/null or a terminal) is not replaced by a rename: the bytes are spooled in
// TMPDIR and written into it at commit, and the FIFO stays a FIFO.
TEST(AtomicFile, SpecialFilesAreWrittenIntoNotReplaced) {
  ScratchDir dir;
  const std::string fifo = dir.path() + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // so the writer can open it
  ASSERT_GE(reader, 0);
  {
    AtomicFile f(fifo);
    f.write("through the pipe");
    f.commit();
  }
  struct stat st;
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced by a regular file";
  char buf[64] = {};
  const ssize_t n = ::read(reader, buf, sizeof buf);
  ::close(reader);
  EXPECT_EQ(std::string(buf, n > 0 ? size_t(n) : 0), "through the pipe");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"pipe"});  // no temporary file left
}

TEST(AtomicFile, WithoutCommitNothingChanges) {
  ScratchDir dir;
  const std::string target = dir.write("out.txt", "old");
  {
    AtomicFile f(target);
    f.write("partial");
  }
  EXPECT_EQ(slurp(target), "old");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFile, WriteFailureNamesTheFileAndTheReasonAndRemovesTheTemporaryFile) {
  ScratchDir dir;
  const std::string target = dir.write("out.txt", "old");
  std::string message;
  {
    FileSizeLimit limit(4096);
    message = error_of<IoError>([&] {
      AtomicFile f(target);
      f.write(std::string(100000, 'x'));
      f.commit();
    });
  }
  EXPECT_CONTAINS(message, target + ": write failed: File too large");
  EXPECT_CONTAINS(message, "removed");
  EXPECT_EQ(slurp(target), "old");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFile, CommitAllReplacesNoTargetWhenAnyFileFails) {
  ScratchDir dir;
  const std::string a = dir.write("a.txt", "old a"), b = dir.write("b.txt", "old b");
  std::string message;
  {
    FileSizeLimit limit(4096);
    message = error_of<IoError>([&] {
      AtomicFile fa(a), fb(b);
      fa.write("new a");                   // fits
      fb.write(std::string(100000, 'x'));  // does not
      commit_all({&fa, &fb});
    });
  }
  EXPECT_CONTAINS(message, b + ": write failed: File too large");
  EXPECT_EQ(slurp(a), "old a");
  EXPECT_EQ(slurp(b), "old b");
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"a.txt", "b.txt"}));
}

TEST(AtomicFile, CommitAllRefusesTwoOutputsNamingOneFile) {
  ScratchDir dir;
  const std::string a = dir.write("a.idx", "old a");
  const std::string other_spelling = dir.path() + "/./a.idx";
  const std::string message = error_of<IoError>([&] {
    AtomicFile f1(a), f2(other_spelling);
    f1.write("features");
    f2.write("samples");
    commit_all({&f1, &f2});
  });
  EXPECT_CONTAINS(message, a + " and output " + other_spelling + " name the same file");
  EXPECT_EQ(slurp(a), "old a");
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"a.idx"}));
}

TEST(AtomicFile, MissingDirectoryIsNamed) {
  ScratchDir dir;
  const std::string target = dir.path() + "/no/such/out.txt";
  EXPECT_CONTAINS(error_of<IoError>([&] { AtomicFile f(target); }),
                  target + ": cannot write: directory '" + dir.path() + "/no/such' does not exist");
}

TEST(AtomicFile, ReadOnlyDirectoryReportsTheReason) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  ScratchDir dir;
  fs::create_directory(dir.path() + "/ro");
  fs::permissions(dir.path() + "/ro", fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_CONTAINS(error_of<IoError>([&] { AtomicFile f(dir.path() + "/ro/out.txt"); }),
                  "Permission denied");
  fs::permissions(dir.path() + "/ro", fs::perms::owner_all);
}

// A pid that no longer names a process: a child that has exited and been reaped.
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(AtomicFile, StaleTemporaryFilesOfDeadProcessesAreRemoved) {
  ScratchDir dir;
  const std::string dead = "." + std::string("out.nc.tmp.") + std::to_string(dead_pid()) + ".0";
  const std::string live = ".out.nc.tmp." + std::to_string(::getpid()) + ".99";
  dir.write(dead, "killed mid-write");
  dir.write(live, "being written by this process");
  dir.write(".other.nc.tmp.1.0", "another target's");
  AtomicFile f(dir.path() + "/out.nc");  // clears stale ones of its target
  f.write("x");
  f.commit();
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{".other.nc.tmp.1.0", live, "out.nc"}));
}

TEST(AtomicFile, StaleCheckpointTemporariesAreFoundByPrefix) {
  ScratchDir dir;
  const std::string pid = std::to_string(dead_pid());
  dir.write(".ck7.nc.tmp." + pid + ".3", "");
  dir.write(".ck12.nc.tmp." + pid + ".4", "");
  dir.write(".other.nc.tmp." + pid + ".0", "");
  dir.write("ck7.nc", "a checkpoint");
  const auto removed = remove_stale_temp_files(dir.path() + "/ck", /*any_target=*/true);
  EXPECT_EQ(removed.size(), 2u);
  EXPECT_EQ(entries(dir.path()),
            (std::vector<std::string>{".other.nc.tmp." + pid + ".0", "ck7.nc"}));
}

// While it is written, the temporary file has no name (O_TMPFILE): a process killed then, even by
// SIGKILL, leaves nothing in the directory. A child writes and then dies without cleaning up.
TEST(AtomicFile, AKilledWriterLeavesNothingBehind) {
  ScratchDir dir;
  const std::string target = dir.path() + "/out.nc";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    AtomicFile f(target);
    f.write(std::string(100000, 'x'));
    f.finish();
    ::_exit(f.unnamed() ? 0 : 1);  // no destructor, no commit: as after SIGKILL
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WEXITSTATUS(status) == 1) GTEST_SKIP() << "no O_TMPFILE on " << dir.path();
  EXPECT_TRUE(entries(dir.path()).empty());
}

// Named temporary files (file systems without O_TMPFILE, or another program's spool) are
// registered, and remove_live_temp_files() unlinks them (what the tools' second-signal handler
// calls).
TEST(AtomicFile, LiveTemporaryFilesAreRemovedOnRequest) {
  ScratchDir dir;
  const std::string spool = dir.write(".spool.tmp.1.0", "partial");
  const int slot = register_temp_file(spool);
  ASSERT_GE(slot, 0);
  remove_live_temp_files();
  EXPECT_TRUE(entries(dir.path()).empty());
  unregister_temp_file(slot);
  dir.write("kept", "x");
  remove_live_temp_files();  // unregistered: nothing else is touched
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"kept"});
}

// A stream target's spool in TMPDIR is as invisible as an output's temporary file.
TEST(AtomicFile, StandardOutputSpoolLeavesNoFileInTmpdir) {
  ScratchDir dir;
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", dir.path().c_str(), 1);
  {
    AtomicFile f(kStandardOutput);
    f.write("");
    if (f.unnamed()) EXPECT_TRUE(entries(dir.path()).empty());
    f.discard();
  }
  EXPECT_TRUE(entries(dir.path()).empty());
  if (old)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
}

}  // namespace
}  // namespace nn
