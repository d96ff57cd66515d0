// train/tensorboard_log: the event file's records (file version, hyper-parameters, epoch and
// minibatch scalars, the end of the run), a resumed run that keeps what its checkpoint holds and
// drops the rest (continuing the same file when nothing is dropped), a file removed under the
// writer written whole again, a failed append cut back to its last whole record, and the bound
// on minibatch records. TensorBoard's own reader is checked against nn-train's output by
// tests/tools/train_tensorboard.sh.
#include "train/tensorboard_log.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.h"
#include "core/test_util.h"
#include "train/tf_record.h"

namespace nn {
namespace {

using test::ScratchDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<ParsedEvent> events_of(const std::string& path) {
  const std::string bytes = slurp(path);
  const RecordScan scan = scan_records(bytes);
  EXPECT_EQ(scan.valid_bytes, bytes.size()) << path << " ends in a torn record";
  std::vector<ParsedEvent> out;
  for (std::string_view p : scan.payloads) {
    const std::optional<ParsedEvent> e = parse_event(p);
    EXPECT_TRUE(e.has_value());
    if (e) out.push_back(*e);
  }
  return out;
}

// "e<step>" for an epoch record, "m<step>" for a minibatch record, "-" for the others.
std::string steps_of(const std::string& path) {
  std::string out;
  for (const ParsedEvent& e : events_of(path)) {
    if (!out.empty()) out += ' ';
    if (e.kind != ParsedEvent::Kind::Scalars)
      out += '-';
    else
      out += (e.scalars[0].tag.rfind("minibatch/", 0) == 0 ? "m" : "e") + std::to_string(e.step);
  }
  return out;
}

EpochReport epoch(uint64_t n) {
  EpochReport r;
  r.epoch = n;
  r.data_loss = 1.0 / double(n);
  r.reg_loss = 0.01;
  r.loss = r.data_loss + r.reg_loss;
  r.seconds = 2.5;
  r.examples_per_second = 400;
  r.alpha = 0.025;
  return r;
}

MinibatchReport minibatch(uint64_t step) {
  MinibatchReport m;
  m.step = step;
  m.loss = 0.5;
  m.alpha = 0.025;
  m.examples_per_second = 1000;
  return m;
}

const std::vector<HyperParameter> kHParams = {
    {"optimizer", std::string("Adam")}, {"alpha", 0.025}, {"shuffle", true}};

uint64_t inode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return uint64_t(st.st_ino);
}

TEST(TensorBoardLog, WritesHeaderEpochsMinibatchesAndTheEnd) {
  ScratchDir dir;
  const std::string tb = dir.path() + "/runs/a";  // created with its parent
  TensorBoardLog log(tb, kHParams, nullptr, null_log());
  EXPECT_EQ(log.path(), tb + "/events.out.tfevents.nn-train");
  EpochReport first = epoch(1);
  first.validated = true;
  first.validation.values = {{"recall@10", 0.25}, {"ndcg@10", 0.125}};
  log.write_minibatch(minibatch(5));
  log.write_epoch(first);
  log.write_epoch(epoch(2));
  log.finish(true);
  const std::vector<ParsedEvent> events = events_of(log.path());
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[0].kind, ParsedEvent::Kind::FileVersion);
  EXPECT_EQ(events[1].kind, ParsedEvent::Kind::Other);  // hparams: checked by TensorBoard's reader
  EXPECT_EQ(steps_of(log.path()), "- - m5 e1 e2 -");
  const ParsedEvent& e1 = events[3];
  std::vector<std::string> tags;
  for (const TensorBoardScalar& s : e1.scalars) tags.push_back(s.tag);
  EXPECT_EQ(tags, (std::vector<std::string>{"train/loss", "train/data_loss", "train/reg_loss",
                                            "train/learning_rate", "train/examples_per_second",
                                            "train/epoch_seconds", "validation/recall@10",
                                            "validation/ndcg@10"}));
  EXPECT_EQ(e1.scalars[0].value, float(first.loss));
  EXPECT_EQ(e1.scalars[3].value, 0.025f);
  EXPECT_EQ(e1.scalars[6].value, 0.25f);
  EXPECT_EQ(events[2].scalars[0].tag, "minibatch/loss");
  // The hyper-parameters' names are in the plugin's record.
  const std::string bytes = slurp(log.path());
  for (const char* part : {"hparams", "_hparams_/session_start_info", "optimizer", "Adam"})
    EXPECT_NE(bytes.find(part), std::string::npos) << part;
}

TEST(TensorBoardLog, FreshRunReplacesAnOldFile) {
  ScratchDir dir;
  {
    TensorBoardLog log(dir.path(), kHParams, nullptr, null_log());
    log.write_epoch(epoch(1));
    log.write_epoch(epoch(2));
  }
  TensorBoardLog again(dir.path(), kHParams, nullptr, null_log());
  EXPECT_EQ(steps_of(again.path()), "- -");
}

