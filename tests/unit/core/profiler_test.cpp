// core/profiler and core/profile_report on a clock the test drives: ranges sum per phase and
// label, nested ranges are no share of their own, shares of the step add up to 100%, marks the
// clock has not completed wait (a device still working) and only an epoch's end waits for
// them, the trace keeps the first steps of each epoch up to a cap, is valid Chrome trace JSON,
// and is written atomically.
#include "core/profiler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/profile_report.h"
#include "core/test_util.h"

namespace nn {
namespace {

// Marks take the time `now` at the call; `ready` of them are complete (a device that lags),
// the rest only when collect() waits.
struct FakeClockState {
  double now = 0;
  size_t ready = SIZE_MAX;
  std::vector<double> marks;  // recorded, not yet collected
  std::vector<std::string> opened;
  int waits = 0, polls = 0;
};

class FakeClock final : public ProfileClock {
 public:
  explicit FakeClock(FakeClockState& s) : s_(s) {}
  void open(const char* name) noexcept override {
    s_.opened.push_back(name);
    s_.marks.push_back(s_.now);
  }
  void close() noexcept override { s_.marks.push_back(s_.now); }
  void collect(bool wait, std::vector<double>& times) override {
    ++(wait ? s_.waits : s_.polls);
    const size_t n = wait ? s_.marks.size() : std::min(s_.ready, s_.marks.size());
    times.insert(times.end(), s_.marks.begin(), s_.marks.begin() + long(n));
    s_.marks.erase(s_.marks.begin(), s_.marks.begin() + long(n));
    if (!wait) s_.ready -= std::min(s_.ready, n);
  }
  const char* description() const override { return "test clock"; }

