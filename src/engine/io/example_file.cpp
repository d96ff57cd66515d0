// Ranges of examples from a dataset file (see example_file.h).
#include "io/example_file.h"

#include <algorithm>

#include "io/isolated_read.h"
#include "io/netcdf_reader.h"

namespace nn {

struct ExampleFile::Vars {
  int start = -1, end = -1, index = -1, value = -1, data = -1, weight = -1;
  nc_type value_type = NC_FLOAT;
  uint64_t entries = 0;
  std::string sfx;
};

namespace {

size_t type_size(const NetcdfReader& r, nc_type t, const std::string& name) {
  size_t size = 1;
  r.check(nc_inq_type(r.id(), t, nullptr, &size), name);
  return size;
}

// Every dataset's description and its variables, each size checked against what the file can
// hold.
void open_headers(const NetcdfReader& r, std::vector<ExampleSet>& headers,
                  std::vector<ExampleFile::Vars>* vars_out) {
  const uint64_t count = r.uint_att("datasets");
  if (count == 0) r.fail("datasets", "is 0; expected at least one dataset");
  for (uint64_t n = 0; n < count; ++n) {
    ExampleFile::Vars v;
    v.sfx = std::to_string(n);
    std::string entries_dim;
    ExampleSet ds = read_dataset_header(r, n, v.entries, entries_dim);
    if (ds.is_indexed())
      r.fail("attributes" + v.sfx,
             "dataset '" + ds.name +
                 "' is Indexed (examples share rows through an index); reading it in ranges "
                 "of examples is not supported: read it whole (without --stream)");
    const std::string rows = "examplesDim" + v.sfx;
    nc_type t;
    if (ds.is_sparse()) {
      v.start = r.var("sparseStart" + v.sfx, ds.examples, rows, &t);
      v.end = r.var("sparseEnd" + v.sfx, ds.examples, rows, &t);
      v.index = r.var("sparseIndex" + v.sfx, v.entries, entries_dim, &t);
      if (!is_integer_type(t))
        r.fail("sparseIndex" + v.sfx,
               "has NetCDF type " + std::to_string(t) + "; expected an integer type");
      if (!ds.is_boolean()) v.value = r.var("sparseData" + v.sfx, v.entries, entries_dim, &t);
    } else {
      v.data = r.var("data" + v.sfx, v.entries, entries_dim, &t);
    }
    if (v.value >= 0 || v.data >= 0) {
      const std::string name = (v.value >= 0 ? "sparseData" : "data") + v.sfx;
      v.value_type = t;
      if (t == NC_CHAR ? ds.type != DataType::Char : !is_numeric_type(t))
        r.fail(name, "has NetCDF type " + std::to_string(t) + ", which dataType " +
                         to_string(ds.type) + " does not use");
    }
    if (ds.is_weighted()) v.weight = r.var("dataWeight" + v.sfx, ds.examples, rows, &t);
    if (vars_out) vars_out->push_back(v);
    headers.push_back(std::move(ds));
  }
}

}  // namespace

ExampleFile::ExampleFile(const std::string& path) : path_(path) {
  // An HDF5 file without a checksum has its headers read in a child first (io/isolated_read.h).
  read_isolated_first(path, [&] {
    NetcdfReader r(path, /*budget_checks=*/false);
    std::vector<ExampleSet> headers;
    open_headers(r, headers, nullptr);
  });
  reader_ = std::make_unique<NetcdfReader>(path, /*budget_checks=*/false);
  open_headers(*reader_, headers_, &vars_);
}

ExampleFile::~ExampleFile() = default;

uint64_t ExampleFile::memory_bytes(size_t n) const {
  const ExampleSet& ds = headers_[n];
  const uint64_t e = vars_[n].entries;
  uint64_t bytes = 0;
  if (ds.is_sparse())
    bytes = ds.examples * 16 + e * 4 + (ds.is_boolean() ? 0 : e * 4);
  else
    bytes = e * 4;
  if (ds.is_weighted()) bytes += ds.examples * 4;
  return bytes;
}

double ExampleFile::bytes_per_example(size_t n) const {
  return std::max(1.0,
                  double(memory_bytes(n)) / double(std::max<uint64_t>(1, headers_[n].examples)));
}

void ExampleFile::set_chunk_cache(uint64_t bytes) {
  std::vector<int> ids;
  for (const Vars& v : vars_)
    for (int id : {v.start, v.end, v.index, v.value, v.data, v.weight})
      if (id >= 0) ids.push_back(id);
  if (ids.empty()) return;
  const size_t each = size_t(std::max<uint64_t>(bytes / ids.size(), 1 << 20));
  // Classic files have no chunk cache and answer NC_ENOTNC4: nothing to size there.
  for (int id : ids) nc_set_var_chunk_cache(reader_->id(), id, each, 1009, 0.75f);
}

ExampleSet ExampleFile::read(size_t n, const std::vector<uint64_t>& ids,
                             ExampleReadStats* stats) const {
  const NetcdfReader& r = *reader_;
  const Vars& v = vars_[n];
  const ExampleSet& h = headers_[n];
  ExampleSet ds;
  ds.name = h.name;
  ds.type = h.type;
  ds.attributes = h.attributes;
  ds.kind = h.kind;
  ds.dimensions = h.dimensions;
  ds.width = h.width, ds.height = h.height, ds.length = h.length;
  ds.examples = ds.unique_examples = ids.size();
  ExampleReadStats st;
  st.examples = ids.size();
  const uint64_t features = h.features();
  const size_t value_size = v.value >= 0 || v.data >= 0 ? type_size(r, v.value_type, "values") : 0;

  // Values [offset, offset + count) of a value variable, appended as floats.
  std::vector<char> text;
  auto read_values = [&](int var, const std::string& name, uint64_t offset, uint64_t count,
                         std::vector<float>& out) {
    const size_t at = out.size();
    out.resize(at + count);
    if (count == 0) return;
    const size_t start = offset, len = count;
    int rc;
    if (v.value_type == NC_CHAR) {
      text.resize(count);
      rc = nc_get_vara_text(r.id(), var, &start, &len, text.data());
      for (uint64_t i = 0; i < count; ++i) out[at + i] = static_cast<signed char>(text[i]);
    } else {
      rc = nc_get_vara_float(r.id(), var, &start, &len, out.data() + at);
    }
    if (rc == NC_ERANGE) r.fail(name, "holds values outside the float range");
    r.check(rc, name);
    st.bytes += count * value_size, ++st.ranges;
  };

  std::vector<unsigned long long> starts, ends;
  for (size_t i = 0; i < ids.size();) {
    // A run of consecutive examples [a, b).
    size_t j = i + 1;
    while (j < ids.size() && ids[j] == ids[j - 1] + 1) ++j;
    const uint64_t a = ids[i], b = ids[j - 1] + 1;
    if (b > h.examples || (i > 0 && a <= ids[i - 1]))
      throw DataError(path_ + ": examples asked out of order or beyond " +
                      std::to_string(h.examples));
    const size_t first = a, count = b - a;
    if (h.is_sparse()) {
      starts.resize(count), ends.resize(count);
      r.check(nc_get_vara_ulonglong(r.id(), v.start, &first, &count, starts.data()),
              "sparseStart" + v.sfx);
      r.check(nc_get_vara_ulonglong(r.id(), v.end, &first, &count, ends.data()),
              "sparseEnd" + v.sfx);
      st.bytes += 2 * count * 8, st.ranges += 2;
      for (size_t k = 0; k < count;) {
        // Examples whose entries follow each other are read as one range.
        size_t m = k + 1;
        while (m < count && starts[m] == ends[m - 1] && starts[m] <= ends[m]) ++m;
        const uint64_t lo = starts[k], hi = ends[m - 1];
        for (size_t q = k; q < m; ++q)
          if (starts[q] > ends[q] || ends[q] > v.entries)
            r.fail("sparseStart" + v.sfx + ", sparseEnd" + v.sfx,
                   "example " + std::to_string(a + q) + " has entries [" +
                       std::to_string(starts[q]) + ", " + std::to_string(ends[q]) +
                       "), beyond the " + std::to_string(v.entries) + " entries");
        const uint64_t base = ds.sparse_index.size();
        for (size_t q = k; q < m; ++q) {
          ds.sparse_start.push_back(base + (starts[q] - lo));
          ds.sparse_end.push_back(base + (ends[q] - lo));
        }
        if (hi > lo) {
          ds.sparse_index.resize(base + (hi - lo));
          const size_t off = lo, len = hi - lo;
          const int rc =
              nc_get_vara_uint(r.id(), v.index, &off, &len, ds.sparse_index.data() + base);
          if (rc == NC_ERANGE)
            r.fail("sparseIndex" + v.sfx, "holds negative or too large values for an index");
          r.check(rc, "sparseIndex" + v.sfx);
          st.bytes += len * 4;
          ++st.ranges;
          if (v.value >= 0)
            read_values(v.value, "sparseData" + v.sfx, lo, hi - lo, ds.sparse_value);
        }
        k = m;
      }
    } else {
      const uint64_t width = h.is_boolean() ? 1 : features;
      read_values(v.data, "data" + v.sfx, a * width, count * width, ds.dense);
    }
    if (v.weight >= 0) {
      const size_t at = ds.example_weight.size();
      ds.example_weight.resize(at + count);
      r.check(nc_get_vara_float(r.id(), v.weight, &first, &count, ds.example_weight.data() + at),
              "dataWeight" + v.sfx);
      st.bytes += count * 4, ++st.ranges;
    }
    i = j;
  }
  ds.validate(path_, v.sfx);
  if (stats) stats->add(st);
  return ds;
}

}  // namespace nn
