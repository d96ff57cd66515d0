// From a decoded image corpus to datasets: train/validation id splits, the dense UChar image
// input and the sparse one-hot label output, plus the class-name lists written to index files.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/random.h"
#include "data/image_corpus.h"

namespace nn {

void split_ids(uint64_t images, double fraction, uint64_t seed, std::vector<uint64_t>& first,
               std::vector<uint64_t>& second) {
  if (!(fraction >= 0.0 && fraction <= 1.0))
    throw DataError("split fraction " + std::to_string(fraction) + "; expected 0..1");
  std::vector<uint64_t> ids(images);
  for (uint64_t i = 0; i < images; ++i) ids[i] = i;
  if (seed != 0) {
    Rng rng(seed);
    for (uint64_t i = images; i > 1; --i) std::swap(ids[i - 1], ids[rng.below(i)]);
  }
  const uint64_t n = static_cast<uint64_t>(std::llround(fraction * double(images)));
  first.assign(ids.begin(), ids.begin() + n);
  second.assign(ids.begin() + n, ids.end());
}

ExampleSet image_dataset(const ImageCorpus& corpus, const std::vector<uint64_t>& ids,
                         const std::string& name) {
  ExampleSet ds;
  ds.name = name;
  ds.type = DataType::UChar;
  ds.attributes = 0;
  ds.kind = DataKind::Image;
  ds.width = corpus.width;
  ds.height = corpus.height;
  ds.length = corpus.channels;
  ds.dimensions = corpus.channels > 1 ? 3 : 2;
  ds.examples = ds.unique_examples = ids.size();
  const uint64_t size = corpus.image_size();
  ds.dense.resize(ids.size() * size);
  float* out = ds.dense.data();
  for (uint64_t id : ids) {
    NN_CHECK(id < corpus.images(), "image id out of range");
    const uint8_t* p = corpus.pixels.data() + id * size;
    out = std::copy(p, p + size, out);
  }
  return ds;
}

ExampleSet label_dataset(const ImageCorpus& corpus, const std::vector<uint64_t>& ids,
                         const std::string& name) {
  ExampleSet ds;
  ds.name = name;
  ds.type = DataType::UInt;
  ds.attributes = attr::Sparse | attr::Boolean;
  ds.kind = DataKind::Numeric;
  ds.dimensions = 1;
  ds.width = corpus.classes;
  ds.examples = ds.unique_examples = ids.size();
  ds.sparse_start.resize(ids.size());
  ds.sparse_end.resize(ids.size());
  ds.sparse_index.resize(ids.size());
  for (uint64_t i = 0; i < ids.size(); ++i) {
    NN_CHECK(ids[i] < corpus.images(), "image id out of range");
    ds.sparse_start[i] = i;
    ds.sparse_end[i] = i + 1;
    ds.sparse_index[i] = corpus.labels[ids[i]];
  }
  return ds;
}

const std::vector<std::string>& cifar10_class_names() {
  static const std::vector<std::string> names = {
      "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
  return names;
}

const std::vector<std::string>& fashion_mnist_class_names() {
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                 "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                 "Bag",         "Ankle boot"};
  return names;
}

std::vector<std::string> numeric_class_names(uint32_t classes) {
  std::vector<std::string> names;
  for (uint32_t i = 0; i < classes; ++i) names.push_back(std::to_string(i));
  return names;
}

std::vector<std::string> read_class_names(const std::string& path, uint32_t classes) {
  std::ifstream f(path);
  if (!f) throw IoError(path + ": cannot open class-name file");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().find_first_not_of(" \t") == std::string::npos)
    lines.pop_back();
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = path + ":" + std::to_string(i + 1) + ": ";
    if (lines[i].empty()) throw DataError(where + "empty class name; expected one name per line");
    const size_t bad = lines[i].find_first_of("\t,:");
    if (bad != std::string::npos)
      throw DataError(where + "class name \"" + lines[i] + "\" holds '" +
                      (lines[i][bad] == '\t' ? std::string("TAB") : lines[i].substr(bad, 1)) +
                      "'; names may not contain TAB, ',' or ':' (index files and predictions "
                      "use them as separators)");
  }
  if (lines.size() != classes)
    throw DataError(path + ": " + std::to_string(lines.size()) + " class names; expected " +
                    std::to_string(classes) + " (one per line, in label order)");
  return lines;
}

}  // namespace nn
