// nn-tune's schedule (successive halving and ASHA) and samplers (random, TPE), driven here by
// simulated trials with known metrics: which trial runs next, which are promoted, who wins, and
// whether TPE's draws move towards the settings that scored well.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "nn-tune/sampler.h"
#include "nn-tune/schedule.h"
#include "nn-tune/workers.h"

namespace nn::tool {
namespace {

using nlohmann::json;

// Runs the schedule one job at a time (a single worker); metric(trial, rung) scores a rung.
// Returns the jobs in the order they ran.
std::vector<Job> simulate(ScheduleState& s,
                          const std::function<double(uint32_t, uint32_t)>& metric) {
  std::vector<Job> order;
  for (;;) {
    const Job job = next_job(s);
    if (job.kind == Job::Kind::Done) break;
    EXPECT_NE(job.kind, Job::Kind::Wait) << "a single worker never waits";
    if (job.kind == Job::Kind::Wait) break;
    if (job.kind == Job::Kind::Draw) s.drawn++;
    s.finished[{job.trial, job.rung}] = metric(job.trial, job.rung);
    order.push_back(job);
  }
  return order;
}

size_t count_rung(const ScheduleState& s, uint32_t rung) {
  size_t n = 0;
  for (const auto& [key, metric] : s.finished) n += key.second == rung;
  return n;
}

TEST(TuneSchedule, HalvingRunsRungByRungAndKeepsTheBestThird) {
  ScheduleState s;
  s.rungs = 3;
  s.eta = 3;
  s.trials = 6;
  // Trial t scores t/10 at every rung: the best are 5, then 4.
  const auto order = simulate(s, [](uint32_t t, uint32_t) { return t / 10.0; });
  ASSERT_EQ(order.size(), 9u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(order[i].rung, 0u) << "rung 0 first, all of it";
  EXPECT_EQ(count_rung(s, 1), 2u);
  EXPECT_EQ(count_rung(s, 2), 1u);
  EXPECT_TRUE(s.finished.count({5, 1}) && s.finished.count({4, 1}));
  EXPECT_EQ(order.back().trial, 5u);
  const auto won = winner(s);
  ASSERT_TRUE(won.has_value());
  EXPECT_EQ(won->trial, 5u);
  EXPECT_EQ(won->rung, 2u);
}

TEST(TuneSchedule, HalvingWaitsForTheWholeRungWhileTrialsRun) {
  ScheduleState s;
  s.rungs = 2;
  s.eta = 3;
  s.trials = 3;
  s.drawn = 3;
  s.finished[{0, 0}] = 0.9;
  s.finished[{1, 0}] = 0.1;
  s.running.insert({2, 0});
  EXPECT_EQ(next_job(s).kind, Job::Kind::Wait);
  s.asynchronous = true;  // ASHA: 2 results, floor(2/3) = 0 promotable yet
  EXPECT_EQ(next_job(s).kind, Job::Kind::Wait);
  s.finished[{3, 0}] = 0.5;  // (a fourth trial's result: 3 in all, the best one promotable)
  s.trials = s.drawn = 4;
  const Job job = next_job(s);
  EXPECT_EQ(job.kind, Job::Kind::Promote);
  EXPECT_EQ(job.trial, 0u);
  EXPECT_EQ(job.rung, 1u);
}

TEST(TuneSchedule, AshaPromotesBeforeTheRungIsComplete) {
  ScheduleState s;
  s.rungs = 3;
  s.eta = 3;
  s.trials = 9;
  s.asynchronous = true;
  const auto order = simulate(s, [](uint32_t t, uint32_t) { return double((t * 7) % 9); });
  // The first promotion comes after 3 results of rung 0, not after all 9.
  size_t first_promotion = 0;
  while (order[first_promotion].rung == 0) ++first_promotion;
  EXPECT_EQ(first_promotion, 3u);
  // In the end, as many as successive halving: a third of 9, then of 3.
  EXPECT_EQ(count_rung(s, 0), 9u);
  EXPECT_GE(count_rung(s, 1), 3u);
  EXPECT_GE(count_rung(s, 2), 1u);
  // The best trial at rung 0 (t * 7 % 9 == 8: t = 5) reaches the last rung and wins.
  const auto won = winner(s);
  ASSERT_TRUE(won.has_value());
  EXPECT_EQ(won->trial, 5u);
  EXPECT_EQ(won->rung, 2u);
}

TEST(TuneSchedule, FailedRungsAreNeverPromotedAndDrawnTrialsComeFirst) {
  ScheduleState s;
  s.rungs = 2;
  s.eta = 2;
  s.trials = 4;
  s.drawn = 2;  // trial 1 drawn but never run (a tune killed before it)
  s.finished[{0, 0}] = -std::numeric_limits<double>::infinity();
  Job job = next_job(s);
  EXPECT_EQ(job.kind, Job::Kind::Start);
  EXPECT_EQ(job.trial, 1u);
  s.finished[{1, 0}] = -std::numeric_limits<double>::infinity();
  s.finished[{2, 0}] = 0.2;
  s.finished[{3, 0}] = 0.3;
  s.drawn = 4;
  // 4 results, 2 promoted: the two finite ones, never the failures.
  const auto order = simulate(s, [](uint32_t t, uint32_t) { return t / 10.0; });
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0].trial, 3u);
  EXPECT_EQ(order[1].trial, 2u);
  EXPECT_EQ(winner(s)->trial, 3u);
  ScheduleState none;
  none.trials = none.drawn = 1;
  none.finished[{0, 0}] = -std::numeric_limits<double>::infinity();
  EXPECT_FALSE(winner(none).has_value());
}

TEST(TuneSchedule, TrialsRetireOnceTheyCanNeitherGoOnNorWin) {
  ScheduleState s;
  s.rungs = 2;
  s.eta = 3;
  s.trials = s.drawn = 6;
  for (uint32_t t = 0; t < 5; ++t) s.finished[{t, 0}] = t / 10.0;
  s.running.insert({5, 0});
  // Rung 0 is not final (trial 5 runs): nobody retires yet, failures aside.
  s.finished[{4, 0}] = -std::numeric_limits<double>::infinity();
  EXPECT_EQ(retired(s), std::vector<uint32_t>({4}));
  s.running.clear();
  s.finished[{5, 0}] = 0.9;
  // Final: the best two (5, 3) go on; 0, 1, 2 and the failed 4 retire.
  EXPECT_EQ(retired(s), std::vector<uint32_t>({0, 1, 2, 4}));
  s.finished[{5, 1}] = 0.95;
  s.finished[{3, 1}] = 0.5;
  // Done: every trial but the winner (5) retires, 3 included (it finished the last rung).
  EXPECT_EQ(retired(s), std::vector<uint32_t>({0, 1, 2, 3, 4}));
}

std::vector<SearchParam> space_of(std::vector<SearchParam> params) {
  return params;
}

SearchParam range(const char* path, SearchParam::Kind kind, double low, double high) {
  SearchParam p;
  p.path = path;
  p.kind = kind;
  p.low = low;
  p.high = high;
  return p;
}

// A log range and a list: "rate" in [1e-5, 0.1] and "units" among 32..512, and an objective
// with its peak at rate 0.003 and 128 units (0 there, below elsewhere).
std::vector<SearchParam> rate_units_space() {
  SearchParam units;
  units.path = "units";
  units.choices = json::array({32, 64, 128, 256, 512});
  return space_of({range("rate", SearchParam::Kind::LogUniform, 1e-5, 1e-1), units});
}

double rate_units_peak(const json& s) {
  const double d = std::log10(s["rate"].get<double>()) - std::log10(0.003);
  return -d * d - (s["units"] == 128 ? 0.0 : 0.5);
}

TEST(TuneSampler, DrawsStayInTheirRangesAndLists) {
  SearchParam choice;
  choice.path = "Network.Layers.Hidden.N";
  choice.choices = json::array({64, 128, 256});
  const auto space = space_of({range("a", SearchParam::Kind::Uniform, 0.2, 0.6),
                               range("b", SearchParam::Kind::LogUniform, 1e-4, 1e-2),
                               range("c", SearchParam::Kind::IntUniform, 2, 5), choice});
  for (bool joint : {false, true}) {  // one density per path, and the multivariate one
    TpeOptions options;
    options.multivariate = joint;
    std::vector<Observation> seen;
    for (uint32_t i = 0; i < 60; ++i) {
      std::mt19937_64 rng = trial_rng(7, i);
      const json s = i < 5 ? random_draw(space, rng) : tpe_draw(space, seen, {}, rng, options);
      EXPECT_GE(s["a"].get<double>(), 0.2);
      EXPECT_LE(s["a"].get<double>(), 0.6);
      EXPECT_GE(s["b"].get<double>(), 1e-4);
      EXPECT_LE(s["b"].get<double>(), 1e-2);
      ASSERT_TRUE(s["c"].is_number_integer());
      EXPECT_GE(s["c"].get<int>(), 2);
      EXPECT_LE(s["c"].get<int>(), 5);
      EXPECT_TRUE(s["Network.Layers.Hidden.N"] == 64 || s["Network.Layers.Hidden.N"] == 128 ||
                  s["Network.Layers.Hidden.N"] == 256);
      seen.push_back({s, 0, s["a"].get<double>()});
    }
  }
}

// The best of `trials` draws on an objective with its peak at rate 0.003 and 128 units, by TPE
// (5 random draws first) or at random, averaged over seeds: TPE must get closer.
TEST(TuneSampler, TpeFindsBetterSettingsThanRandomDraws) {
  const auto space = rate_units_space();
  const auto objective = rate_units_peak;
  double tpe_regret = 0, random_regret = 0, tpe_late_hits = 0;
  const int seeds = 10, trials = 30;
  for (int seed = 1; seed <= seeds; ++seed) {
    std::vector<Observation> seen;
    double best_tpe = -1e9, best_random = -1e9;
    std::mt19937_64 random_rng(uint64_t(seed) * 977);
    for (int i = 0; i < trials; ++i) {
      std::mt19937_64 rng = trial_rng(uint64_t(seed), uint32_t(i));
      const json s = i < 5 ? random_draw(space, rng) : tpe_draw(space, seen, {}, rng);
      const double v = objective(s);
      seen.push_back({s, 0, v});
      best_tpe = std::max(best_tpe, v);
      if (i >= trials - 10) tpe_late_hits += s["units"] == 128;
      best_random = std::max(best_random, objective(random_draw(space, random_rng)));
    }
    tpe_regret += -best_tpe;
    random_regret += -best_random;
  }
  EXPECT_LT(tpe_regret, 0.5 * random_regret)
      << "mean regret: TPE " << tpe_regret / seeds << ", random " << random_regret / seeds;
  // Random draws pick 128 units a fifth of the time; TPE's late draws mostly.
  EXPECT_GT(tpe_late_hits / (10.0 * seeds), 0.5);
}

// A constant liar: trials drawn but without a result (running under --parallel) count as the
// worst, so TPE draws away from them instead of next to them.
TEST(TuneSampler, ConstantLiarDrawsAwayFromTrialsWithoutResults) {
  const auto space = space_of({range("x", SearchParam::Kind::Uniform, 0.0, 1.0)});
  std::vector<Observation> seen;
  for (double x : {0.05, 0.15, 0.55, 0.65, 0.8, 0.95})
    seen.push_back({json{{"x", x}}, 0, 0.1 + 0.1 * x});
  seen.push_back({json{{"x", 0.3}}, 0, 0.9});  // the best so far
  seen.push_back({json{{"x", 0.35}}, 0, 0.8});
  const std::vector<json> pending = {json{{"x", 0.31}}, json{{"x", 0.33}}};
  const std::vector<Observation> lied = with_liars(seen, pending);
  ASSERT_EQ(lied.size(), seen.size() + 2);
  EXPECT_EQ(lied.back().settings, pending.back());
  EXPECT_EQ(lied.back().rung, 0u);
  EXPECT_TRUE(std::isinf(lied.back().metric) && lied.back().metric < 0);
  int near_plain = 0, near_lied = 0;
  for (uint32_t i = 0; i < 200; ++i) {
    std::mt19937_64 a = trial_rng(5, i), b = trial_rng(5, i);
    near_plain += std::fabs(tpe_draw(space, seen, {}, a)["x"].get<double>() - 0.32) < 0.03;
    near_lied += std::fabs(tpe_draw(space, lied, {}, b)["x"].get<double>() - 0.32) < 0.03;
  }
  EXPECT_LT(near_lied, near_plain / 2) << "draws within 0.03 of the pending trials: " << near_lied
                                       << " with the liar, " << near_plain << " without";
}

// A search of 24 trials, `workers` at a time, each taking 1 to 3 time units, on the objective of
// TpeFindsBetterSettingsThanRandomDraws: a new trial is drawn whenever one ends, while the
// others still run (with the liar they count as the worst at the draw). Returns the regret of
// the best trial.
double parallel_regret(bool liar, int seed, int workers) {
  const auto space = rate_units_space();
  const auto objective = rate_units_peak;
  struct Running {
    double end;
    json settings;
  };
  std::vector<Running> running;
  std::vector<Observation> seen;
  std::vector<json> drawn;
  std::mt19937_64 clock(uint64_t(seed) * 31 + 7);
  std::uniform_real_distribution<double> duration(1.0, 3.0);
  double now = 0, best = -1e9;
  const int trials = 24, startup = 5;
  auto draw = [&] {
    const uint32_t i = uint32_t(drawn.size());
    std::mt19937_64 rng = trial_rng(uint64_t(seed), i);
    std::vector<json> pending;
    for (const Running& r : running) pending.push_back(r.settings);
    const json s = int(i) < startup || seen.empty()
                       ? distinct_random_draw(space, drawn, rng)
                       : tpe_draw(space, liar ? with_liars(seen, pending) : seen, drawn, rng);
    drawn.push_back(s);
    running.push_back({now + duration(clock), s});
  };
  while (int(drawn.size()) < workers) draw();
  while (!running.empty()) {
    auto next = std::min_element(running.begin(), running.end(),
                                 [](const Running& a, const Running& b) { return a.end < b.end; });
    now = next->end;
    const double v = objective(next->settings);
    seen.push_back({next->settings, 0, v});
    best = std::max(best, v);
    running.erase(next);
    if (int(drawn.size()) < trials) draw();
  }
  return -best;
}

// Measured over 400 seeds (deterministic: every draw and duration is seeded), the liar lowers
// the mean regret with 4 and 8 trials at a time, by more with more trials running at each draw
// (on the development machine: 0.151 against 0.172 with 4, 0.146 against 0.176 with 8, each
// difference about two standard errors).
TEST(TuneSampler, ConstantLiarLowersTheRegretOfAParallelSearch) {
  for (int workers : {4, 8}) {
    double with = 0, without = 0;
    const int seeds = 400;
    for (int seed = 1; seed <= seeds; ++seed) {
      with += parallel_regret(true, seed, workers);
      without += parallel_regret(false, seed, workers);
    }
    EXPECT_LT(with, without) << workers << " at a time: mean regret with the liar " << with / seeds
                             << ", without " << without / seeds;
  }
}

// The best of 30 trials (5 random first) on `objective`, by univariate or multivariate TPE.
template <typename Objective>
double tpe_regret(const std::vector<SearchParam>& space, const Objective& objective, bool joint,
                  int seed, double best_possible) {
  TpeOptions options;
  options.multivariate = joint;
  std::vector<Observation> seen;
  std::vector<json> drawn;
  double best = -1e9;
  for (int i = 0; i < 30; ++i) {
    std::mt19937_64 rng = trial_rng(uint64_t(seed), uint32_t(i));
    const json s = i < 5 ? distinct_random_draw(space, drawn, rng)
                         : tpe_draw(space, seen, drawn, rng, options);
    drawn.push_back(s);
    const double v = objective(s);
    seen.push_back({s, 0, v});
    best = std::max(best, v);
  }
  return best_possible - best;
}

// A joint density (a kernel per trial) against one density per path, 100 seeds of 30 trials
// each (deterministic): where the good settings lie along a diagonal (x and y must move
// together), on a separable bowl, and on a list with a log range. On the development machine
// the mean regrets were, joint / per path: ridge 0.407 / 0.588, bowl 0.046 / 0.137, list and
// log range 0.013 / 0.172.
TEST(TuneSampler, MultivariateTpeFollowsSettingsThatGoTogether) {
  const auto space = space_of({range("x", SearchParam::Kind::Uniform, 0.0, 1.0),
                               range("y", SearchParam::Kind::Uniform, 0.0, 1.0)});
  const auto ridge = [](const json& s) {
    const double x = s["x"].get<double>(), y = s["y"].get<double>();
    return -std::pow((x - y) / 0.05, 2) - 4 * std::pow(x + y - 1.2, 2);
  };
  const auto bowl = [](const json& s) {
    const double x = s["x"].get<double>(), y = s["y"].get<double>();
    return -std::pow((x - 0.3) / 0.1, 2) - std::pow((y - 0.7) / 0.1, 2);
  };
  double ridge_joint = 0, ridge_paths = 0, bowl_joint = 0, bowl_paths = 0;
  const int seeds = 100;
  for (int seed = 1; seed <= seeds; ++seed) {
    ridge_joint += tpe_regret(space, ridge, true, seed, 0.0);
    ridge_paths += tpe_regret(space, ridge, false, seed, 0.0);
    bowl_joint += tpe_regret(space, bowl, true, seed, 0.0);
    bowl_paths += tpe_regret(space, bowl, false, seed, 0.0);
  }
  // A list and a log range (TpeFindsBetterSettingsThanRandomDraws' objective).
  const auto mixed = rate_units_space();
  const auto peak = rate_units_peak;
  double mixed_joint = 0, mixed_paths = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    mixed_joint += tpe_regret(mixed, peak, true, seed, 0.0);
    mixed_paths += tpe_regret(mixed, peak, false, seed, 0.0);
  }
  const std::string means =
      "mean regret over " + std::to_string(seeds) + " seeds, joint / per " + "path: ridge " +
      std::to_string(ridge_joint / seeds) + " / " + std::to_string(ridge_paths / seeds) +
      ", bowl " + std::to_string(bowl_joint / seeds) + " / " + std::to_string(bowl_paths / seeds) +
      ", list and log range " + std::to_string(mixed_joint / seeds) + " / " +
      std::to_string(mixed_paths / seeds);
  EXPECT_LT(ridge_joint, 0.8 * ridge_paths) << means;
  EXPECT_LT(bowl_joint, 0.8 * bowl_paths) << means;
  EXPECT_LT(mixed_joint, 0.8 * mixed_paths) << means;
}

