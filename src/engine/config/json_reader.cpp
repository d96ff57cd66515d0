// JSON parsing helpers for the config layer: line/column syntax errors, case-insensitive duplicate
// key detection, typed getters with path-qualified messages, and compact number formatting.
#include "config/json_reader.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <utility>

#include "core/error.h"
#include "core/nearest_name.h"

namespace nn::config_detail {

std::string read_text_file(const std::string& path, const char* what) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw IoError(path + ": cannot open " + what + ": " + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    if (text.size() + n > kMaxConfigBytes) {
      std::fclose(file);
      throw ConfigError(path + ": " + what + " is larger than " +
                        std::to_string(kMaxConfigBytes >> 20) +
                        " MiB, the limit for configuration files (not a configuration file?)");
    }
    text.append(buffer, n);
  }
  const bool failed = std::ferror(file) != 0;
  const int err = errno;  // fread sets errno, e.g. EISDIR for a directory
  std::fclose(file);
  if (failed) throw IoError(path + ": cannot read " + what + ": " + std::strerror(err));
  return text;
}

std::string child_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string index_path(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

namespace {

// Where the parser is inside the document, kept while parsing so that a duplicate key can be
// reported with its path (nlohmann's callback API gives events, not positions).
struct Frame {
  bool is_object = false;
  size_t index = 0;                         // arrays: element being parsed
  std::string key;                          // objects: member being parsed
  std::map<std::string, std::string> seen;  // objects: lower-cased key -> key as written
};

std::string frames_path(const std::vector<Frame>& frames) {
  std::string path;
  for (const auto& f : frames) {
    if (f.is_object) {
      if (!f.key.empty()) path = child_path(path, f.key);
    } else {
      path = index_path(path, f.index);
    }
  }
  return path;
}

// A path for a message: "(top level)" when empty, its start and end when very long.
std::string short_path(const std::string& path) {
  if (path.empty()) return "(top level)";
  if (path.size() <= 80) return path;
  return path.substr(0, 40) + "..." + path.substr(path.size() - 37);
}

// 1-based line and column of the byte at 0-based offset `pos`.
std::pair<size_t, size_t> line_column(const std::string& text, size_t pos) {
  pos = std::min(pos, text.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return {line, pos - line_start + 1};
}

// nlohmann's message minus its "[json.exception.parse_error.101] parse error at ...: " prefix.
std::string syntax_detail(const std::string& what) {
  const size_t at = what.find("parse error");
  if (at == std::string::npos) return what;
  const size_t colon = what.find(": ", at);
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

}  // namespace

bool looks_like_netcdf(const std::string& text) {
  return text.compare(0, 3, "CDF") == 0 || text.compare(0, 4, "\x89HDF") == 0;
}

Json parse_json_text(const std::string& text, const std::string& source) {
  std::vector<Frame> frames;
  using Event = Json::parse_event_t;
  const Json::parser_callback_t on_event = [&](int /*depth*/, Event event, Json& parsed) {
    const auto element_done = [&] {
      if (!frames.empty() && !frames.back().is_object) ++frames.back().index;
    };
    // Depth is checked as each level opens, so a hostile file never gets deeper than the limit
    // into the parser or into the code that walks the result.
    if ((event == Event::object_start || event == Event::array_start) &&
        frames.size() >= kMaxJsonDepth)
      throw ConfigError(source + ": " + short_path(frames_path(frames)) +
                        ": objects and arrays nested deeper than " + std::to_string(kMaxJsonDepth) +
                        " levels (the limit for configuration files)");
    switch (event) {
      case Event::object_start:
        frames.push_back(Frame{true, 0, {}, {}});
        break;
      case Event::array_start:
        frames.push_back(Frame{false, 0, {}, {}});
        break;
      case Event::key: {
        Frame& top = frames.back();
        top.key = parsed.get<std::string>();
        auto [it, inserted] = top.seen.emplace(to_lower(top.key), top.key);
        if (!inserted) {
          throw ConfigError(source + ": " + frames_path(frames) + ": key given twice (as \"" +
                            it->second + "\" and \"" + top.key + "\"; keys are case-insensitive)");
        }
        break;
      }
      case Event::object_end:
      case Event::array_end:
        frames.pop_back();
        element_done();
        break;
      case Event::value:
        element_done();
        break;
    }
    return true;
  };
  try {
    return Json::parse(text, on_event, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    const auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    throw ConfigError(source + ": line " + std::to_string(line) + ", column " +
                      std::to_string(column) + ": invalid JSON: " + syntax_detail(e.what()));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond double's range (1e400): nlohmann reports it without a position, so the
    // message names the JSON path the parser was in. (Found by fuzzing: it escaped untyped.)
    const std::string what = e.what();
    const size_t prefix = what.find("] ");
    const std::string path = frames_path(frames);
    throw ConfigError(
        source + ": " + (path.empty() ? std::string("(top level)") : path) +
        ": invalid JSON: " + (prefix == std::string::npos ? what : what.substr(prefix + 2)));
  }
}

std::string parent_directory(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

std::string resolve_path(const std::string& base, const std::string& path) {
  if (path.empty() || path == "-" || base.empty()) return path;
  const std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(base) / p).string();
}

JsonReader::JsonReader(std::string source) : source_(std::move(source)) {}

void JsonReader::fail(const std::string& path, const std::string& problem) const {
  throw ConfigError(source_ + ": " + (path.empty() ? std::string("(top level)") : path) + ": " +
                    problem);
}

std::vector<Member> JsonReader::members(const Json& value, const std::string& path) const {
  if (!value.is_object()) wrong_type(value, path, "an object");
  std::vector<Member> out;
  for (auto it = value.begin(); it != value.end(); ++it)
    out.push_back(Member{it.key(), to_lower(it.key()), &it.value(), child_path(path, it.key())});
  return out;
}

void JsonReader::unknown_key(const Member& m, const std::vector<std::string>& valid) const {
  std::string list;
  for (const auto& name : valid) list += (list.empty() ? "" : ", ") + name;
  const std::string suggestion = nearest_name(m.key, valid);
  std::string problem = "unknown key; expected one of " + list;
  if (!suggestion.empty()) problem += " (did you mean " + suggestion + "?)";
  fail(m.path, problem);
}

std::string suggest_from_choices(const std::string& text, const std::string& choices) {
  std::vector<std::string> names;
  std::string current;
  for (char c : choices + ",") {
    if (c == ',' || c == '(' || c == ')') {
      const size_t a = current.find_first_not_of(' '), b = current.find_last_not_of(' ');
      if (a != std::string::npos) names.push_back(current.substr(a, b - a + 1));
      current.clear();
    } else {
      current += c;
    }
  }
  return did_you_mean(text, names);
}

void JsonReader::wrong_type(const Json& value, const std::string& path,
                            const std::string& expected) const {
  fail(path, "expected " + expected + ", got " + describe(value));
}

bool JsonReader::get_bool(const Json& value, const std::string& path) const {
  if (value.is_boolean()) return value.get<bool>();
  // jsoncpp's asBool() took numbers, and DSSTNE configs in the wild use 0/1.
  if (value.is_number_integer()) {
    const auto v = value.get<int64_t>();
    if (v == 0 || v == 1) return v == 1;
  }
  wrong_type(value, path, "true or false");
}

double JsonReader::get_double(const Json& value, const std::string& path) const {
  if (!value.is_number()) wrong_type(value, path, "a number");
  return value.get<double>();
}

float JsonReader::get_float(const Json& value, const std::string& path) const {
  const double d = get_double(value, path);
  // Values up to 2^128 - 2^103 still round to FLT_MAX (e.g. FLT_MAX written with 8 digits).
  static const double kFloatLimit = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
  if (!(std::fabs(d) < kFloatLimit))
    fail(path, "number out of the range of a 32-bit float, got " + describe(value));
  return static_cast<float>(d);
}

int64_t JsonReader::get_int(const Json& value, const std::string& path, int64_t lo,
                            int64_t hi) const {
  const std::string range = hi == std::numeric_limits<int64_t>::max()
                                ? ">= " + std::to_string(lo)
                                : "between " + std::to_string(lo) + " and " + std::to_string(hi);
  int64_t v = 0;
  if (value.is_number_unsigned()) {
    const auto u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) fail(path, "must be " + range + ", got " + describe(value));
    v = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    v = value.get<int64_t>();
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d != std::floor(d)) wrong_type(value, path, "an integer");
    if (d < -9.2e18 || d > 9.2e18) fail(path, "must be " + range + ", got " + describe(value));
    v = static_cast<int64_t>(d);
  } else {
    wrong_type(value, path, "an integer");
  }
  if (v < lo || v > hi) fail(path, "must be " + range + ", got " + describe(value));
  return v;
}

std::string JsonReader::get_string(const Json& value, const std::string& path) const {
  if (!value.is_string()) wrong_type(value, path, "a string");
  return value.get<std::string>();
}

std::vector<std::string> JsonReader::get_string_list(const Json& value, const std::string& path,
                                                     bool allow_empty) const {
  const char* expected =
      allow_empty ? "a string or an array of strings" : "a string or a non-empty array of strings";
  if (value.is_string()) return {value.get<std::string>()};
  if (!value.is_array() || (!allow_empty && value.empty())) wrong_type(value, path, expected);
  std::vector<std::string> out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) wrong_type(value[i], index_path(path, i), "a string");
    out.push_back(value[i].get<std::string>());
  }
  return out;
}

void JsonReader::require(bool ok, const std::string& path, const std::string& rule,
                         double got) const {
  if (!ok) fail(path, "must be " + rule + ", got " + format_number(got));
}

std::string JsonReader::describe(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::null:
      return "null";
    case Json::value_t::number_float:
      return format_number(value.get<double>());
    case Json::value_t::string: {
      std::string text = value.get<std::string>();
      if (text.size() > 60) text = text.substr(0, 57) + "...";
      return Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    default:
      return value.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  const float as_float = static_cast<float>(value);
  if (static_cast<double>(as_float) == value) value = shortest_double(as_float);
  char text[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

double shortest_double(float value) {
  if (!std::isfinite(value)) return value;
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(value));
    const double candidate = std::strtod(text, nullptr);
    // Checked through double (not strtof) because that is how the parser will read it back.
    if (static_cast<float>(candidate) == value) return candidate;
  }
  return value;
}

}  // namespace nn::config_detail
