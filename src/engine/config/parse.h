// Entry points of the config layer: the only place that touches JSON.
#pragma once

#include <string>

#include "config/cdl_spec.h"
#include "config/network_spec.h"

namespace nn {

// Parses a DSSTNE-style JSON network description. `source` names the file in error messages.
// Throws ConfigError("<source>: <json path>: <problem>") on any invalid input.
NetworkSpec parse_network_json(const std::string& text, const std::string& source);
NetworkSpec load_network_json(const std::string& path);

// Parses a CDL command file. Relative paths inside it are resolved against the CDL's directory.
CdlSpec parse_cdl(const std::string& text, const std::string& source);
CdlSpec load_cdl(const std::string& path);

// True when `format` is a printf format with exactly one floating-point conversion (%f, %.3e,
// %g, ...) and no other conversion ("%%" allowed): safe to hand one score to. CDL ScoreFormat
// values are checked with it; tools taking a format on the command line can use it too.
bool valid_score_format(const std::string& format);

// Serialises a spec back to JSON text (canonical key names), e.g. to embed in a network file.
std::string network_spec_to_json(const NetworkSpec& spec);

}  // namespace nn
