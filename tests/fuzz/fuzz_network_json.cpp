// Fuzz harness: DSSTNE's JSON network description (config/network_json.cpp via
// parse_network_json). A description that parses must also survive its own round trip: the JSON
// we write for it parses again to an equal spec (what network files embed and tools re-read).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/parse.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nn::fuzz::expect_clean([&] {
    const nn::NetworkSpec spec = nn::parse_network_json(text, "fuzz.json");
    const std::string again = nn::network_spec_to_json(spec);
    nn::NetworkSpec reparsed;
    try {
      reparsed = nn::parse_network_json(again, "roundtrip.json");
    } catch (const nn::Error& e) {
      std::fprintf(stderr, "nn fuzz: accepted spec does not re-parse: %s\n%s\n", e.what(),
                   again.c_str());
      std::abort();
    }
    if (reparsed != spec) {
      std::fprintf(stderr, "nn fuzz: round trip changed the spec:\n%s\n", again.c_str());
      std::abort();
    }
  });
  return 0;
}
