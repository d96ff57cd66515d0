// nn-tune's schedule: which trial runs next, to which rung, given what finished and what runs.
// Successive halving ("Halving") promotes the best 1/Eta of a rung once every trial of it has
// finished; ASHA (Li et al. 2020) promotes a trial as soon as it is among the best 1/Eta of the
// results its rung has so far, so no worker waits for a rung's slowest trial. Pure logic, no
// processes: nn-tune's main loop asks it for jobs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace nn::tool {

struct ScheduleState {
  uint32_t rungs = 1;  // how many rungs (the last one is Max epochs)
  uint32_t eta = 3;    // the share promoted: 1/eta
  bool asynchronous = false;
  uint32_t trials = 0;  // the trials the tune runs in all
  uint32_t drawn = 0;   // trials whose settings exist (0 .. drawn-1)
  // (trial, rung) -> the best validation metric up to the rung's epochs (-infinity: failed).
  std::map<std::pair<uint32_t, uint32_t>, double> finished;
  std::set<std::pair<uint32_t, uint32_t>> running;  // (trial, rung)
};

struct Job {
  enum class Kind {
    Wait,     // nothing to start until a running trial finishes
    Done,     // nothing to start and nothing will be
    Start,    // trial `trial` at rung 0: a drawn trial that has no first rung yet
    Draw,     // draw trial `trial` (== drawn), then start it at rung 0
    Promote,  // continue `trial` to `rung`
  } kind = Kind::Done;
  uint32_t trial = 0, rung = 0;
};

// The next job: the promotion to the deepest rung first, then a drawn trial without its first
// rung, then a new draw. A rung is final once nothing more can reach it (every trial drawn,
// nothing running or promotable below it): its promotions are then the best ceil(n/eta) of its n
// results, as in successive halving. Before that, Halving promotes nothing from it and ASHA the
// best floor(n/eta). Failed results are never promoted.
Job next_job(const ScheduleState& s);

// Each trial that has finished a rung: its deepest finished rung.
std::map<uint32_t, uint32_t> deepest_rungs(const ScheduleState& s);

// The trials successive halving runs at `rung`: every trial at rung 0; after that the best
// ceil(n/eta) of the n results of the rung before, failures left out.
std::vector<uint32_t> halving_members(const ScheduleState& s, uint32_t rung);

// The trials that will never run again and cannot win: not running, not the winner so far,
// and failed, or done with the last rung, or left out of their rung's quota once it is final.
// Their checkpoints and networks are no longer needed.
std::vector<uint32_t> retired(const ScheduleState& s);

// The winner: the best result of the deepest rung that has a finite one; nullopt when none has.
struct Winner {
  uint32_t trial, rung;
  double metric;
};
std::optional<Winner> winner(const ScheduleState& s);

}  // namespace nn::tool
