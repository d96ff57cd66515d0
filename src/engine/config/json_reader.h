// Shared machinery of the JSON network and CDL parsers: parsing text with line/column errors,
// walking objects with case-insensitive keys, typed value getters whose errors name the file, the
// JSON path, what was found and what was expected. Internal to config/ (nlohmann stays here).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/enum_names.h"

namespace nn::config_detail {

// Keeps the document's key order, so "the first unknown key" is the first one in the file.
using Json = nlohmann::ordered_json;

// Limits on configuration files (network JSON, CDL): real ones are a few KB and a few levels
// deep; these stop a hostile or mistaken file before it costs memory or stack.
constexpr size_t kMaxConfigBytes = size_t(16) << 20;
constexpr size_t kMaxJsonDepth = 256;

// Reads a whole file; throws IoError("<path>: cannot open <what>: <reason>"), ConfigError when
// it is larger than kMaxConfigBytes.
std::string read_text_file(const std::string& path, const char* what);

// True when `text` starts like a NetCDF file (classic "CDF" or HDF5-based netCDF-4).
bool looks_like_netcdf(const std::string& text);

// Parses JSON text (comments allowed, as DSSTNE's jsoncpp reader allowed them). Syntax errors
// throw ConfigError("<source>: line L, column C: invalid JSON: ..."); a key given twice in one
// object, ignoring case ("Name" and "name"), throws ConfigError naming its path; objects and
// arrays nested deeper than kMaxJsonDepth throw ConfigError naming the path where it happened.
Json parse_json_text(const std::string& text, const std::string& source);

// Directory part of a path ("a/b/c.cdl" -> "a/b"), "" when there is none.
std::string parent_directory(const std::string& path);

// `path` unchanged when empty, "-" or absolute; otherwise `base`/`path` (when base is not empty).
std::string resolve_path(const std::string& base, const std::string& path);

// One member of a JSON object, with the path used in messages ("Layers[2].Activation").
struct Member {
  std::string key;    // as written in the file
  std::string lower;  // lower-cased, for case-insensitive matching
  const Json* value = nullptr;
  std::string path;
};

std::string child_path(const std::string& parent, const std::string& key);
std::string index_path(const std::string& parent, size_t index);

// " (did you mean 'X'?)" for the name in a choices list ("A, B (b-alias), C") nearest to `text`,
// or "" when none is near.
std::string suggest_from_choices(const std::string& text, const std::string& choices);

// Typed access to JSON values; every failure throws ConfigError("<source>: <path>: <problem>").
class JsonReader {
 public:
  explicit JsonReader(std::string source);

  const std::string& source() const { return source_; }

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const;

  // `value` must be an object; returns its members in document order.
  std::vector<Member> members(const Json& value, const std::string& path) const;

  // Throws "<path>: unknown key; expected one of A, B, C" (plus a did-you-mean hint).
  [[noreturn]] void unknown_key(const Member& m, const std::vector<std::string>& valid) const;

  // Throws "<path>: expected <expected>, got <value>".
  [[noreturn]] void wrong_type(const Json& value, const std::string& path,
                               const std::string& expected) const;

  bool get_bool(const Json& value, const std::string& path) const;
  float get_float(const Json& value, const std::string& path) const;
  double get_double(const Json& value, const std::string& path) const;
  // An integral number (2 or 2.0) within [lo, hi].
  int64_t get_int(const Json& value, const std::string& path, int64_t lo, int64_t hi) const;
  std::string get_string(const Json& value, const std::string& path) const;
  // A string, or an array of strings; `allow_empty` admits [].
  std::vector<std::string> get_string_list(const Json& value, const std::string& path,
                                           bool allow_empty) const;

  template <class E>
  E get_enum(const Json& value, const std::string& path) const {
    if (!value.is_string()) wrong_type(value, path, "a string, one of " + enum_choices<E>());
    const std::string& text = value.get_ref<const std::string&>();
    if (auto parsed = enum_from_string<E>(text)) return *parsed;
    const std::string choices = enum_choices<E>();
    fail(path, "unknown \"" + text + "\"; expected one of " + choices +
                   suggest_from_choices(text, choices));
  }

  // Member overloads: the path comes with the member.
  bool get_bool(const Member& m) const { return get_bool(*m.value, m.path); }
  float get_float(const Member& m) const { return get_float(*m.value, m.path); }
  std::string get_string(const Member& m) const { return get_string(*m.value, m.path); }
  template <class E>
  E get_enum(const Member& m) const {
    return get_enum<E>(*m.value, m.path);
  }

  // Range checks with messages of the form "<path>: must be <rule>, got <value>".
  void require(bool ok, const std::string& path, const std::string& rule, double got) const;

  // A short rendering of a value for messages: true, 2.5, "abc", an object, an array.
  static std::string describe(const Json& value);

 private:
  std::string source_;
};

// Formats a float for a message with the fewest digits that identify it (0.1, not 0.100000001).
std::string format_number(double value);

// The double with the fewest significant digits that converts back to exactly `value`, so that
// written configs read 0.1 rather than 0.10000000149011612 yet round-trip bit for bit.
double shortest_double(float value);

}  // namespace nn::config_detail
