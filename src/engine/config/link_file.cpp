// Reading and writing measured-link files (see link_file.h).
#include "config/link_file.h"

#include "config/json_reader.h"
#include "core/atomic_file.h"
#include "core/error.h"

namespace nn {

using config_detail::Json;
using config_detail::JsonReader;

void write_link_file(const std::string& path, const LinkFile& link) {
  Json j;
  j["format"] = "nn-link";
  j["version"] = 1;
  j["latency_s"] = link.latency_s;
  j["bytes_per_s"] = link.bytes_per_s;
  j["ranks"] = link.ranks;
  j["source"] = link.source;
  Json samples = Json::array();
  for (const LinkSample& s : link.samples)
    samples.push_back(Json{{"op", s.op}, {"bytes", s.bytes}, {"seconds", s.seconds}});
  j["samples"] = samples;
  write_file_atomically(path, j.dump(2) + "\n");
}

LinkFile read_link_file(const std::string& path) {
  const Json j =
      config_detail::parse_json_text(config_detail::read_text_file(path, "link file"), path);
  const JsonReader r(path);
  if (!j.is_object())
    r.wrong_type(j, "(top level)", "an object written by nn-train --measure-link");
  auto need = [&](const char* key) -> const Json& {
    if (!j.contains(key))
      r.fail(key, "missing (a link file is written by mpirun ... nn-train --measure-link FILE)");
    return j.at(key);
  };
  if (!need("format").is_string() || need("format").get<std::string>() != "nn-link")
    r.fail("format", "expected \"nn-link\", got " + JsonReader::describe(need("format")));
  LinkFile f;
  f.latency_s = r.get_double(need("latency_s"), "latency_s");
  r.require(f.latency_s >= 0.0, "latency_s", "at least 0", f.latency_s);
  f.bytes_per_s = r.get_double(need("bytes_per_s"), "bytes_per_s");
  r.require(f.bytes_per_s > 0.0, "bytes_per_s", "positive", f.bytes_per_s);
  if (j.contains("ranks")) f.ranks = int(r.get_int(j.at("ranks"), "ranks", 1, 1 << 24));
  if (j.contains("source")) f.source = r.get_string(j.at("source"), "source");
  if (j.contains("samples")) {
    const Json& a = j.at("samples");
    if (!a.is_array()) r.wrong_type(a, "samples", "an array");
    for (size_t i = 0; i < a.size(); ++i) {
      const std::string at = config_detail::index_path("samples", i);
      const Json& e = a[i];
      if (!e.is_object()) r.wrong_type(e, at, "an object");
      LinkSample s;
      if (e.contains("op")) s.op = r.get_string(e.at("op"), at + ".op");
      if (e.contains("bytes")) s.bytes = r.get_double(e.at("bytes"), at + ".bytes");
      if (e.contains("seconds")) s.seconds = r.get_double(e.at("seconds"), at + ".seconds");
      f.samples.push_back(s);
    }
  }
  return f;
}

}  // namespace nn
