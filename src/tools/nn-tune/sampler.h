// nn-tune's samplers: a trial's settings drawn at random from the search space, and drawn by a
// tree-structured Parzen estimator (TPE; Bergstra et al. 2011) from the results so far.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "nn-tune/tune_file.h"

namespace nn::tool {

// One value per searched path, each uniform over its list or range (a log range uniform in the
// logarithm, an integer range over its integers).
nlohmann::json random_draw(const std::vector<SearchParam>& space, std::mt19937_64& rng);

// A finished trial as the TPE sees it: its settings and how far it got. Trials are ranked by the
// deepest rung they finished, then by the metric there (a failed rung: -infinity), so that a
// trial successive halving stopped early counts as worse than one it promoted.
struct Observation {
  nlohmann::json settings;
  uint32_t rung = 0;
  double metric = 0;
};

// The observations with a "constant liar" (Ginsbourger et al., "Kriging is well-suited to
// parallelize optimization", 2010; Optuna's constant_liar): each of `pending` (the settings of
// trials drawn but without a finished rung, e.g. running under --parallel) added as a trial that
// failed its first rung, the worst result there is. TPE then counts them among the bad trials
// and draws away from them instead of next to a trial whose result is not in yet.
std::vector<Observation> with_liars(std::vector<Observation> observed,
                                    const std::vector<nlohmann::json>& pending);

struct TpeOptions {
  double gamma = 0.25;       // the share of the observations taken as "good" (at most 25)
  uint32_t candidates = 24;  // draws from the good trials' density, the best ratio kept
  // One joint density over all the paths (a kernel per trial) instead of one density per path.
  bool multivariate = false;
};

// A random draw that is none of `drawn` (unless 200 attempts find only those: a small space
// used up).
nlohmann::json distinct_random_draw(const std::vector<SearchParam>& space,
                                    const std::vector<nlohmann::json>& drawn, std::mt19937_64& rng);

// The TPE draw: splits the observations into the best ceil(gamma n) and the rest, fits to each
// a Parzen density per searched path (a mixture of truncated normals at the observed values,
// plus a wide prior; for lists, smoothed counts), draws `candidates` settings from the good
// trials' densities and keeps the one with the highest ratio of good to other density (the
// product over the paths, each modelled on its own; with options.multivariate, one joint
// density with a kernel per trial) among those not in `drawn`: settings already drawn would
// train the same network again. With no observations it is a random draw.
nlohmann::json tpe_draw(const std::vector<SearchParam>& space,
                        const std::vector<Observation>& observed,
                        const std::vector<nlohmann::json>& drawn, std::mt19937_64& rng,
                        const TpeOptions& options = {});

// The generator for trial `index` of a tune seeded with `seed`: a draw depends on its index
// and the results, not on the order in which earlier trials finished or on restarts.
std::mt19937_64 trial_rng(uint64_t seed, uint32_t index);

}  // namespace nn::tool