TEST(TensorBoardLog, ResumeKeepsWhatTheCheckpointHoldsAndDropsTheRest) {
  ScratchDir dir;
  std::string path;
  {
    TensorBoardLog log(dir.path(), kHParams, nullptr, null_log());
    path = log.path();
    for (uint64_t e = 1; e <= 4; ++e) {
      log.write_minibatch(minibatch(e * 10 - 5));
      log.write_minibatch(minibatch(e * 10));
      log.write_epoch(epoch(e));
    }
    log.finish(true);
  }
  // Resumed from the checkpoint after epoch 2 (update 20): epochs 3 and 4 run again.
  const TensorBoardResume at{2, 20};
  TensorBoardLog resumed(dir.path(), kHParams, &at, null_log());
  EXPECT_EQ(steps_of(path), "- - m5 m10 e1 m15 m20 e2");
  resumed.write_minibatch(minibatch(25));
  resumed.write_epoch(epoch(3));
  EXPECT_EQ(steps_of(path), "- - m5 m10 e1 m15 m20 e2 m25 e3");
  // Mid-epoch (stopped after update 17 of epoch 2): epoch 2 and update 20 are dropped.
  const TensorBoardResume mid{1, 17};
  TensorBoardLog stopped(dir.path(), kHParams, &mid, null_log());
  EXPECT_EQ(steps_of(path), "- - m5 m10 e1 m15");
}

TEST(TensorBoardLog, ResumeWithNothingToDropGrowsTheSameFile) {
  ScratchDir dir;
  std::string path;
  {
    TensorBoardLog log(dir.path(), kHParams, nullptr, null_log());
    path = log.path();
    log.write_epoch(epoch(1));
    log.write_epoch(epoch(2));
  }
  const std::string before = slurp(path);
  const uint64_t inode = inode_of(path);
  {
    std::ofstream torn(path, std::ios::binary | std::ios::app);
    torn << frame_record("a record cut short").substr(0, 9);  // a writer killed mid-append
  }
  const TensorBoardResume at{2, 0};
  TensorBoardLog resumed(dir.path(), kHParams, &at, null_log());
  EXPECT_EQ(slurp(path), before);    // the torn tail is gone; the rest is byte for byte the same
  EXPECT_EQ(inode_of(path), inode);  // the same file: a running TensorBoard follows on
  resumed.write_epoch(epoch(3));
  EXPECT_EQ(steps_of(path), "- - e1 e2 e3");
  EXPECT_EQ(inode_of(path), inode);
  // Other hyper-parameters: the header changes, so the file is written anew (the same steps).
  TensorBoardLog changed(dir.path(), {{"alpha", 0.5}}, &at, null_log());
  EXPECT_EQ(steps_of(path), "- - e1 e2");
}

TEST(TensorBoardLog, AFileRemovedUnderTheWriterIsWrittenWholeAgain) {
  ScratchDir dir;
  TensorBoardLog log(dir.path(), kHParams, nullptr, null_log());
  log.write_epoch(epoch(1));
  std::filesystem::remove(log.path());
  log.write_epoch(epoch(2));
  EXPECT_EQ(steps_of(log.path()), "- - e1 e2");
}

// Limits the size of files this process may write while it lives (write() then fails with
// EFBIG instead of raising SIGXFSZ).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
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

TEST(TensorBoardLog, AFailedAppendIsCutBackToTheLastWholeRecord) {
  ScratchDir dir;
  TensorBoardLog log(dir.path(), kHParams, nullptr, null_log());
  log.write_epoch(epoch(1));
  const std::string before = slurp(log.path());
  std::string message;
  {
    FileSizeLimit limit(before.size() + 20);  // room for part of the next record only
    message = test::error_of<IoError>([&] { log.write_epoch(epoch(2)); });
  }
  EXPECT_CONTAINS(message, log.path() + ": write failed: File too large");
  EXPECT_CONTAINS(message, "cut back to its last whole record");
  EXPECT_EQ(slurp(log.path()), before);
  log.write_epoch(epoch(2));  // with room again, the log goes on
  EXPECT_EQ(steps_of(log.path()), "- - e1 e2");
}

TEST(TensorBoardLog, MinibatchRecordsAreBounded) {
  ScratchDir dir;
  std::vector<std::string> lines;
  const LogSink sink = [&](const std::string& l) { lines.push_back(l); };
  {
    TensorBoardLog log(dir.path(), kHParams, nullptr, sink, 3);
    for (uint64_t s = 1; s <= 5; ++s) log.write_minibatch(minibatch(s));
    log.write_epoch(epoch(1));
    EXPECT_EQ(steps_of(log.path()), "- - m1 m2 m3 e1");
  }
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_CONTAINS(lines[0], "3 minibatch records written, the most one file holds");
  // A resumed run counts the records it keeps.
  const TensorBoardResume at{1, 5};
  TensorBoardLog resumed(dir.path(), kHParams, &at, sink, 3);
  resumed.write_minibatch(minibatch(6));
  EXPECT_EQ(steps_of(resumed.path()), "- - m1 m2 m3 e1");
}

TEST(TensorBoardLog, ADirectoryThatCannotBeMadeIsAnIoError) {
  ScratchDir dir;
  const std::string file = dir.write("plain", "x");
  const std::string message = test::error_of<IoError>(
      [&] { TensorBoardLog log(file + "/sub", kHParams, nullptr, null_log()); });
  EXPECT_CONTAINS(message, file + "/sub: cannot create the directory");
}

}  // namespace
}  // namespace nn
