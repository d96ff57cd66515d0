// Readers for standard image corpora (CIFAR-10/100 binary batches, MNIST-family IDX files, plain
// or gzip) and their conversion into DSSTNE-style datasets: a dense UChar image input and a
// sparse Boolean one-hot label output, as DSSTNE's CIFAR-10 sample expects.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace nn {

// Decoded images with one class label each. Pixels are raw bytes, image-major; inside an image
// x is fastest, then y, then channel (DSSTNE's dense layout, and CIFAR's own plane order).
struct ImageCorpus {
  uint32_t width = 0, height = 0, channels = 0;
  uint32_t classes = 0;          // labels are < classes
  std::vector<uint8_t> pixels;   // images() * image_size()
  std::vector<uint32_t> labels;  // one per image

  uint64_t images() const { return labels.size(); }
  uint64_t image_size() const { return uint64_t(width) * height * channels; }
};

// Which label of a CIFAR-100 record becomes the class.
enum class Cifar100Label { Fine, Coarse };

struct CifarOptions {
  uint64_t limit = 0;  // stop after this many images in total (0 = all)
};

// Concatenates CIFAR-10 binary batch files (records of 1 label byte + 3072 pixel bytes: 1024 R,
// 1024 G, 1024 B, each 32x32 row-major). gzip-compressed files are accepted too. Throws
// DataError("<file>: ...") for a size that is not a whole number of records, a label >= 10, or a
// file that is evidently something else (tar archive, Python pickle batch).
ImageCorpus read_cifar10(const std::vector<std::string>& paths, const CifarOptions& options = {});

// CIFAR-100 binary files (records of coarse byte + fine byte + 3072 pixel bytes); `which` picks
// the fine (100 classes) or coarse (20 classes) label.
ImageCorpus read_cifar100(const std::vector<std::string>& paths, Cifar100Label which,
                          const CifarOptions& options = {});

struct IdxOptions {
  uint64_t limit = 0;     // stop after this many images (0 = all)
  uint32_t classes = 10;  // labels must be < classes (MNIST and Fashion-MNIST have 10)
};

// An IDX image file (magic 0x00000803: count, rows, cols; uint8 pixels) with its IDX label file
// (magic 0x00000801: count; uint8 labels), each plain or gzip-compressed (detected from the
// content, not the name). Throws DataError("<file>: ...") for a wrong magic number (naming what
// the file looks like), truncated or over-long data, mismatched counts, or a label >= classes.
ImageCorpus read_idx(const std::string& images_path, const std::string& labels_path,
                     const IdxOptions& options = {});

// A whole file's bytes, gunzipped when it starts with the gzip magic (concatenated gzip members
// are read as one stream). Throws IoError when it cannot be opened and DataError("<path>: ...")
// for corrupt or truncated compressed data.
std::vector<uint8_t> read_maybe_gzip(const std::string& path);

// Example ids 0..images-1 split in two: the first round(fraction * images) ids go to `first`, the
// rest to `second`. With seed != 0 the ids are shuffled first (deterministically for the seed).
void split_ids(uint64_t images, double fraction, uint64_t seed, std::vector<uint64_t>& first,
               std::vector<uint64_t>& second);

// The dense image input for the corpus images `ids` (in that order): UChar values as stored
// (0..255; the engine normalises inputs to x/256 - 0.5 when it loads a batch), kind Image,
// width/height/length = image width/height/channels, dimensions 3 when there are several
// channels, else 2.
ExampleSet image_dataset(const ImageCorpus& corpus, const std::vector<uint64_t>& ids,
                         const std::string& name);

// The matching labels: a sparse Boolean (indicator) dataset, one entry per example at its class,
// width = corpus.classes (generateNetCDF's conventions: attributes Sparse|Boolean, type UInt).
ExampleSet label_dataset(const ImageCorpus& corpus, const std::vector<uint64_t>& ids,
                         const std::string& name);

// Built-in class names, in label order.
const std::vector<std::string>& cifar10_class_names();
const std::vector<std::string>& fashion_mnist_class_names();

// Class names from a text file with one name per line, in label order (CIFAR's batches.meta.txt,
// fine_label_names.txt, coarse_label_names.txt). Empty trailing lines are ignored. Throws
// DataError("<path>:<line>: ...") for an empty name or one holding a TAB, ',' or ':' (which would
// break index files and nn-predict's output), and when the count differs from `classes`.
std::vector<std::string> read_class_names(const std::string& path, uint32_t classes);

// "0", "1", ... "classes-1".
std::vector<std::string> numeric_class_names(uint32_t classes);

}  // namespace nn