TEST(TuneSampler, TrialsStoppedEarlierRankBelowThoseThatWentOn) {
  // Two trials: one stopped at rung 0 with a high metric, one that reached rung 1 with a lower
  // one. The good group (one trial) is the deeper one, so draws cluster at its value.
  const auto space = space_of({range("x", SearchParam::Kind::Uniform, 0.0, 1.0)});
  std::vector<Observation> seen = {{json{{"x", 0.1}}, 0, 0.9}, {json{{"x", 0.9}}, 1, 0.5}};
  for (int i = 0; i < 6; ++i) seen.push_back({json{{"x", 0.1 + 0.01 * i}}, 0, 0.8});
  int near_deep = 0;
  for (uint32_t i = 0; i < 40; ++i) {
    std::mt19937_64 rng = trial_rng(3, i);
    near_deep += tpe_draw(space, seen, {}, rng)["x"].get<double>() > 0.6;
  }
  EXPECT_GT(near_deep, 30);
}

TEST(TuneSampler, TpeNeverDrawsSettingsTwiceWhileTheSpaceLasts) {
  // A grid of 3 x 3 x 3 lists, every result the same but one: without the rule TPE keeps
  // drawing the best trial's settings again.
  std::vector<SearchParam> space;
  for (const char* path : {"a", "b", "c"}) {
    SearchParam p;
    p.path = path;
    p.choices = json::array({1, 2, 3});
    space.push_back(p);
  }
  std::vector<json> drawn;
  std::vector<Observation> seen;
  for (uint32_t i = 0; i < 27; ++i) {
    std::mt19937_64 rng = trial_rng(9, i);
    const json s =
        i < 3 ? distinct_random_draw(space, drawn, rng) : tpe_draw(space, seen, drawn, rng);
    EXPECT_EQ(std::count(drawn.begin(), drawn.end(), s), 0) << "draw " << i << ": " << s.dump();
    drawn.push_back(s);
    seen.push_back({s, 0, s == json{{"a", 1}, {"b", 2}, {"c", 3}} ? 1.0 : 0.5});
  }
}

