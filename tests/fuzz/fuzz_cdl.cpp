// Fuzz harness: CDL command files (config/cdl.cpp via parse_cdl), the JSON that nn-train and
// nn-predict read first. Paths inside are only resolved, never opened.
#include <cstdint>
#include <string>

#include "config/parse.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nn::fuzz::expect_clean([&] { (void)nn::parse_cdl(text, "fuzz/run.cdl"); });
  return 0;
}
