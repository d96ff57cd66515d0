// nn-tune's random and TPE draws (sampler.h).
#include "nn-tune/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

namespace nn::tool {

using nlohmann::json;

namespace {

double uniform01(std::mt19937_64& rng) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// A continuous path's values live in a line the density is fitted on: the logarithm of a log
// range, an integer range widened by half a step each side (so its ends are as likely as the
// rest once rounded).
struct Line {
  double low, high;
};

Line line_of(const SearchParam& p) {
  switch (p.kind) {
    case SearchParam::Kind::LogUniform:
      return {std::log(p.low), std::log(p.high)};
    case SearchParam::Kind::IntUniform:
      return {p.low - 0.5, p.high + 0.5};
    default:
      return {p.low, p.high};
  }
}

double to_line(const SearchParam& p, const json& v) {
  const double x = v.get<double>();
  return p.kind == SearchParam::Kind::LogUniform ? std::log(x) : x;
}

json from_line(const SearchParam& p, double x) {
  switch (p.kind) {
    case SearchParam::Kind::LogUniform:
      return std::clamp(std::exp(x), p.low, p.high);
    case SearchParam::Kind::IntUniform:
      return int64_t(std::clamp(std::round(x), p.low, p.high));
    default:
      return std::clamp(x, p.low, p.high);
  }
}

double normal_cdf(double z) {
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

// The bandwidth of each observed value (in the order given): the larger gap to its neighbours
// among the values and the prior at the line's middle, kept between the line's length over
// min(100, n + 1) and the whole length. The prior's own is the whole length.
std::vector<double> bandwidths(const std::vector<double>& observed, Line line) {
  const double length = line.high - line.low;
  std::vector<std::pair<double, size_t>> points;  // (value, its index; the prior: observed.size())
  for (size_t i = 0; i < observed.size(); ++i) points.push_back({observed[i], i});
  points.push_back({0.5 * (line.low + line.high), observed.size()});
  std::sort(points.begin(), points.end());
  const double min_sigma = length / std::min(100.0, double(points.size()));
  std::vector<double> sigma(observed.size());
  for (size_t i = 0; i < points.size(); ++i) {
    if (points[i].second == observed.size()) continue;
    const double left = i > 0 ? points[i].first - points[i - 1].first : 0;
    const double right = i + 1 < points.size() ? points[i + 1].first - points[i].first : 0;
    sigma[points[i].second] = std::clamp(std::max(left, right), min_sigma, length);
  }
  return sigma;
}

// A normal truncated to the line: a draw, and its density at x.
double sample_truncated(double mu, double sigma, Line line, std::mt19937_64& rng) {
  std::normal_distribution<double> normal(mu, sigma);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const double x = normal(rng);
    if (x >= line.low && x <= line.high) return x;
  }
  return std::clamp(mu, line.low, line.high);
}

double truncated_density(double x, double mu, double sigma, Line line) {
  const double z = (x - mu) / sigma;
  const double mass = normal_cdf((line.high - mu) / sigma) - normal_cdf((line.low - mu) / sigma);
  return std::exp(-0.5 * z * z) / (sigma * std::max(mass, 1e-12));
}

// A mixture of normals truncated to the line, one at each observed value and a wide one (the
// prior) at the middle, equally weighted, with the bandwidths above: dense observations give
// narrow peaks, a lone one a broad bump.
class Parzen {
 public:
  Parzen(const std::vector<double>& observed, Line line) : line_(line) {
    // Components in the order of their values (the prior after an observation at the middle),
    // the order a draw's random number picks them in.
    const std::vector<double> sigma = bandwidths(observed, line);
    std::vector<std::tuple<double, bool, size_t>> parts;  // (value, the prior, index)
    for (size_t i = 0; i < observed.size(); ++i) parts.emplace_back(observed[i], false, i);
    parts.emplace_back(0.5 * (line.low + line.high), true, observed.size());
    std::sort(parts.begin(), parts.end());
    for (const auto& [mu, prior, i] : parts) {
      mu_.push_back(mu);
      sigma_.push_back(prior ? line.high - line.low : sigma[i]);
    }
  }

