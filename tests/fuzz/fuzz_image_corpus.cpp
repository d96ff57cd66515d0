// Fuzz harness: the image corpus readers of nn-encode (data/image_corpus.cpp: CIFAR-10/100
// binary batches, IDX image + label files, each plain or gzip; class-name files) and the
// conversion of what they accept into datasets. The first byte picks the reader; for IDX the
// next two bytes give the length of the label file, which comes first, the image file after it.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "data/image_corpus.h"
#include "fuzz_support.h"

namespace {

void convert(const nn::ImageCorpus& corpus) {
  std::vector<uint64_t> first, second;
  nn::split_ids(std::min<uint64_t>(corpus.images(), 256), 0.5, 7, first, second);
  (void)nn::image_dataset(corpus, first, "images");
  (void)nn::label_dataset(corpus, second, "labels");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  ++data;
  --size;
  nn::fuzz::ScratchFiles files;
  nn::fuzz::expect_clean([&] {
    const uint64_t limit = (mode & 0x08) ? 3 : 0;
    switch (mode & 0x07) {
      case 0:
        convert(nn::read_cifar10({files.add("cifar10.bin", data, size)}, {limit}));
        break;
      case 1:
      case 2:
        convert(nn::read_cifar100(
            {files.add("cifar100.bin", data, size)},
            (mode & 7) == 1 ? nn::Cifar100Label::Fine : nn::Cifar100Label::Coarse, {limit}));
        break;
      case 3:
      case 4: {
        if (size < 2) return;
        const size_t label_bytes = std::min<size_t>(size - 2, size_t(data[0]) << 8 | data[1]);
        const std::string labels = files.add("labels.idx", data + 2, label_bytes);
        const std::string images =
            files.add("images.idx", data + 2 + label_bytes, size - 2 - label_bytes);
        nn::IdxOptions options;
        options.limit = limit;
        options.classes = (mode & 7) == 3 ? 10 : 2;
        convert(nn::read_idx(images, labels, options));
        break;
      }
      case 5:
        (void)nn::read_maybe_gzip(files.add("maybe.gz", data, size));
        break;
      default:
        (void)nn::read_class_names(files.add("names.txt", data, size), (mode >> 4) + 1);
        break;
    }
  });
  return 0;
}