TEST(TuneSampler, TrialDrawsDependOnTheirIndexOnly) {
  const auto space = space_of({range("x", SearchParam::Kind::Uniform, 0.0, 1.0)});
  std::mt19937_64 a = trial_rng(5, 3), b = trial_rng(5, 3), c = trial_rng(5, 4);
  const json x = random_draw(space, a);
  EXPECT_EQ(x, random_draw(space, b));
  EXPECT_NE(x, random_draw(space, c));
}

// A single nn-tune spreads its trials over the host's GPUs: each trial starts on the device
// running the fewest of them, the first such in the list; none listed, nn-train's default.
TEST(TuneDevices, ATrialStartsOnTheLeastBusyDevice) {
  EXPECT_EQ(pick_device({}, {}), -1);
  EXPECT_EQ(pick_device({}, {0, 1}), -1);
  const std::vector<int> four = {0, 1, 2, 3};
  EXPECT_EQ(pick_device(four, {}), 0);
  EXPECT_EQ(pick_device(four, {0}), 1);
  EXPECT_EQ(pick_device(four, {0, 1, 2}), 3);
  EXPECT_EQ(pick_device(four, {0, 1, 2, 3}), 0);
  EXPECT_EQ(pick_device(four, {1, 0, 3, 2, 0}), 1) << "a second round starts from the first free";
  EXPECT_EQ(pick_device(four, {0, 0, 1, 1, 2, 3}), 2);
  // A trial that ended frees its device: the next one goes there.
  EXPECT_EQ(pick_device(four, {0, 2, 3}), 1);
  // The list's order, not the numbers', breaks ties; devices outside the list do not count.
  EXPECT_EQ(pick_device({3, 1}, {}), 3);
  EXPECT_EQ(pick_device({3, 1}, {3, 5, 5}), 1);
  // Six trials at a time over two devices: three each.
  std::vector<int> running;
  for (int t = 0; t < 6; ++t) running.push_back(pick_device({0, 1}, running));
  EXPECT_EQ(std::count(running.begin(), running.end(), 0), 3);
  EXPECT_EQ(std::count(running.begin(), running.end(), 1), 3);
}

}  // namespace
}  // namespace nn::tool
