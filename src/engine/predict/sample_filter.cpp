// Filter files and their application to scores (see sample_filter.h).
#include "predict/sample_filter.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "core/error.h"
#include "io/netcdf_dataset.h"

namespace nn {

namespace {

// What a filter may be, for the messages of a file that is none of them.
const char* const kFilterForms =
    "sample<TAB>item[,value]:item... lines or sample,item[,...] rows such as a ratings CSV; a "
    "NetCDF dataset file such as the input dataset also works as a filter, row e filtering "
    "example e";

// Adds the lines of one filter file to `rows`: sample<TAB>items lines or sample,item rows.
void load_filter_file(const std::string& path, const FeatureIndex& samples,
                      const FeatureIndex& items, std::unordered_map<uint64_t, FilterRow>& rows,
                      uint64_t& skip) {
  std::ifstream in(path);
  if (!in)
    throw IoError(path + ": cannot open filter file (a filter is a text file of " + kFilterForms +
                  ")");
  std::string line;
  uint64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      // A row of a ratings CSV (sample,item[,rating,...]), as nn-generate --rows reads them: its
      // item is filtered; the columns after it are not filter values. A header line's sample is
      // not in the sample index, so it is skipped like any unknown sample.
      const size_t comma = line.find(',');
      if (comma == std::string::npos)
        throw DataError(path + ":" + std::to_string(line_no) + ": expected " + kFilterForms);
      const size_t end = line.find(',', comma + 1);
      const int64_t sample = samples.find(line.substr(0, comma));
      const int64_t item = items.find(
          line.substr(comma + 1, end == std::string::npos ? std::string::npos : end - comma - 1));
      if (sample < 0 || item < 0) {
        ++skip;
        continue;
      }
      FilterRow& row = rows[uint64_t(sample)];
      row.items.push_back(uint32_t(item));
      row.values.push_back(0.0f);
      continue;
    }
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

SampleFilters load_dataset_filter(const std::string& path, const std::string& dataset,
                                  uint64_t examples, uint32_t units) {
  const std::vector<ExampleSet> sets = read_datasets(path);
  const ExampleSet* chosen = nullptr;
  size_t sparse = 0;
  for (const auto& s : sets) {
    if (!s.is_sparse()) continue;
    ++sparse;
    if (!chosen || s.name == dataset) chosen = &s;
  }
  if (!chosen)
    throw DataError(path + ": a filter dataset must be sparse (one item list per example)");
  if (sparse > 1 && chosen->name != dataset)
    throw DataError(path + ": holds several sparse datasets and none is named '" + dataset +
                    "'; give a file with one");
  if (chosen->examples != examples)
    throw DataError(path + ": filter dataset '" + chosen->name + "' has " +
                    std::to_string(chosen->examples) + " examples, but " +
                    std::to_string(examples) + " are scored (row e filters example e)");
  if (chosen->features() > units)
    throw DataError(path + ": filter dataset '" + chosen->name + "' is " +
                    std::to_string(chosen->features()) + " items wide, but the scored layer has " +
                    std::to_string(units) + " units");
  SampleFilters rows;
  std::vector<size_t> order;
  for (uint64_t e = 0; e < examples; ++e) {
    const uint64_t u = chosen->row(e);
    const uint64_t begin = chosen->sparse_start[u], end = chosen->sparse_end[u];
    if (begin == end) continue;
    order.resize(end - begin);
    std::iota(order.begin(), order.end(), size_t(begin));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return chosen->sparse_index[a] < chosen->sparse_index[b];
    });
    FilterRow& row = rows[e];
    for (size_t i : order) {
      if (!row.items.empty() && row.items.back() == chosen->sparse_index[i]) continue;
      row.items.push_back(chosen->sparse_index[i]);
      row.values.push_back(chosen->sparse_value.empty() ? 1.0f : chosen->sparse_value[i]);
    }
  }
  return rows;
}

RowFilter row_filter(const SampleFilters& filters, uint64_t example, bool multiply) {
  RowFilter f;
  auto it = filters.find(example);
  if (it == filters.end()) return f;
  if (multiply) {
    f.scale_index = it->second.items.data();
    f.scale_value = it->second.values.data();
    f.scaled = it->second.items.size();
    f.exclude = it->second.excluded.data();
    f.excluded = it->second.excluded.size();
  } else {
    f.exclude = it->second.items.data();
    f.excluded = it->second.items.size();
  }
  return f;
}

const float* apply_filters(const SampleFilters& filters, bool multiply, uint64_t first,
                           uint32_t rows, uint32_t units, const float* scores,
                           std::vector<float>& scaled,
                           std::vector<const std::vector<uint32_t>*>& excluded) {
  excluded.assign(rows, nullptr);
  bool multiplied = false;
  for (uint32_t r = 0; r < rows; ++r) {
    auto it = filters.find(first + r);
    if (it == filters.end()) continue;
    if (!multiply) {
      excluded[r] = &it->second.items;
      continue;
    }
    if (!it->second.excluded.empty()) excluded[r] = &it->second.excluded;
    // The batch is copied once, at the first row that needs a multiplier.
    if (!multiplied) scaled.assign(scores, scores + size_t(rows) * units);
    multiplied = true;
    for (size_t j = 0; j < it->second.items.size(); ++j)
      if (it->second.items[j] < units)
        scaled[size_t(r) * units + it->second.items[j]] *= it->second.values[j];
  }
  return multiplied ? scaled.data() : scores;
}

}  // namespace nn
