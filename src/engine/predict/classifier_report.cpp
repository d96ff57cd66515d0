// Classifier accuracy and confusion matrix (see classifier_report.h).
#include "predict/classifier_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "core/error.h"

namespace nn {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Entries of a dense row that are not zero.
uint64_t dense_nonzeros(const ExampleSet& ds, uint64_t u) {
  const uint64_t f = ds.features();
  uint64_t n = 0;
  for (uint64_t j = 0; j < f; ++j) n += ds.dense[u * f + j] != 0.0f;
  return n;
}

std::string label_of(uint32_t c, const FeatureIndex* labels) {
  if (labels && c < labels->size() && !labels->label(c).empty()) return labels->label(c);
  return std::to_string(c);
}

}  // namespace

bool is_single_label(const ExampleSet& truth) {
  if (truth.examples == 0) return false;
  if (!truth.is_sparse() && truth.is_boolean()) return true;
  for (uint64_t e = 0; e < truth.examples; ++e) {
    const uint64_t u = truth.row(e);
    const uint64_t n =
        truth.is_sparse() ? truth.sparse_end[u] - truth.sparse_start[u] : dense_nonzeros(truth, u);
    if (n != 1) return false;
  }
  return true;
}

std::vector<int64_t> true_classes(const ExampleSet& truth, uint32_t classes,
                                  const std::string& where) {
  std::vector<int64_t> out(truth.examples, -1);
  const uint64_t f = truth.features();
  for (uint64_t e = 0; e < truth.examples; ++e) {
    const uint64_t u = truth.row(e);
    int64_t best = -1;
    float best_value = 0.0f;
    if (truth.is_sparse()) {
      for (uint64_t k = truth.sparse_start[u]; k < truth.sparse_end[u]; ++k) {
        const float v = truth.sparse_value.empty() ? 1.0f : truth.sparse_value[k];
        if (best < 0 || v > best_value) {
          best = truth.sparse_index[k];
          best_value = v;
        }
      }
    } else if (truth.is_boolean()) {
      const float id = truth.dense[u];
      if (!(id >= 0.0f) || id != std::floor(id))
        throw DataError(where + ": example " + std::to_string(e) + ": class id " +
                        std::to_string(id) + " is not a non-negative integer");
      best = static_cast<int64_t>(id);
    } else {
      for (uint64_t j = 0; j < f; ++j) {
        const float v = truth.dense[u * f + j];
        if (v != 0.0f && (best < 0 || v > best_value)) {
          best = static_cast<int64_t>(j);
          best_value = v;
        }
      }
    }
    if (best >= int64_t(classes))
      throw DataError(where + ": example " + std::to_string(e) + ": true class " +
                      std::to_string(best) + " is beyond the " + std::to_string(classes) +
                      " units of the scored layer");
    out[e] = best;
  }
  return out;
}

void ClassifierReport::add(int64_t truth, const uint32_t* ranked, uint32_t count) {
  if (truth < 0) return;
  ++examples_;
  const uint32_t predicted = count > 0 ? ranked[0] : kNone;
  if (predicted == kNone) {
    ++unranked_;
    return;
  }
  if (predicted == uint64_t(truth)) ++top1_;
  for (uint32_t j = 0; j < std::min(count, k_); ++j)
    if (ranked[j] == uint64_t(truth)) {
      ++topk_;
      break;
    }
  ++confusion_[uint64_t(truth) * classes_ + predicted];
}

uint64_t ClassifierReport::count(uint32_t truth, uint32_t predicted) const {
  auto it = confusion_.find(uint64_t(truth) * classes_ + predicted);
  return it == confusion_.end() ? 0 : it->second;
}

std::vector<std::string> ClassifierReport::format(const FeatureIndex* labels,
                                                  size_t max_classes) const {
  std::vector<std::string> lines;
  char buf[256];
  std::snprintf(buf, sizeof buf, "classifier: %llu examples, accuracy top-1 %.4f, top-%u %.4f",
                static_cast<unsigned long long>(examples_), top1(), k_, topk());
  lines.push_back(buf);
  if (unranked_)
    lines.push_back(std::to_string(unranked_) +
                    " examples had no candidate class left (all filtered) and count as wrong");
  std::set<uint32_t> seen;
  for (const auto& [key, n] : confusion_) {
    seen.insert(uint32_t(key / classes_));
    seen.insert(uint32_t(key % classes_));
  }
  if (seen.empty()) return lines;
  if (seen.size() > max_classes) {
    lines.push_back("confusion matrix not printed: " + std::to_string(seen.size()) +
                    " classes occur (more than " + std::to_string(max_classes) + ")");
    return lines;
  }
  const std::vector<uint32_t> cls(seen.begin(), seen.end());
  std::vector<std::string> names;
  size_t first_width = std::string("true\\pred").size();
  size_t width = 1;
  for (uint32_t c : cls) {
    names.push_back(label_of(c, labels));
    first_width = std::max(first_width, names.back().size());
    width = std::max(width, names.back().size());
  }
  for (const auto& [key, n] : confusion_) width = std::max(width, std::to_string(n).size());
  auto pad = [](const std::string& s, size_t w, bool left) {
    const std::string fill(w > s.size() ? w - s.size() : 0, ' ');
    return left ? s + fill : fill + s;
  };
  lines.push_back("confusion matrix (rows: true class, columns: predicted class):");
  std::string header = pad("true\\pred", first_width, true);
  for (const auto& n : names) header += "  " + pad(n, width, false);
  lines.push_back(header);
  for (size_t r = 0; r < cls.size(); ++r) {
    std::string row = pad(names[r], first_width, true);
    for (uint32_t c : cls) row += "  " + pad(std::to_string(count(cls[r], c)), width, false);
    lines.push_back(row);
  }
  return lines;
}

}  // namespace nn
