// Command-line helpers shared by the tools: DSSTNE-style single-dash long flags (-alpha 0.1)
// rewritten for CLI11, CLI11 parse-error mapping, and a stderr/stdout log sink.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "common/tool_main.h"
#include "nn/log.h"
#include "nn/process.h"

namespace nn::tool {

// Returns argv with every token "-name" (name in `long_names`) rewritten as "--name".
inline std::vector<std::string> rewrite_single_dash(int argc, char** argv,
                                                    std::initializer_list<const char*> long_names) {
  std::vector<std::string> out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    for (const char* n : long_names)
      if (a == std::string("-") + n) a = std::string("--") + n;
    out.push_back(a);
  }
  return out;
}

// A flag with an optional value given apart from it ("--resume auto") is joined into one word
// ("--resume=auto") when the next word is one of its values, so that the flag may stand alone or
// before a positional argument ("--resume train.cdl") as before.
inline std::vector<std::string> join_optional_value(std::vector<std::string> args,
                                                    const std::string& flag,
                                                    std::initializer_list<const char*> values) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    out.push_back(args[i]);
    if (args[i] != flag || i + 1 >= args.size()) continue;
    for (const char* v : values)
      if (args[i + 1] == v) {
        out.back() += "=" + args[++i];
        break;
      }
  }
  return out;
}

// Parses, turning --help into exit status 0 (returns true: caller should return `status`) and
// any other parse problem into UsageError.
inline bool parse_or_exit(CLI::App& app, std::vector<std::string> args, int& status) {
  // Every tool answers --version the same way (NN_VERSION: the project version, from CMake).
  if (!app.get_option_no_throw("--version"))
    app.set_version_flag("--version", std::string(kToolName) + " " + NN_VERSION,
                         "print the version and exit");
  try {
    std::vector<std::string> rev(args.rbegin(),
                                 args.rend() - 1);  // CLI11 wants reversed, no argv[0]
    app.parse(rev);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      // --help / --version: one copy under mpirun
      status = api::world_rank() == 0 ? app.exit(e) : 0;
      return true;
    }
    throw UsageError(e.what());
  }
  return false;
}

// --memory-limit SIZE: the budget that sizes read from files and configs are checked against
// before anything is allocated for them (nn/process.h).
inline CLI::Option* add_memory_limit_option(CLI::App& app, std::string& value) {
  return app.add_option("--memory-limit", value,
                        "memory budget for sizes read from files, e.g. 8G or 512M (default: "
                        "this machine's memory, " +
                            api::format_bytes(api::default_memory_budget()) + ")");
}

// Sets the budget from the flag (wins) or the CDL's MemoryLimit; UsageError when malformed.
inline void apply_memory_limit(const std::string& flag, std::optional<uint64_t> from_cdl) {
  if (!flag.empty()) {
    const auto bytes = api::parse_byte_size(flag);
    if (!bytes)
      throw UsageError(
          "--memory-limit: expected a size such as 8G, 512M or 1000000 (bytes), got '" + flag +
          "'");
    api::set_memory_budget(*bytes);
  } else if (from_cdl) {
    api::set_memory_budget(*from_cdl);
  }
}

// Log sink printing each line to `stream` (flushes so pipes see progress). Under mpirun only
// rank 0 prints: one voice for the whole job (errors are printed by every rank, see tool_main).
inline LogSink stream_log(std::FILE* stream, const std::string& prefix = "") {
  if (api::world_rank() != 0) return null_log();
  return [stream, prefix](const std::string& line) {
    std::fprintf(stream, "%s%s\n", prefix.c_str(), line.c_str());
    std::fflush(stream);
  };
}

}  // namespace nn::tool
