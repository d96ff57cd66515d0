// nn-tune's results.tsv and trials.jsonl (results.h).
#include "nn-tune/results.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "nn/error.h"

namespace nn::tool {

namespace fs = std::filesystem;
using nlohmann::json;

std::string trial_dir(const TuneFile& t, uint32_t trial) {
  char name[32];
  std::snprintf(name, sizeof name, "trial-%03u", trial);
  return (fs::path(t.output) / name).string();
}

std::vector<Row> read_results(const std::string& path) {
  std::vector<Row> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == 't') continue;  // the header
    std::istringstream s(line);
    Row r;
    std::string metric;
    if (!(s >> r.trial >> r.rung >> r.epochs >> metric >> r.best_epoch >> r.seconds >> r.status))
      continue;
    if (metric == "-") {
      r.metric = -std::numeric_limits<double>::infinity();
    } else {
      char* end = nullptr;
      r.metric = std::strtod(metric.c_str(), &end);
      if (end == metric.c_str() || *end != '\0') continue;
    }
    rows.push_back(r);
  }
  return rows;
}

namespace {

// Opens a line-per-record file for appending; a line cut short by a kill is ended first, so the
// next record starts a line of its own.
std::ofstream append_line(const fs::path& path) {
  bool ends_line = true;
  if (fs::exists(path) && fs::file_size(path) > 0) {
    std::ifstream last(path, std::ios::binary);
    last.seekg(-1, std::ios::end);
    ends_line = last.get() == '\n';
  }
  std::ofstream out(path, std::ios::app);
  if (!ends_line) out << '\n';
  return out;
}

}  // namespace

void append_row(const std::string& path, const Row& r, const json& settings) {
  const bool fresh = !fs::exists(path);
  std::ofstream out = append_line(path);
  if (fresh) out << "trial\trung\tepochs\tmetric\tbest_epoch\tseconds\tstatus\tsettings\n";
  char metric[32];
  if (std::isfinite(r.metric))
    std::snprintf(metric, sizeof metric, "%.6f", r.metric);
  else
    std::snprintf(metric, sizeof metric, "-");
  out << r.trial << '\t' << r.rung << '\t' << r.epochs << '\t' << metric << '\t' << r.best_epoch
      << '\t' << std::fixed << std::setprecision(1) << r.seconds << '\t' << r.status << '\t'
      << settings.dump() << '\n';
  if (!out.flush()) throw IoError(path + ": cannot write");
}

namespace {

// The parts of the tune file that decide the draws.
json search_of(const TuneFile& t) {
  json space = json::array();
  for (const SearchParam& p : t.space)
    space.push_back({{"path", p.path},
                     {"kind", int(p.kind)},
                     {"choices", p.choices},
                     {"low", p.low},
                     {"high", p.high}});
  return {{"Sampler", t.sampler},
          {"Trials", t.trials},
          {"Seed", t.seed},
          {"StartupTrials", t.startup_trials},
          {"Space", space}};
}

void write_atomically(const fs::path& file, const std::string& text) {
  const fs::path part = file.string() + ".part";
  std::ofstream out(part);
  out << text;
  if (!out.flush()) throw IoError(part.string() + ": cannot write");
  out.close();
  fs::rename(part, file);
}

std::vector<json> read_lines(const fs::path& file) {
  std::ifstream in(file);
  std::vector<json> kept;
  std::string line;
  while (std::getline(in, line)) {
    // A line cut short by a kill (TPE appends) does not parse: that trial is drawn again.
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) kept.push_back(j);
  }
  return kept;
}

}  // namespace

std::vector<json> load_trials(const TuneFile& t) {
  const fs::path file = fs::path(t.output) / "trials.jsonl";
  const fs::path search = fs::path(t.output) / "search.json";
  const json wanted = search_of(t);
  const std::string changed =
      ": the tune file's search (its space, sampler, trials or seed) "
      "changed since this tune started; give another Output";
  if (fs::exists(search)) {
    std::ifstream in(search);
    const json was = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (was != wanted) throw ConfigError(search.string() + changed);
  }
  if (t.sampler == "TPE") {
    if (!fs::exists(search)) {
      if (fs::exists(file)) throw ConfigError(file.string() + changed);
      fs::create_directories(t.output);
      write_atomically(search, wanted.dump(2) + "\n");
    }
    return read_lines(file);
  }
  const std::vector<json> drawn = draw_trials(t);
  if (fs::exists(file)) {
    if (read_lines(file) != drawn)
      throw ConfigError(file.string() +
                        ": its trials differ from the tune file's draws (the "
                        "tune file changed since this tune started); give another Output");
    return drawn;
  }
  fs::create_directories(t.output);
  std::string text;
  for (const json& s : drawn) text += s.dump() + "\n";
  write_atomically(file, text);
  write_atomically(search, wanted.dump(2) + "\n");
  return drawn;
}

void append_trial(const TuneFile& t, const json& settings) {
  const fs::path file = fs::path(t.output) / "trials.jsonl";
  std::ofstream out = append_line(file);
  out << settings.dump() << '\n';
  if (!out.flush()) throw IoError(file.string() + ": cannot write");
}

}  // namespace nn::tool
