// Inputs found by fuzzing the JSON readers (tests/fuzz): each must end in a ConfigError that names
// the file and where in the document the problem is, never in an untyped exception.
#include <gtest/gtest.h>

#include <string>

#include "config/parse.h"
#include "core/test_util.h"

namespace nn {
namespace {

using test::error_of;

TEST(JsonFuzzFindings, NumberBeyondDoubleRangeIsAConfigError) {
  const std::string e = error_of([] {
    parse_network_json(R"({ "Name": "n", "Layers": [ { "Name": "Input", "N": 1e400 } ] })",
                       "net.json");
  });
  EXPECT_NE(e.find("net.json: Layers[0].N: invalid JSON: number overflow parsing '1e400'"),
            std::string::npos)
      << e;
  const std::string top = error_of([] { parse_cdl("-1e8500", "run.cdl"); });
  EXPECT_NE(top.find("run.cdl: (top level): invalid JSON: number overflow"), std::string::npos)
      << top;
}

}  // namespace
}  // namespace nn
