// Feature names and their comparisons (see feature_names.h).
#include "core/feature_names.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace nn {
namespace {

// The names without their trailing unnamed entries.
size_t named_length(const std::vector<std::string>& names) {
  size_t n = names.size();
  while (n > 0 && names[n - 1].empty()) --n;
  return n;
}

std::unordered_map<std::string_view, uint64_t> positions(const std::vector<std::string>& names) {
  std::unordered_map<std::string_view, uint64_t> at;
  at.reserve(names.size());
  for (uint64_t i = 0; i < names.size(); ++i)
    if (!names[i].empty()) at.emplace(names[i], i);
  return at;
}

std::string quoted(const std::string& s) {
  return "\"" + s + "\"";
}

}  // namespace

FeatureNames make_feature_names(std::vector<std::string> names) {
  return std::make_shared<const std::vector<std::string>>(std::move(names));
}

std::string feature_names_problem(const std::vector<std::string>& names, uint64_t width) {
  if (named_length(names) > width)
    return "has " + std::to_string(named_length(names)) + " names, more than the " +
           std::to_string(width) + " features";
  std::unordered_map<std::string_view, uint64_t> seen;
  seen.reserve(names.size());
  for (uint64_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) continue;
    const auto [it, added] = seen.emplace(names[i], i);
    if (!added)
      return "entry " + std::to_string(i) + " (" + quoted(names[i]) + ") repeats entry " +
             std::to_string(it->second);
  }
  return "";
}

std::string first_name_difference(const std::vector<std::string>& expected,
                                  const std::vector<std::string>& given,
                                  const std::string& given_what) {
  const size_t n_expected = named_length(expected), n_given = named_length(given);
  const size_t common = std::min(n_expected, n_given);
  size_t i = 0;
  while (i < common && expected[i] == given[i]) ++i;
  if (i == n_expected && i == n_given) return "";
  // The first index where they part: say what the network's name there became.
  const auto in_given = positions(given);
  const auto in_expected = positions(expected);
  for (size_t j = i; j < std::max(n_expected, n_given); ++j) {
    if (j < n_expected && !expected[j].empty()) {
      const auto it = in_given.find(expected[j]);
      if (it == in_given.end())
        return "feature " + quoted(expected[j]) + " (index " + std::to_string(j) +
               " in the network) is missing from " + given_what;
      if (it->second != j)
        return "feature " + quoted(expected[j]) + " is index " + std::to_string(j) +
               " in the network but index " + std::to_string(it->second) + " in " + given_what;
    }
    if (j < n_given && !given[j].empty() && !in_expected.count(given[j]))
      return given_what + " has feature " + quoted(given[j]) + " (index " + std::to_string(j) +
             "), which the network does not know";
    if (j < n_given && !given[j].empty() && (j >= n_expected || expected[j].empty()))
      return "index " + std::to_string(j) + " has no name in the network but is " +
             quoted(given[j]) + " in " + given_what;
    if (j < n_expected && !expected[j].empty() && (j >= n_given || given[j].empty()))
      return "feature " + quoted(expected[j]) + " (index " + std::to_string(j) +
             " in the network) has no name in " + given_what;
  }
  return "";  // unreachable: the lists differ somewhere
}

std::vector<int64_t> match_names(const std::vector<std::string>& from,
                                 const std::vector<std::string>& to) {
  const auto at = positions(from);
  std::vector<int64_t> match(to.size(), -1);
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i].empty()) continue;
    const auto it = at.find(to[i]);
    if (it != at.end()) match[i] = int64_t(it->second);
  }
  return match;
}

NameMatchCounts count_matches(const std::vector<std::string>& from,
                              const std::vector<std::string>& to,
                              const std::vector<int64_t>& match) {
  NameMatchCounts c;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i].empty()) continue;
    if (match[i] >= 0)
      ++c.kept;
    else
      ++c.added;
  }
  uint64_t named_from = 0;
  for (const std::string& n : from) named_from += !n.empty();
  c.dropped = named_from - c.kept;
  return c;
}

}  // namespace nn
