// Label <-> index maps for features and samples, and their "label<TAB>index" files (DSSTNE's
// loadIndex/exportIndex; man nn-generate, INDEX FILES). Files are validated strictly (a bad index
// file would silently shift every feature column) and written atomically, sorted by index, so
// diffs stay readable.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/text_examples.h"

namespace nn {

namespace {

constexpr uint64_t kIndexBits = 40;
constexpr uint64_t kIndexMask = (uint64_t(1) << kIndexBits) - 1;

uint64_t hash_of(std::string_view s) {
  return std::hash<std::string_view>{}(s);
}

uint64_t tag_of(uint64_t h) {
  return (h >> kIndexBits) << kIndexBits;  // the hash's top 24 bits, where the slot keeps them
}

}  // namespace

size_t FeatureIndex::slot_of(std::string_view label, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  const uint64_t tag = tag_of(h);
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const uint64_t slot = slots_[i];
    if (slot == 0) return i;
    if ((slot & ~kIndexMask) == tag && view((slot & kIndexMask) - 1) == label) return i;
  }
}

void FeatureIndex::grow() {
  std::vector<uint64_t> old(std::max<size_t>(16, slots_.size() * 2));
  old.swap(slots_);
  const size_t mask = slots_.size() - 1;
  for (const uint64_t slot : old) {
    if (slot == 0) continue;
    const uint64_t h = hash_of(view((slot & kIndexMask) - 1));
    size_t i = h & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

void FeatureIndex::add_at(std::string_view label, uint64_t idx, uint64_t h) {
  if (idx >= kIndexMask) throw DataError("more than 2^40 labels in one index");
  if (label.size() > UINT32_MAX) throw DataError("a label longer than 4 GB");
  if (idx >= length_.size()) {
    offset_.resize(idx + 1, 0);
    length_.resize(idx + 1, 0);
  }
  offset_[idx] = arena_.size();
  length_[idx] = uint32_t(label.size());
  arena_.append(label.data(), label.size());
  if (2 * (count_ + 1) > slots_.size()) grow();
  slots_[slot_of(label, h)] = tag_of(h) | (idx + 1);
  ++count_;
}

int64_t FeatureIndex::lookup(const std::string& label, bool allow_new) {
  const uint64_t h = hash_of(label);
  if (!slots_.empty()) {
    const uint64_t slot = slots_[slot_of(label, h)];
    if (slot != 0) return static_cast<int64_t>((slot & kIndexMask) - 1);
  }
  // "" marks gaps, so it can never be a label.
  if (!allow_new || label.empty()) return -1;
  const uint64_t idx = size();
  add_at(label, idx, h);
  changed_ = true;
  return static_cast<int64_t>(idx);
}

int64_t FeatureIndex::find(const std::string& label) const {
  if (slots_.empty()) return -1;
  const uint64_t slot = slots_[slot_of(label, hash_of(label))];
  return slot == 0 ? -1 : static_cast<int64_t>((slot & kIndexMask) - 1);
}

void FeatureIndex::insert(const std::string& label, uint64_t idx, const std::string& where) {
  if (label.empty()) throw DataError(where + ": empty label");
  const int64_t existing = find(label);
  if (existing >= 0)
    throw DataError(where + ": duplicate label \"" + label + "\" (already has index " +
                    std::to_string(existing) + ")");
  if (idx < size() && length_[idx] != 0)
    throw DataError(where + ": index " + std::to_string(idx) + " of \"" + label +
                    "\" is already used by \"" + this->label(idx) + "\"");
  add_at(label, idx, hash_of(label));
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
    const std::string_view label = index.view(i);
    if (label.empty()) continue;  // gap left by a loaded file
    if (label.find_first_of("\t\n\r") != std::string_view::npos)
      throw DataError(path + ": label \"" + std::string(label) + "\" (index " + std::to_string(i) +
                      ") contains a TAB or line break and cannot be written");
    out += label;
    out += '\t';
    const auto res = std::to_chars(num, num + sizeof num, i);
    out.append(num, res.ptr);
    out += '\n';
  }
  return out;
}

void write_index(AtomicFile& out, const FeatureIndex& index) {
  // In pieces of about 1 MiB: a sample index of tens of millions of labels would otherwise be
  // one string of hundreds of megabytes beside the index itself.
  std::string piece;
  char num[24];
  for (uint64_t i = 0; i < index.size(); ++i) {
    const std::string_view label = index.view(i);
    if (label.empty()) continue;  // gap left by a loaded file
    if (label.find_first_of("\t\n\r") != std::string_view::npos)
      throw DataError(out.target() + ": label \"" + std::string(label) + "\" (index " +
                      std::to_string(i) + ") contains a TAB or line break and cannot be written");
    piece += label;
    piece += '\t';
    const auto res = std::to_chars(num, num + sizeof num, i);
    piece.append(num, res.ptr);
    piece += '\n';
    if (piece.size() >= (size_t(1) << 20)) {
      out.write(piece);
      piece.clear();
    }
  }
  out.write(piece);
}

void save_index(const std::string& path, const FeatureIndex& index) {
  write_file_atomically(path, format_index(path, index));
}

}  // namespace nn