  double sample(std::mt19937_64& rng) const {
    const size_t j = std::min(size_t(uniform01(rng) * double(mu_.size())), mu_.size() - 1);
    return sample_truncated(mu_[j], sigma_[j], line_, rng);
  }

  double log_density(double x) const {
    double sum = 0;
    for (size_t j = 0; j < mu_.size(); ++j) sum += truncated_density(x, mu_[j], sigma_[j], line_);
    return std::log(std::max(sum / double(mu_.size()), std::numeric_limits<double>::min()));
  }

 private:
  Line line_;
  std::vector<double> mu_, sigma_;
};

// The index of `value` in a list's values; the list's size when it is not among them.
size_t choice_index(const SearchParam& p, const json& value) {
  size_t k = 0;
  while (k < p.choices.size() && p.choices[k] != value) ++k;
  return k;
}

// A list's values: each one's count among the observations plus one (the prior), normalised.
std::vector<double> choice_weights(const SearchParam& p, const std::vector<const json*>& values) {
  std::vector<double> w(p.choices.size(), 1.0);
  for (const json* v : values) {
    const size_t k = choice_index(p, *v);
    if (k < w.size()) w[k] += 1.0;
  }
  double total = 0;
  for (double x : w) total += x;
  for (double& x : w) x /= total;
  return w;
}

}  // namespace

json random_draw(const std::vector<SearchParam>& space, std::mt19937_64& rng) {
  json s = json::object();
  for (const SearchParam& p : space) {
    const double u = uniform01(rng);
    switch (p.kind) {
      case SearchParam::Kind::Choice:
        s[p.path] = p.choices[std::min(size_t(u * double(p.choices.size())), p.choices.size() - 1)];
        break;
      case SearchParam::Kind::Uniform:
        s[p.path] = p.low + u * (p.high - p.low);
        break;
      case SearchParam::Kind::LogUniform:
        s[p.path] = std::exp(std::log(p.low) + u * (std::log(p.high) - std::log(p.low)));
        break;
      case SearchParam::Kind::IntUniform:
        s[p.path] = int64_t(std::floor(p.low + u * (p.high - p.low + 1)));
        break;
    }
  }
  return s;
}

namespace {

// One path's two densities: draws from the good trials' and the log ratio of good to other.
struct PathModel {
  const SearchParam* p;
  std::vector<double> l, g;              // a list's weights
  std::optional<Parzen> l_line, g_line;  // a range's densities

  json sample(std::mt19937_64& rng) const {
    if (p->kind == SearchParam::Kind::Choice) {
      std::discrete_distribution<size_t> from_good(l.begin(), l.end());
      return p->choices[from_good(rng)];
    }
    return from_line(*p, l_line->sample(rng));
  }

  double score(const json& value) const {
    if (p->kind == SearchParam::Kind::Choice) {
      const size_t k = choice_index(*p, value);
      return k < l.size() ? std::log(l[k]) - std::log(g[k])
                          : -std::numeric_limits<double>::infinity();
    }
    // An integer is scored where it lands once rounded, so equal draws score alike.
    const double at = to_line(*p, value);
    return l_line->log_density(at) - g_line->log_density(at);
  }
};

// Multivariate TPE (Falkner et al. 2018's BOHB kernel density; Optuna's multivariate TPE): one
// joint kernel per observed trial, the product over the paths of a kernel at its value (a range:
// the truncated normal of its path's Parzen density; a list: own_extra() of the mass on its
// value, the rest spread evenly over all values), plus a prior kernel (the wide normal, or even
// weights).
// A draw takes one trial's kernel whole, so settings that scored well together are drawn
// together; one path at a time, a good rate from one trial could be paired with a good width
// from another that does not suit it.
class JointParzen {
 public:
  JointParzen(const std::vector<SearchParam>& space, const std::vector<const json*>& observed) {
    for (const json* o : observed) {
      bool whole = true;
      for (const SearchParam& p : space) whole = whole && o->contains(p.path);
      if (whole) trials_.push_back(o);
    }
    for (const SearchParam& p : space) {
      Path path{&p, line_of(p), {}, {}, {}};
      // Kernel j of trials_.size() + 1: the last is the prior (even weights; the wide normal).
      if (p.kind == SearchParam::Kind::Choice) {
        // p.choices.size(): a value no longer listed, weighted evenly as the prior.
        for (const json* o : trials_) path.choice.push_back(choice_index(p, o->at(p.path)));
        path.choice.push_back(p.choices.size());
      } else {
        for (const json* o : trials_) path.mu.push_back(to_line(p, o->at(p.path)));
        path.sigma = bandwidths(path.mu, path.line);
        path.mu.push_back(0.5 * (path.line.low + path.line.high));
        path.sigma.push_back(path.line.high - path.line.low);
      }
      paths_.push_back(std::move(path));
    }
  }

