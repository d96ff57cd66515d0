// Dataset headers (see netcdf_reader.h).
#include "io/netcdf_reader.h"

#include "io/netcdf_strings.h"

namespace nn {

ExampleSet read_dataset_header(const NetcdfReader& r, uint64_t n, uint64_t& entries,
                               std::string& entries_dim) {
  const std::string sfx = std::to_string(n);
  ExampleSet ds;
  ds.name = r.text_att("name" + sfx);
  // DSSTNE's engine writes `datatypeN` although its reader wants `dataTypeN`; take either.
  const std::string type_att = r.has_att("dataType" + sfx) || !r.has_att("datatype" + sfx)
                                   ? "dataType" + sfx
                                   : "datatype" + sfx;
  const uint64_t type = r.uint_att(type_att);
  if (type > uint64_t(DataType::Char))
    r.fail(type_att, "is " + std::to_string(type) + "; expected a DSSTNE data type code 0..9");
  ds.type = static_cast<DataType>(type);
  const uint64_t attributes = r.uint_att("attributes" + sfx);
  if (attributes > std::numeric_limits<uint32_t>::max())
    r.fail("attributes" + sfx, "is " + std::to_string(attributes) + "; expected a bit mask");
  ds.attributes = static_cast<uint32_t>(attributes);
  if (r.has_att("kind" + sfx)) {
    const uint64_t kind = r.uint_att("kind" + sfx);  // informational only, as in DSSTNE
    ds.kind = kind <= uint64_t(DataKind::Audio) ? static_cast<DataKind>(kind) : DataKind::Numeric;
  }
  const uint64_t dims = r.uint_att("dimensions" + sfx);
  if (dims < 1 || dims > 3)
    r.fail("dimensions" + sfx, "is " + std::to_string(dims) + "; expected 1, 2 or 3");
  ds.dimensions = static_cast<int>(dims);
  auto size_att = [&](const std::string& name) {
    const uint64_t v = r.uint_att(name);
    if (v < 1 || v > std::numeric_limits<uint32_t>::max())
      r.fail(name, "is " + std::to_string(v) + "; expected 1..4294967295");
    return static_cast<uint32_t>(v);
  };
  ds.width = size_att("width" + sfx);
  if (dims > 1) ds.height = size_att("height" + sfx);
  if (dims > 2) ds.length = size_att("length" + sfx);
  // Features are addressed with 32-bit indices (sparseIndex, layer units).
  const auto features = checked_mul(uint64_t(ds.width) * ds.height, ds.length);
  if (!features || *features > std::numeric_limits<uint32_t>::max())
    r.fail("width" + sfx, "width x height x length = " + std::to_string(ds.width) + " x " +
                              std::to_string(ds.height) + " x " + std::to_string(ds.length) +
                              " features; at most 4294967295 fit the 32-bit feature indices");

  ds.examples = r.dim("examplesDim" + sfx);
  ds.unique_examples = ds.examples;
  if (ds.is_indexed() && r.has_dim("uniqueExamplesDim" + sfx))
    ds.unique_examples = r.dim("uniqueExamplesDim" + sfx);
  const std::string rows_why = ds.is_indexed() ? "uniqueExamplesDim" + sfx : "examplesDim" + sfx;

  if (ds.is_sparse()) {
    entries_dim = "sparseDataDim" + sfx;
    entries = r.dim(entries_dim);
  } else {
    entries_dim = "dataDim" + sfx;
    entries = r.dim(entries_dim);
    const std::optional<uint64_t> expected =
        ds.is_boolean() ? ds.unique_examples : checked_mul(ds.unique_examples, ds.features());
    if (!expected || entries != *expected)
      r.fail(entries_dim,
             "is " + std::to_string(entries) + "; expected " +
                 (expected ? std::to_string(*expected) : std::string("more than 2^64")) +
                 (ds.is_boolean() ? " (one class id per example)" : " (examples x features)"));
  }
  // The features' names (DSSTNE's test helper and our writers): optional.
  const std::string names_var = "indToFeature" + sfx;
  if (has_variable(r.id(), names_var)) {
    std::vector<std::string> names = read_string_variable(r.id(), names_var, r.path());
    const std::string problem = feature_names_problem(names, ds.features());
    if (!problem.empty()) r.fail(names_var, problem);
    ds.feature_names = make_feature_names(std::move(names));
  }
  return ds;
}

}  // namespace nn
