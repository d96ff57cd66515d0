// Spelling suggestions for error messages: the known name nearest to a misspelt one ("did you
// mean 'Hidden'?"), by case-insensitive edit distance. Header-only; used by the config parsers
// (keys, layer references, enum values) and by dataset binding (DataSet names).
#pragma once

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>
#include <vector>

namespace nn {

// Levenshtein distance between a and b, ignoring ASCII case.
inline size_t edit_distance_nocase(const std::string& a, const std::string& b) {
  auto lower = [](char c) { return char(std::tolower(static_cast<unsigned char>(c))); };
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t change = lower(a[i - 1]) != lower(b[j - 1]) ? 1 : 0;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + change});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The candidate nearest to `word` when it is close enough to be a plausible typo (at most 2
// edits, and fewer edits than the candidate has characters), else "". The first of equally near
// candidates wins, so callers list canonical names first. A candidate equal to `word` is skipped
// (it is not a correction).
inline std::string nearest_name(const std::string& word,
                                const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const auto& c : candidates) {
    if (c == word) continue;
    const size_t d = edit_distance_nocase(word, c);
    if (d < best_distance && d <= 2 && d < c.size()) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

// " (did you mean 'X'?)" for the nearest candidate, or "" when none is near.
inline std::string did_you_mean(const std::string& word,
                                const std::vector<std::string>& candidates) {
  const std::string best = nearest_name(word, candidates);
  return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

}  // namespace nn