  // Kernel j (the prior: j == trials) for every path.
  json sample(std::mt19937_64& rng) const {
    const size_t n = trials_.size() + 1;
    const size_t j = std::min(size_t(uniform01(rng) * double(n)), n - 1);
    json s = json::object();
    for (const Path& path : paths_) {
      const SearchParam& p = *path.p;
      if (p.kind == SearchParam::Kind::Choice) {
        const size_t count = p.choices.size();
        const size_t own = path.choice[j];
        // The trial's own value with its kernel's extra mass, else a value drawn evenly.
        const bool keep = own < count && uniform01(rng) < own_extra(count);
        const size_t k = keep ? own : std::min(size_t(uniform01(rng) * double(count)), count - 1);
        s[p.path] = p.choices[k];
      } else {
        s[p.path] = from_line(p, sample_truncated(path.mu[j], path.sigma[j], path.line, rng));
      }
    }
    return s;
  }

  double log_density(const json& s) const {
    const size_t n = trials_.size() + 1;
    std::vector<double> logs(n, 0.0);
    for (const Path& path : paths_) {
      const SearchParam& p = *path.p;
      if (p.kind == SearchParam::Kind::Choice) {
        const double count = double(p.choices.size());
        const double extra = own_extra(p.choices.size());
        const size_t k = choice_index(p, s.at(p.path));
        for (size_t j = 0; j < n; ++j) {
          const bool prior = path.choice[j] >= p.choices.size();
          const bool own = path.choice[j] == k;
          logs[j] += std::log(prior ? 1.0 / count : (own ? extra : 0.0) + (1.0 - extra) / count);
        }
      } else {
        const double x = to_line(p, s.at(p.path));
        for (size_t j = 0; j < n; ++j) {
          const double d = truncated_density(x, path.mu[j], path.sigma[j], path.line);
          logs[j] += std::log(std::max(d, std::numeric_limits<double>::min()));
        }
      }
    }
    // log of the mean of exp(logs), without overflow.
    const double top = *std::max_element(logs.begin(), logs.end());
    double sum = 0;
    for (double v : logs) sum += std::exp(v - top);
    return top + std::log(sum / double(n));
  }

 private:
  struct Path {
    const SearchParam* p;
    Line line;
    std::vector<double> mu, sigma;  // a range: each kernel's centre on the line, its bandwidth
    std::vector<size_t> choice;     // a list: each kernel's value's index
  };
  // A list's kernel for a trial: weight 1 on its value plus 1 / (trials + 1) on every value (the
  // prior's share, as Optuna's), normalised: the share of the mass that is the trial's own
  // beyond the even spread. With more trials the kernels narrow onto their values.
  double own_extra(size_t count) const {
    const double spread = 1.0 / double(trials_.size() + 1);
    return 1.0 / (1.0 + spread * double(count));
  }

