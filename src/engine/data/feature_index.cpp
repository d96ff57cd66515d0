// Label <-> index maps for features and samples, and their "label<TAB>index" files (DSSTNE's
// loadIndex/exportIndex; man nn-generate, INDEX FILES). Files are validated strictly (a bad index
// file would silently shift every feature column) and written atomically, sorted by index, so
// diffs stay readable.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/text_examples.h"

namespace nn {

int64_t FeatureIndex::lookup(const std::string& label, bool allow_new) {
  auto it = map_.find(label);
  if (it != map_.end()) return static_cast<int64_t>(it->second);
  // "" marks gaps in labels_, so it can never be a label.
  if (!allow_new || label.empty()) return -1;
  const uint64_t idx = labels_.size();
  map_.emplace(label, idx);
  labels_.push_back(label);
  changed_ = true;
  return static_cast<int64_t>(idx);
}

int64_t FeatureIndex::find(const std::string& label) const {
  auto it = map_.find(label);
  return it == map_.end() ? -1 : static_cast<int64_t>(it->second);
}

void FeatureIndex::insert(const std::string& label, uint64_t idx, const std::string& where) {
  if (label.empty()) throw DataError(where + ": empty label");
  auto it = map_.find(label);
  if (it != map_.end())
    throw DataError(where + ": duplicate label \"" + label + "\" (already has index " +
                    std::to_string(it->second) + ")");
  if (idx < labels_.size() && !labels_[idx].empty())
    throw DataError(where + ": index " + std::to_string(idx) + " of \"" + label +
                    "\" is already used by \"" + labels_[idx] + "\"");
  if (idx >= labels_.size()) labels_.resize(idx + 1);
  labels_[idx] = label;
  map_.emplace(label, idx);
}

namespace {

std::string read_whole_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw DataError(path + ": cannot open: " + std::strerror(errno));
  std::string data;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.append(buf, n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) throw DataError(path + ": read error");
  return data;
}

}  // namespace

FeatureIndex load_index(const std::string& path) {
  const std::string data = read_whole_file(path);
  const uint64_t lines = std::count(data.begin(), data.end(), '\n') + 1;
  // Indices are dense 0..n-1 in files we or DSSTNE write; a huge index is a corrupt file and
  // would otherwise make the label table allocate gigabytes.
  const uint64_t max_index = std::max<uint64_t>(uint64_t(1) << 20, 16 * lines);

  FeatureIndex index;
  std::string_view rest(data);
  uint64_t line_no = 0;
  std::string label;
  while (!rest.empty()) {
    ++line_no;
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    const size_t tab = line.find('\t');
    const size_t fields = std::count(line.begin(), line.end(), '\t') + 1;
    if (fields != 2)
      throw DataError(where + ": expected \"label<TAB>index\" (2 tab-separated fields), found " +
                      std::to_string(fields) + " field(s)");
    const std::string_view name = line.substr(0, tab), number = line.substr(tab + 1);
    if (name.empty()) throw DataError(where + ": empty label before the TAB");
    uint64_t idx = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), idx);
    if (number.empty() || ec != std::errc() || end != number.data() + number.size())
      throw DataError(where + ": index \"" + std::string(number) +
                      "\" is not a non-negative integer");
    if (idx > max_index)
      throw DataError(where + ": index " + std::to_string(idx) + " is far beyond the " +
                      std::to_string(lines) + " lines of the file; expected dense indices");
    label.assign(name.data(), name.size());
    index.insert(label, idx, where);
  }
  index.clear_changed();
  return index;
}

std::string format_index(const std::string& path, const FeatureIndex& index) {
  std::string out;
  out.reserve(index.size() * 16);
  char num[24];
  for (uint64_t i = 0; i < index.size(); ++i) {
    const std::string& label = index.label(i);
    if (label.empty()) continue;  // gap left by a loaded file
    if (label.find_first_of("\t\n\r") != std::string::npos)
      throw DataError(path + ": label \"" + label + "\" (index " + std::to_string(i) +
                      ") contains a TAB or line break and cannot be written");
    out += label;
    out += '\t';
    const auto res = std::to_chars(num, num + sizeof num, i);
    out.append(num, res.ptr);
    out += '\n';
  }
  return out;
}

void save_index(const std::string& path, const FeatureIndex& index) {
  write_file_atomically(path, format_index(path, index));
}

}  // namespace nn