 private:
  FakeClockState& s_;
};

// One step of 10 us: data 1, forward A 2 and B 3, update A 1, and 3 us outside any range.
void step(Profiler& p, FakeClockState& c, uint64_t number, uint64_t epoch) {
  p.begin_step(number, epoch);
  auto range = [&](ProfilePhase phase, const char* label, double us) {
    p.open(phase, label);
    c.now += us;
    p.close();
  };
  range(ProfilePhase::Data, "wait for batch", 1);
  range(ProfilePhase::Forward, "A", 2);
  range(ProfilePhase::Forward, "B", 3);
  c.now += 3;
  range(ProfilePhase::Update, "A", 1);
  p.end_step();
}

// A profiler on a FakeClock of `c` after `steps` steps of epoch 1 (0.1 ms of wall time), the
// end of that epoch and finish(); `trace`: keeping events.
std::unique_ptr<Profiler> one_epoch(FakeClockState& c, int steps, bool trace = false) {
  ProfilerOptions o;
  o.trace = trace;
  auto p = std::make_unique<Profiler>(std::make_unique<FakeClock>(c), o);
  for (int s = 1; s <= steps; ++s) step(*p, c, uint64_t(s), 1);
  p->end_epoch(1e-4);
  p->finish();
  return p;
}

std::map<std::string, double> totals_by_name(const Profiler& p) {
  std::map<std::string, double> out;
  for (const ProfileTotal& t : p.totals()) out[p.key(t.key).name] = t.microseconds;
  return out;
}

TEST(Profiler, SumsRangesPerPhaseAndLabel) {
  FakeClockState c;
  const auto profiler = one_epoch(c, 4);
  const Profiler& p = *profiler;
  // The first of the 4 steps is left out of the sums (a run's one-time set-up).
  EXPECT_EQ(p.all_steps(), 4u);
  EXPECT_EQ(p.steps(), 3u);
  EXPECT_EQ(p.epochs(), 1u);
  EXPECT_DOUBLE_EQ(p.step_microseconds(), 30);
  EXPECT_DOUBLE_EQ(p.first_step_microseconds(), 10);
  EXPECT_DOUBLE_EQ(p.covered_microseconds(), 21);
  const auto t = totals_by_name(p);
  EXPECT_DOUBLE_EQ(t.at("data wait for batch"), 3);
  EXPECT_DOUBLE_EQ(t.at("forward A"), 6);
  EXPECT_DOUBLE_EQ(t.at("forward B"), 9);
  EXPECT_DOUBLE_EQ(t.at("update A"), 3);
  // Report order: by phase, then as first seen.
  std::vector<std::string> order;
  for (const ProfileTotal& x : p.totals()) order.push_back(p.key(x.key).name);
  EXPECT_EQ(order, (std::vector<std::string>{"data wait for batch", "forward A", "forward B",
                                             "update A"}));
  // The clock is told each range's name (NVTX on CUDA).
  EXPECT_EQ(c.opened[0], "step");
  EXPECT_EQ(c.opened[2], "forward A");
}

// A first step slowed by one-time set-up (a GPU loading kernels) does not swamp the table: it
// is said on a line of its own; the time per step and the rows are the later steps'. A run of
// one step keeps it.
TEST(Profiler, TheFirstStepIsLeftOutOfTheTable) {
  FakeClockState c;
  Profiler p(std::make_unique<FakeClock>(c));
  p.begin_step(7, 1);  // a resumed run: its first step is number 7
  p.open(ProfilePhase::Forward, "A");
  c.now += 1000;
  p.close();
  p.end_step();
  for (uint64_t s = 8; s <= 10; ++s) step(p, c, s, 1);
  p.end_epoch(0.01);
  p.finish();
  EXPECT_EQ(p.steps(), 3u);
  EXPECT_DOUBLE_EQ(p.first_step_microseconds(), 1000);
  EXPECT_DOUBLE_EQ(p.step_microseconds(), 30);
  EXPECT_DOUBLE_EQ(totals_by_name(p).at("forward A"), 6);
  const auto lines = profile_table(p, {0, 1, "cpu"});
  ASSERT_GE(lines.size(), 3u);
  EXPECT_CONTAINS(lines[0], "4 steps in 1 epoch(s), 0.010 ms per step; the steps took 10.3% of");
  EXPECT_CONTAINS(lines[1], "the run's first step took 1.000 ms and is left out");
  for (const std::string& line : lines)
    if (line.find("forward        A ") != std::string::npos)
      EXPECT_CONTAINS(line, "0.006      0.002");

  // A caller that warmed up with untimed steps of its own keeps every timed step.
  FakeClockState c2;
  ProfilerOptions keep;
  keep.leave_out_first_step = false;
  Profiler all(std::make_unique<FakeClock>(c2), keep);
  for (uint64_t s = 1; s <= 3; ++s) step(all, c2, s, 1);
  all.end_epoch(0.01);
  all.finish();
  EXPECT_EQ(all.steps(), 3u);
  EXPECT_DOUBLE_EQ(all.first_step_microseconds(), 0);
  EXPECT_DOUBLE_EQ(all.step_microseconds(), 30);

  FakeClockState c1;
  const auto single = one_epoch(c1, 1);
  EXPECT_EQ(single->steps(), 1u);
  EXPECT_DOUBLE_EQ(single->first_step_microseconds(), 0);
  EXPECT_DOUBLE_EQ(single->step_microseconds(), 10);
}

TEST(Profiler, TableSharesAddUpToTheStep) {
  FakeClockState c;
  const auto profiler = one_epoch(c, 2);
  const Profiler& p = *profiler;
  const auto lines = profile_table(p, {0, 1, "cpu"});
  ASSERT_GE(lines.size(), 8u);
  EXPECT_CONTAINS(lines[0],
                  "profile: cpu backend (test clock): 2 steps in 1 epoch(s), 0.010 ms "
                  "per step; the steps took 20.0% of the epochs' 0.1 ms");
  double shares = 0;
  bool other = false, step_row = false;
  for (const std::string& line : lines) {
    EXPECT_EQ(line.rfind("profile: ", 0), 0u) << line;
    if (&line == &lines[0] || line.find("(all)") != std::string::npos || line.back() != '%' ||
        line.find("profile: step") == 0)
      continue;
    shares += std::stod(line.substr(line.rfind(' ', line.size() - 2) + 1));
    other = other || line.find("profile: other          between the ranges") == 0;
  }
  for (const std::string& line : lines)
    step_row =
        step_row || (line.find("profile: step") == 0 && line.find("100.0%") != std::string::npos);
  EXPECT_NEAR(shares, 100.0, 0.3);  // rounded to 0.1% each
  EXPECT_TRUE(other) << "no 'other' row";
  EXPECT_TRUE(step_row) << "no step row at 100%";
  const std::string all = [&] {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  }();
  EXPECT_CONTAINS(all, "forward        (all)");  // two forward rows: a phase total too
  EXPECT_CONTAINS(all, "30.0%");                 // forward B: 3 of 10 us
}

TEST(Profiler, NestedRangesAreNoShareOfTheirOwn) {
  FakeClockState c;
  Profiler p(std::make_unique<FakeClock>(c));
  p.begin_step(1, 1);
  p.open(ProfilePhase::Backward, "Output");
  c.now += 4;
  p.open(ProfilePhase::Communication, "inner");
  c.now += 1;
  p.close();
  p.close();
  p.end_step();
  p.finish();
  EXPECT_DOUBLE_EQ(p.covered_microseconds(), 5);
  for (const ProfileTotal& t : p.totals())
    EXPECT_EQ(t.top_level, p.key(t.key).label == "Output") << p.key(t.key).name;
  std::string all;
  for (const auto& l : profile_table(p, {0, 1, "cpu"})) all += l + "\n";
  EXPECT_CONTAINS(all, "inner (within another range)");
}

TEST(Profiler, WaitsForTheDeviceOnlyWhenAsked) {
  FakeClockState c;
  c.ready = 0;  // the device has done nothing yet
  Profiler p(std::make_unique<FakeClock>(c));
  for (uint64_t s = 1; s <= 500; ++s) step(p, c, s, 1);  // 10 marks a step: past the poll limit
  EXPECT_EQ(c.waits, 0);
  EXPECT_GT(c.polls, 0);       // asked without waiting...
  EXPECT_EQ(p.steps(), 500u);  // ...and got nothing: no step resolved yet
  EXPECT_EQ(p.step_microseconds(), 0);
  c.ready = 6000;  // half the marks complete
  step(p, c, 501, 1);
  for (uint64_t s = 502; s <= 1000; ++s) step(p, c, s, 1);
  EXPECT_EQ(c.waits, 0);
  EXPECT_GT(p.step_microseconds(), 0);
  p.end_epoch(1);
  EXPECT_EQ(c.waits, 1);
  // Every step resolved: the first (10 us) is left out of the sums.
  EXPECT_EQ(p.steps(), 999u);
  EXPECT_DOUBLE_EQ(p.first_step_microseconds(), 10);
  EXPECT_DOUBLE_EQ(p.step_microseconds(), 9990);
  EXPECT_DOUBLE_EQ(totals_by_name(p).at("forward B"), 2997);
}

TEST(Profiler, TraceKeepsTheFirstStepsOfEachEpochUpToACap) {
  FakeClockState c;
  ProfilerOptions o;
  o.trace = true;
  o.trace_steps = 3;
  Profiler p(std::make_unique<FakeClock>(c), o);
  uint64_t n = 0;
  for (uint64_t e = 1; e <= 2; ++e) {
    for (int s = 0; s < 5; ++s) step(p, c, ++n, e);
    p.end_epoch(1);
  }
  p.finish();
  // 3 steps of each epoch, 5 events each (the step and its 4 ranges).
  ASSERT_EQ(p.events().size(), 30u);
  std::set<uint64_t> steps;
  for (const ProfileEvent& e : p.events()) steps.insert(e.step);
  EXPECT_EQ(steps, (std::set<uint64_t>{1, 2, 3, 6, 7, 8}));
  EXPECT_EQ(p.dropped_events(), 0u);

  FakeClockState c2;
  o.trace_steps = 0;        // every step...
  o.trace_max_events = 12;  // ...but no more than 12 events
  Profiler capped(std::make_unique<FakeClock>(c2), o);
  for (uint64_t s = 1; s <= 10; ++s) step(capped, c2, s, 1);
  capped.finish();
  EXPECT_EQ(capped.events().size(), 12u);
  EXPECT_EQ(capped.dropped_events(), 38u);
  std::string all;
  for (const auto& l : profile_table(capped, {0, 1, "cpu"})) all += l + "\n";
  EXPECT_CONTAINS(all,
                  "profile: trace: 12 events kept (every step), 38 more left out (at most 12 "
                  "are kept)");
}

TEST(Profiler, TraceIsChromeTraceJson) {
  FakeClockState c;
  const auto profiler = one_epoch(c, 2, /*trace=*/true);
  const Profiler& p = *profiler;
  const nlohmann::json j = nlohmann::json::parse(profile_trace_json(p, {1, 2, "cpu"}));
  ASSERT_TRUE(j.at("traceEvents").is_array());
  std::map<std::string, int> names;
  double last_ts = -1;
  for (const auto& e : j.at("traceEvents")) {
    EXPECT_EQ(e.at("pid"), 1);
    EXPECT_EQ(e.at("tid"), 0);
    if (e.at("ph") == "M") continue;
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_GE(e.at("ts").get<double>(), last_ts);  // in start order
    last_ts = e.at("ts").get<double>();
    EXPECT_GE(e.at("dur").get<double>(), 0);
    EXPECT_TRUE(e.at("args").contains("step") && e.at("args").contains("epoch"));
    ++names[e.at("name").get<std::string>()];
  }
  EXPECT_EQ(names, (std::map<std::string, int>{{"step", 2},
                                               {"data wait for batch", 2},
                                               {"forward A", 2},
                                               {"forward B", 2},
                                               {"update A", 2}}));
  // The first step starts at 0 and lasts 10 us; its forward B starts at 3 us.
  const auto& first = j.at("traceEvents")[2];
  EXPECT_EQ(first.at("name"), "step");
  EXPECT_DOUBLE_EQ(first.at("ts").get<double>(), 0);
  EXPECT_DOUBLE_EQ(first.at("dur").get<double>(), 10);
  EXPECT_EQ(j.at("otherData").at("steps_per_epoch"), 20);
  EXPECT_EQ(j.at("otherData").at("events_left_out"), 0);
}

TEST(Profiler, TraceIsWrittenAtomically) {
  test::ScratchDir dir;
  FakeClockState c;
  const auto profiler = one_epoch(c, 1, /*trace=*/true);
  const Profiler& p = *profiler;
  const std::string path = dir.path() + "/t.json";
  write_profile_trace(p, {0, 1, "cpu"}, path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(nlohmann::json::accept(text.str()));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);  // no temporary file beside it
  // A directory that does not exist: IoError naming the file, nothing written.
  const std::string message = test::error_of<IoError>([&] {
    write_profile_trace(p, {0, 1, "cpu"}, dir.path() + "/missing/t.json");
  });
  EXPECT_CONTAINS(message, "missing/t.json");
}

TEST(Profiler, NullProfilerRangesDoNothing) {
  // The code under measurement holds a null pointer when profiling is off.
  ProfileStep s(nullptr, 1, 1);
  ProfileRange r(nullptr, ProfilePhase::Forward, "anything");
  SUCCEED();
}

}  // namespace
}  // namespace nn