  std::vector<const json*> trials_;
  std::vector<Path> paths_;
};

bool taken(const std::vector<json>& drawn, const json& s) {
  return std::find(drawn.begin(), drawn.end(), s) != drawn.end();
}

}  // namespace

json distinct_random_draw(const std::vector<SearchParam>& space, const std::vector<json>& drawn,
                          std::mt19937_64& rng) {
  json s = random_draw(space, rng);
  for (int attempt = 0; attempt < 200 && taken(drawn, s); ++attempt) s = random_draw(space, rng);
  return s;
}

namespace {

// Candidates drawn from the good density (`sample`), the best `score` (the log ratio of good to
// other density) kept; a candidate already drawn is passed over (its result is known: the same
// settings train the same network), and when every candidate was, more are drawn before
// falling back to a random draw not yet made. `score` is asked about the candidate just drawn.
template <typename Sample, typename Score>
json best_candidate(const std::vector<SearchParam>& space, const std::vector<json>& drawn,
                    std::mt19937_64& rng, const TpeOptions& options, const Sample& sample,
                    const Score& score) {
  json best;
  double best_score = -std::numeric_limits<double>::infinity();
  for (uint32_t c = 0; c < options.candidates * 20 && (c < options.candidates || best.is_null());
       ++c) {
    json s = sample(rng);
    const double v = score(s);
    if (taken(drawn, s)) continue;
    if (best.is_null() || v > best_score) best_score = v, best = s;
  }
  return best.is_null() ? distinct_random_draw(space, drawn, rng) : best;
}

}  // namespace

json tpe_draw(const std::vector<SearchParam>& space, const std::vector<Observation>& observed,
              const std::vector<json>& drawn, std::mt19937_64& rng, const TpeOptions& options) {
  if (observed.empty()) return distinct_random_draw(space, drawn, rng);
  std::vector<const Observation*> ranked;
  for (const Observation& o : observed) ranked.push_back(&o);
  std::stable_sort(ranked.begin(), ranked.end(), [](const Observation* a, const Observation* b) {
    return a->rung != b->rung ? a->rung > b->rung : a->metric > b->metric;
  });
  const size_t n_good = std::clamp<size_t>(size_t(std::ceil(options.gamma * double(ranked.size()))),
                                           1, std::min<size_t>(25, ranked.size()));
  if (options.multivariate) {
    std::vector<const json*> good, other;
    for (size_t i = 0; i < ranked.size(); ++i)
      (i < n_good ? good : other).push_back(&ranked[i]->settings);
    const JointParzen l(space, good), g(space, other);
    return best_candidate(
        space, drawn, rng, options, [&](std::mt19937_64& r) { return l.sample(r); },
        [&](const json& s) { return l.log_density(s) - g.log_density(s); });
  }
  std::vector<PathModel> models;
  for (const SearchParam& p : space) {
    std::vector<const json*> good, other;
    for (size_t i = 0; i < ranked.size(); ++i)
      if (ranked[i]->settings.contains(p.path))
        (i < n_good ? good : other).push_back(&ranked[i]->settings.at(p.path));
    PathModel m{&p, {}, {}, std::nullopt, std::nullopt};
    if (p.kind == SearchParam::Kind::Choice) {
      m.l = choice_weights(p, good);
      m.g = choice_weights(p, other);
    } else {
      std::vector<double> good_x, other_x;
      for (const json* v : good) good_x.push_back(to_line(p, *v));
      for (const json* v : other) other_x.push_back(to_line(p, *v));
      m.l_line.emplace(good_x, line_of(p));
      m.g_line.emplace(other_x, line_of(p));
    }
    models.push_back(std::move(m));
  }
  // Each path's value drawn from its good density and scored by its own ratio, the scores
  // added (the paths modelled as independent).
  json scored;
  double last_score = 0;
  auto sample = [&](std::mt19937_64& r) {
    json s = json::object();
    last_score = 0;
    for (const PathModel& m : models) {
      const json v = m.sample(r);
      last_score += m.score(v);
      s[m.p->path] = v;
    }
    return s;
  };
  return best_candidate(space, drawn, rng, options, sample,
                        [&](const json&) { return last_score; });
}

std::vector<Observation> with_liars(std::vector<Observation> observed,
                                    const std::vector<json>& pending) {
  for (const json& s : pending)
    observed.push_back({s, 0, -std::numeric_limits<double>::infinity()});
  return observed;
}

std::mt19937_64 trial_rng(uint64_t seed, uint32_t index) {
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), index, 0x7475u};
  return std::mt19937_64(seq);
}

}  // namespace nn::tool
