// Fuzz harness: the text inputs of nn-generate and nn-encode (data/text_examples.cpp: DSSTNE's
// "sample<TAB>feature[,value]:..." example lines; data/feature_index.cpp: "label<TAB>index"
// index files). The first byte picks the parser and the options; the rest is the file.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "data/batch.h"
#include "data/text_examples.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  nn::fuzz::ScratchFiles files;
  const std::string path = files.add("examples.txt", data + 1, size - 1);
  nn::fuzz::expect_clean([&] {
    if (mode & 0x80) {
      const nn::FeatureIndex index = nn::load_index(path);
      for (uint64_t i = 0; i < index.size(); ++i) (void)index.find(index.label(i));
      return;
    }
    nn::TextExamplesOptions options;
    options.mode = (mode & 1) ? nn::ExampleMode::Analog : nn::ExampleMode::Indicator;
    options.allow_new_features = !(mode & 2);
    options.allow_new_samples = !(mode & 4);
    static const uint32_t aligns[4] = {1, 2, 7, 128};
    options.width_align = aligns[(mode >> 3) & 3];
    options.min_width = (mode & 0x20) ? 3 : 0;
    // Known labels for the runs that may not add new ones (as with an existing index file).
    nn::FeatureIndex features, samples;
    for (const char* f : {"a", "b", "c", "m1", "m2"}) features.lookup(f, true);
    for (const char* s : {"u0", "u1", "u2"}) samples.lookup(s, true);
    nn::TextExamplesStats stats;
    const nn::ExampleSet ds =
        nn::read_text_examples({path}, "fuzz", features, samples, options, &stats);
    // What nn-generate accepts must be a consistent dataset that training can gather from.
    try {
      ds.validate(path);
    } catch (const nn::Error& e) {
      std::fprintf(stderr, "nn fuzz: parsed examples fail validation: %s\n", e.what());
      std::abort();
    }
    std::vector<uint32_t> ids;
    for (uint64_t e = 0; e < ds.examples && e < 1024; ++e) ids.push_back(static_cast<uint32_t>(e));
    nn::SparseBatch batch;
    if (!ids.empty()) nn::gather_sparse(ds, ids.data(), static_cast<uint32_t>(ids.size()), batch);
  });
  return 0;
}
