// nn-tune's random and TPE draws (sampler.h).
#include "nn-tune/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

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

// A mixture of normals truncated to the line, one at each observed value and a wide one (the
// prior) at the middle, equally weighted. Each bandwidth is the larger gap to its neighbours
// (the prior counted among them), kept between the line's length over min(100, n + 1) and the
// whole length: dense observations give narrow peaks, a lone one a broad bump.
class Parzen {
 public:
  Parzen(const std::vector<double>& observed, Line line) : line_(line) {
    const double length = line.high - line.low;
    std::vector<std::pair<double, bool>> points;  // (value, the prior)
    for (double x : observed) points.push_back({x, false});
    points.push_back({0.5 * (line.low + line.high), true});
    std::sort(points.begin(), points.end());
    const double min_sigma = length / std::min(100.0, double(points.size()));
    for (size_t i = 0; i < points.size(); ++i) {
      const double left = i > 0 ? points[i].first - points[i - 1].first : 0;
      const double right = i + 1 < points.size() ? points[i + 1].first - points[i].first : 0;
      mu_.push_back(points[i].first);
      // The prior keeps the whole length whatever its neighbours.
      sigma_.push_back(points[i].second ? length
                                        : std::clamp(std::max(left, right), min_sigma, length));
    }
  }

  double sample(std::mt19937_64& rng) const {
    const size_t j = std::min(size_t(uniform01(rng) * double(mu_.size())), mu_.size() - 1);
    std::normal_distribution<double> normal(mu_[j], sigma_[j]);
    for (int attempt = 0; attempt < 100; ++attempt) {
      const double x = normal(rng);
      if (x >= line_.low && x <= line_.high) return x;
    }
    return std::clamp(mu_[j], line_.low, line_.high);
  }

  double log_density(double x) const {
    double sum = 0;
    for (size_t j = 0; j < mu_.size(); ++j) {
      const double z = (x - mu_[j]) / sigma_[j];
      const double mass = normal_cdf((line_.high - mu_[j]) / sigma_[j]) -
                          normal_cdf((line_.low - mu_[j]) / sigma_[j]);
      sum += std::exp(-0.5 * z * z) / (sigma_[j] * std::max(mass, 1e-12));
    }
    return std::log(std::max(sum / double(mu_.size()), std::numeric_limits<double>::min()));
  }

 private:
  Line line_;
  std::vector<double> mu_, sigma_;
};

// A list's values: each one's count among the observations plus one (the prior), normalised.
std::vector<double> choice_weights(const SearchParam& p, const std::vector<const json*>& values) {
  std::vector<double> w(p.choices.size(), 1.0);
  for (const json* v : values)
    for (size_t k = 0; k < p.choices.size(); ++k)
      if (p.choices[k] == *v) w[k] += 1.0;
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
      for (size_t k = 0; k < p->choices.size(); ++k)
        if (p->choices[k] == value) return std::log(l[k]) - std::log(g[k]);
      return -std::numeric_limits<double>::infinity();
    }
    // An integer is scored where it lands once rounded, so equal draws score alike.
    const double at = to_line(*p, value);
    return l_line->log_density(at) - g_line->log_density(at);
  }
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
  // Candidates drawn whole from the good densities, the best ratio kept; a candidate already
  // drawn is passed over (its result is known: the same settings train the same network), and
  // when every candidate was, more are drawn before falling back to a random draw not yet made.
  json best;
  double best_score = -std::numeric_limits<double>::infinity();
  for (uint32_t c = 0; c < options.candidates * 20 && (c < options.candidates || best.is_null());
       ++c) {
    json s = json::object();
    double score = 0;
    for (const PathModel& m : models) {
      const json v = m.sample(rng);
      score += m.score(v);
      s[m.p->path] = v;
    }
    if (taken(drawn, s)) continue;
    if (best.is_null() || score > best_score) best_score = score, best = s;
  }
  return best.is_null() ? distinct_random_draw(space, drawn, rng) : best;
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
