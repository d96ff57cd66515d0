// The "Sampling" object of an Output layer and of a CDL's TrainingParameters, read one way for
// both: {"Negatives": n >= 1, "Distribution": "Uniform" | "Popularity"}. Internal to config/.
#pragma once

#include <limits>
#include <string>

#include "config/json_reader.h"
#include "config/network_spec.h"

namespace nn::config_detail {

inline SamplingSpec parse_sampling(const JsonReader& r, const Member& m) {
  SamplingSpec s;
  bool has_negatives = false;
  for (const auto& p : r.members(*m.value, m.path)) {
    if (p.lower == "negatives") {
      s.negatives = uint32_t(r.get_int(*p.value, p.path, 1, std::numeric_limits<uint32_t>::max()));
      has_negatives = true;
    } else if (p.lower == "distribution") {
      const std::string d = r.get_string(p);
      std::string lower = d;
      for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "uniform")
        s.distribution = SamplingDistribution::Uniform;
      else if (lower == "popularity")
        s.distribution = SamplingDistribution::Popularity;
      else
        r.fail(p.path, "expected \"Uniform\" or \"Popularity\", not \"" + d + "\"");
    } else {
      r.unknown_key(p, {"Negatives", "Distribution"});
    }
  }
  if (!has_negatives) r.fail(m.path, "\"Negatives\" is required (the negatives per minibatch)");
  return s;
}

}  // namespace nn::config_detail
