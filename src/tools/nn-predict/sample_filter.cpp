// Filter file parsing.
#include "nn-predict/sample_filter.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "core/error.h"

namespace nn::tool {

namespace {

// Adds the lines of one filter file to `rows`.
void load_filter_file(const std::string& path, const FeatureIndex& samples,
                      const FeatureIndex& items, std::unordered_map<uint64_t, FilterRow>& rows,
                      uint64_t& skip) {
  std::ifstream in(path);
  if (!in) throw IoError(path + ": cannot open filter file");
  std::string line;
  uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos)
      throw DataError(path + ":" + std::to_string(line_no) + ": expected sample<TAB>items");
    const int64_t sample = samples.find(line.substr(0, tab));
    if (sample < 0) {
      ++skip;
      continue;
    }
    FilterRow& row = rows[uint64_t(sample)];
    size_t pos = tab + 1;
    while (pos <= line.size()) {
      size_t end = line.find(':', pos);
      if (end == std::string::npos) end = line.size();
      std::string_view tok(line.data() + pos, end - pos);
      pos = end + 1;
      if (tok.empty()) continue;
      const size_t comma = tok.find(',');
      const std::string label(tok.substr(0, comma));
      float value = 0.0f;
      if (comma != std::string_view::npos) {
        std::string_view v = tok.substr(comma + 1);
        const size_t comma2 = v.find(',');
        if (comma2 != std::string_view::npos) v = v.substr(0, comma2);
        auto r = std::from_chars(v.data(), v.data() + v.size(), value);
        if (r.ec != std::errc())
          throw DataError(path + ":" + std::to_string(line_no) + ": bad value '" + std::string(v) +
                          "' for item '" + label + "'");
      }
      const int64_t item = items.find(label);
      if (item < 0) {
        ++skip;
        continue;
      }
      row.items.push_back(uint32_t(item));
      row.values.push_back(value);
    }
  }
  if (in.bad()) throw IoError(path + ": read error");
}

}  // namespace

std::unordered_map<uint64_t, FilterRow> load_sample_filter(const std::string& path,
                                                           const FeatureIndex& samples,
                                                           const FeatureIndex& items,
                                                           uint64_t* skipped) {
  namespace fs = std::filesystem;
  std::unordered_map<uint64_t, FilterRow> rows;
  uint64_t skip = 0;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    // DSSTNE reads every file of a filter directory; sorted so results do not depend on the
    // directory's order.
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.is_regular_file()) files.push_back(entry.path().string());
    if (ec) throw IoError(path + ": cannot list filter directory: " + ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) load_filter_file(f, samples, items, rows, skip);
  } else {
    load_filter_file(path, samples, items, rows, skip);
  }
  for (auto& [sample, row] : rows) {
    std::vector<size_t> order(row.items.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return row.items[a] < row.items[b]; });
    FilterRow sorted;
    for (size_t i : order) {
      sorted.items.push_back(row.items[i]);
      sorted.values.push_back(row.values[i]);
    }
    row = std::move(sorted);
  }
  if (skipped) *skipped = skip;
  return rows;
}

}  // namespace nn::tool
