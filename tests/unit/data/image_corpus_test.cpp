// Image corpus readers (CIFAR-10/100 binary, IDX plain and gzip) and their datasets: pixel and
// label placement checked against files built here byte by byte, the dataset layout after a
// NetCDF round trip, splits, class names, and the error text for wrong or truncated files.
#include "data/image_corpus.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory_budget.h"
#include "data/data_test_util.h"
#include "io/netcdf_dataset.h"

namespace nn {
namespace {

using test::TempDir;
using test::write_file;
using Bytes = std::string;

// A pixel value that differs per (image, x, y, channel) so misplaced bytes show up.
uint8_t pixel(uint64_t image, uint32_t x, uint32_t y, uint32_t c) {
  return static_cast<uint8_t>(image * 37 + x * 5 + y * 11 + c * 101 + 3);
}

// A CIFAR record: label byte(s), then the R, G and B planes, each 32x32 row-major.
Bytes cifar_record(uint64_t image, std::vector<uint8_t> label_bytes) {
  Bytes r(label_bytes.begin(), label_bytes.end());
  for (uint32_t c = 0; c < 3; ++c)
    for (uint32_t y = 0; y < 32; ++y)
      for (uint32_t x = 0; x < 32; ++x) r += char(pixel(image, x, y, c));
  return r;
}

void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b += char((v >> s) & 0xff);
}

Bytes idx_images(uint32_t count, uint32_t rows, uint32_t cols) {
  Bytes b;
  put_be32(b, 0x00000803);
  put_be32(b, count);
  put_be32(b, rows);
  put_be32(b, cols);
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t y = 0; y < rows; ++y)
      for (uint32_t x = 0; x < cols; ++x) b += char(pixel(i, x, y, 0));
  return b;
}

Bytes idx_labels(const std::vector<uint8_t>& labels) {
  Bytes b;
  put_be32(b, 0x00000801);
  put_be32(b, uint32_t(labels.size()));
  b.append(labels.begin(), labels.end());
  return b;
}

void write_gzip(const std::string& path, const Bytes& data) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, data.data(), unsigned(data.size())), int(data.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// Runs `fn`, expecting a DataError whose message holds every fragment.
void expect_data_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning " << parts.front();
  } catch (const DataError& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << "\nlacks: " << p;
  }
}

std::vector<uint64_t> all_ids(const ImageCorpus& c) {
  std::vector<uint64_t> ids(c.images());
  for (uint64_t i = 0; i < ids.size(); ++i) ids[i] = i;
  return ids;
}

// ---- CIFAR ----

TEST(ImageCorpus, Cifar10RecordsAcrossFiles) {
  TempDir dir;
  write_file(dir.file("a.bin"), cifar_record(0, {3}) + cifar_record(1, {9}));
  write_file(dir.file("b.bin"), cifar_record(2, {0}));
  const ImageCorpus c = read_cifar10({dir.file("a.bin"), dir.file("b.bin")});
  EXPECT_EQ(c.width, 32u);
  EXPECT_EQ(c.height, 32u);
  EXPECT_EQ(c.channels, 3u);
  EXPECT_EQ(c.classes, 10u);
  EXPECT_EQ(c.labels, (std::vector<uint32_t>{3, 9, 0}));
  ASSERT_EQ(c.pixels.size(), 3u * 3072);
  for (uint64_t i = 0; i < 3; ++i)
    for (uint32_t ch : {0u, 1u, 2u})
      for (uint32_t y : {0u, 7u, 31u})
        for (uint32_t x : {0u, 13u, 31u})
          ASSERT_EQ(c.pixels[i * 3072 + x + 32 * (y + 32 * ch)], pixel(i, x, y, ch))
              << i << " " << x << " " << y << " " << ch;
}

TEST(ImageCorpus, Cifar10LimitStopsAcrossFiles) {
  TempDir dir;
  write_file(dir.file("a.bin"), cifar_record(0, {1}) + cifar_record(1, {2}));
  write_file(dir.file("b.bin"), cifar_record(2, {3}) + cifar_record(3, {4}));
  const ImageCorpus c = read_cifar10({dir.file("a.bin"), dir.file("b.bin")}, {3});
  EXPECT_EQ(c.labels, (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(c.pixels.size(), 3u * 3072);
  EXPECT_EQ(c.pixels[2 * 3072 + 5], pixel(2, 5, 0, 0));
}

TEST(ImageCorpus, Cifar10GzipEqualsPlain) {
  TempDir dir;
  const Bytes data = cifar_record(0, {4}) + cifar_record(1, {6});
  write_file(dir.file("plain.bin"), data);
  write_gzip(dir.file("packed.bin.gz"), data);
  const ImageCorpus a = read_cifar10({dir.file("plain.bin")});
  const ImageCorpus b = read_cifar10({dir.file("packed.bin.gz")});
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_EQ(a.pixels, b.pixels);
}

TEST(ImageCorpus, Cifar100FineAndCoarse) {
  TempDir dir;
  write_file(dir.file("train.bin"), cifar_record(0, {19, 99}) + cifar_record(1, {4, 30}));
  const ImageCorpus fine = read_cifar100({dir.file("train.bin")}, Cifar100Label::Fine);
  const ImageCorpus coarse = read_cifar100({dir.file("train.bin")}, Cifar100Label::Coarse);
  EXPECT_EQ(fine.classes, 100u);
  EXPECT_EQ(coarse.classes, 20u);
  EXPECT_EQ(fine.labels, (std::vector<uint32_t>{99, 30}));
  EXPECT_EQ(coarse.labels, (std::vector<uint32_t>{19, 4}));
  EXPECT_EQ(fine.pixels[3072 + 0], pixel(1, 0, 0, 0));  // second label byte is not a pixel
  EXPECT_EQ(fine.pixels, coarse.pixels);
}

TEST(ImageCorpus, CifarErrors) {
  TempDir dir;
  const std::string p = dir.file("x.bin");
  // Truncated: one record minus a byte.
  write_file(p, cifar_record(0, {1}).substr(0, 3072));
  expect_data_error([&] { read_cifar10({p}); }, {p + ": ", "3072 bytes", "3073-byte CIFAR-10"});
  // A CIFAR-100 file given as CIFAR-10 (and the reverse) gets a hint.
  write_file(p, cifar_record(0, {1, 2}) + cifar_record(1, {1, 2}));
  expect_data_error([&] { read_cifar10({p}); }, {p + ": ", "3074-byte", "CIFAR-100 file?"});
  write_file(p, cifar_record(0, {1}) + cifar_record(1, {1}));
  expect_data_error([&] { read_cifar100({p}, Cifar100Label::Fine); },
                    {p + ": ", "3073-byte", "CIFAR-10 file?"});
  // Labels out of range name the record.
  write_file(p, cifar_record(0, {1}) + cifar_record(1, {10}));
  expect_data_error([&] { read_cifar10({p}); },
                    {p + ": record 1 (byte offset 3073): label 10; expected 0..9"});
  write_file(p, cifar_record(0, {20, 5}));
  expect_data_error([&] { read_cifar100({p}, Cifar100Label::Coarse); },
                    {"record 0", "label 20; expected 0..19"});
  write_file(p, cifar_record(0, {2, 100}));
  expect_data_error([&] { read_cifar100({p}, Cifar100Label::Fine); },
                    {"label 100; expected 0..99"});
  // Things that are not batches at all.
  write_file(p, "");
  expect_data_error([&] { read_cifar10({p}); }, {p + ": empty file"});
  Bytes tar(1024, '\0');
  tar.replace(257, 5, "ustar");
  write_file(p, tar);
  expect_data_error([&] { read_cifar10({p}); }, {"tar archive", "extract it first"});
  write_file(p, Bytes("\x80\x02}q\x00", 5) + Bytes(3068, 'x'));
  expect_data_error([&] { read_cifar10({p}); }, {"Python pickle", "binary version"});
  EXPECT_THROW(read_cifar10({dir.file("absent.bin")}), IoError);
  EXPECT_THROW(read_cifar10({}), DataError);
}

// ---- IDX ----

TEST(ImageCorpus, IdxImagesAndLabels) {
  TempDir dir;
  write_file(dir.file("img"), idx_images(4, 3, 5));  // 3 rows of 5 columns
  write_file(dir.file("lab"), idx_labels({7, 0, 9, 2}));
  const ImageCorpus c = read_idx(dir.file("img"), dir.file("lab"));
  EXPECT_EQ(c.width, 5u);
  EXPECT_EQ(c.height, 3u);
  EXPECT_EQ(c.channels, 1u);
  EXPECT_EQ(c.classes, 10u);
  EXPECT_EQ(c.labels, (std::vector<uint32_t>{7, 0, 9, 2}));
  ASSERT_EQ(c.pixels.size(), 4u * 15);
  for (uint64_t i = 0; i < 4; ++i)
    for (uint32_t y = 0; y < 3; ++y)
      for (uint32_t x = 0; x < 5; ++x)
        ASSERT_EQ(c.pixels[i * 15 + x + 5 * y], pixel(i, x, y, 0)) << i << " " << x << " " << y;
}

TEST(ImageCorpus, IdxGzipLimitAndClasses) {
  TempDir dir;
  write_gzip(dir.file("img.gz"), idx_images(5, 2, 2));
  write_gzip(dir.file("lab.gz"), idx_labels({1, 11, 2, 3, 4}));
  // Gzip is detected from the content; a plain label file may go with a gzip image file.
  write_file(dir.file("lab"), idx_labels({1, 11, 2, 3, 4}));
  IdxOptions opt;
  opt.classes = 12;
  opt.limit = 3;
  const ImageCorpus c = read_idx(dir.file("img.gz"), dir.file("lab"), opt);
  EXPECT_EQ(c.classes, 12u);
  EXPECT_EQ(c.labels, (std::vector<uint32_t>{1, 11, 2}));
  ASSERT_EQ(c.pixels.size(), 12u);
  EXPECT_EQ(c.pixels[2 * 4 + 1 + 2 * 1], pixel(2, 1, 1, 0));
  // With the default 10 classes, label 11 is rejected, naming the item.
  expect_data_error([&] { read_idx(dir.file("img.gz"), dir.file("lab.gz")); },
                    {dir.file("lab.gz") + ": label 1 (byte offset 9) is 11; expected 0..9"});
}

TEST(ImageCorpus, IdxErrors) {
  TempDir dir;
  const std::string img = dir.file("img"), lab = dir.file("lab");
  write_file(lab, idx_labels({1, 2}));
  // Truncated and over-long pixel data.
  write_file(img, idx_images(2, 4, 4).substr(0, 16 + 31));
  expect_data_error([&] { read_idx(img, lab); },
                    {img + ": truncated: 2 images of 4x4 need 32 bytes", "found 31"});
  write_file(img, idx_images(2, 4, 4) + "x");
  expect_data_error([&] { read_idx(img, lab); }, {img + ": 1 unexpected bytes"});
  // The files swapped: each names what it found and what was expected.
  write_file(img, idx_images(2, 4, 4));
  expect_data_error([&] { read_idx(lab, img); },
                    {lab + ": magic number 0x00000801: an IDX label file",
                     "expected 0x00000803 (IDX uint8 images)"});
  // Not IDX at all, another element type, a truncated header.
  write_file(dir.file("text"), "hello world, this is text");
  expect_data_error([&] { read_idx(dir.file("text"), lab); },
                    {"magic number 0x68656C6C is not an IDX file's"});
  Bytes ints;
  put_be32(ints, 0x00000C03);
  write_file(dir.file("ints"), ints + Bytes(12, '\0'));
  expect_data_error([&] { read_idx(dir.file("ints"), lab); }, {"element type 0C (int32)"});
  write_file(dir.file("short"), idx_images(2, 4, 4).substr(0, 10));
  expect_data_error([&] { read_idx(dir.file("short"), lab); }, {"truncated IDX header"});
  write_file(dir.file("tiny"), "\x00\x00");
  expect_data_error([&] { read_idx(dir.file("tiny"), lab); }, {"too short for an IDX header"});
  // Counts that disagree, truncated labels.
  write_file(dir.file("lab3"), idx_labels({1, 2, 3}));
  expect_data_error([&] { read_idx(img, dir.file("lab3")); },
                    {"holds 3 labels, but " + img + " holds 2 images"});
  write_file(dir.file("labcut"), idx_labels({1, 2}).substr(0, 9));
  expect_data_error([&] { read_idx(img, dir.file("labcut")); },
                    {"labcut: truncated: 2 labels need 2 bytes", "found 1"});
  // Zero-sized images.
  write_file(dir.file("empty"), idx_images(2, 0, 4));
  expect_data_error([&] { read_idx(dir.file("empty"), lab); }, {"image size 0x4"});
}

// Found by fuzzing: 256 images of 2^28 x 2^28 pixels make 2^64 bytes, which wrapped to 0 and
// matched an image file without pixel data; converting it then asked for exabytes.
TEST(ImageCorpus, IdxHeaderSizesThatOverflow) {
  TempDir dir;
  const std::string img = dir.file("img"), lab = dir.file("lab");
  write_file(lab, idx_labels(std::vector<uint8_t>(256, 1)));
  Bytes header;
  put_be32(header, 0x00000803);
  put_be32(header, 256);
  put_be32(header, 1u << 28);
  put_be32(header, 1u << 28);
  write_file(img, header);
  expect_data_error(
      [&] { read_idx(img, lab); },
      {img + ": the IDX header claims 256 images of 268435456x268435456", "more than 2^64 pixels"});
  // One image of 2^32 pixels fits 64 bits but not a dataset's width.
  Bytes one;
  put_be32(one, 0x00000803);
  put_be32(one, 1);
  put_be32(one, 1u << 16);
  put_be32(one, 1u << 16);
  write_file(img, one);
  write_file(lab, idx_labels({1}));
  expect_data_error([&] { read_idx(img, lab); },
                    {img + ": the IDX header claims 1 images of 65536x65536",
                     "at most 4294967295 pixels per image"});
}

// ---- gzip ----

TEST(ImageCorpus, GzipTruncatedCorruptAndConcatenated) {
  TempDir dir;
  Bytes data;
  for (int i = 0; i < 20000; ++i) data += char(i * 7919 % 251);
  write_gzip(dir.file("a.gz"), data);
  const Bytes packed = test::read_file(dir.file("a.gz"));

  write_file(dir.file("cut.gz"), packed.substr(0, packed.size() / 2));
  expect_data_error([&] { read_maybe_gzip(dir.file("cut.gz")); },
                    {dir.file("cut.gz") + ": truncated gzip data"});
  Bytes bad = packed;
  bad[packed.size() - 6] ^= 0x55;  // inside the CRC trailer
  write_file(dir.file("bad.gz"), bad);
  expect_data_error([&] { read_maybe_gzip(dir.file("bad.gz")); },
                    {dir.file("bad.gz") + ": corrupt gzip data"});
  write_file(dir.file("junk.gz"), packed + "junk");
  expect_data_error([&] { read_maybe_gzip(dir.file("junk.gz")); }, {"4 bytes of unexpected data"});

  write_file(dir.file("two.gz"), packed + packed + Bytes(8, '\0'));
  const std::vector<uint8_t> two = read_maybe_gzip(dir.file("two.gz"));
  EXPECT_EQ(Bytes(two.begin(), two.end()), data + data);
  const std::vector<uint8_t> plain_read = read_maybe_gzip(dir.file("a.gz"));
  EXPECT_EQ(Bytes(plain_read.begin(), plain_read.end()), data);
}

// A small gzip file that inflates beyond the memory budget stops at the budget, naming the file.
TEST(ImageCorpus, GzipBombStopsAtTheMemoryBudget) {
  TempDir dir;
  write_gzip(dir.file("bomb.gz"), Bytes(size_t(8) << 20, '\0'));
  EXPECT_LT(test::read_file(dir.file("bomb.gz")).size(), size_t(64) << 10);
  set_memory_budget(size_t(1) << 20);
  expect_data_error([&] { read_maybe_gzip(dir.file("bomb.gz")); },
                    {dir.file("bomb.gz") + ": gzip data (",
                     "bytes) decompresses to more than the memory budget of 1.0 MiB"});
  set_memory_budget(0);
  EXPECT_EQ(read_maybe_gzip(dir.file("bomb.gz")).size(), size_t(8) << 20);
}

// ---- datasets ----

TEST(ImageCorpus, DatasetsRoundTripThroughNetcdf) {
  TempDir dir;
  write_file(dir.file("a.bin"), cifar_record(0, {3}) + cifar_record(1, {9}) + cifar_record(2, {5}));
  const ImageCorpus c = read_cifar10({dir.file("a.bin")});
  const std::vector<uint64_t> ids = {2, 0};  // a subset, out of order
  write_datasets(dir.file("out.nc"),
                 {image_dataset(c, ids, "input"), label_dataset(c, ids, "output")});
  const std::vector<ExampleSet> sets = read_datasets(dir.file("out.nc"));
  ASSERT_EQ(sets.size(), 2u);
  const ExampleSet& in = sets[0];
  EXPECT_EQ(in.name, "input");
  EXPECT_EQ(in.type, DataType::UChar);
  EXPECT_EQ(in.kind, DataKind::Image);
  EXPECT_EQ(in.attributes, 0u);
  EXPECT_EQ(in.dimensions, 3);
  EXPECT_EQ(in.width, 32u);
  EXPECT_EQ(in.height, 32u);
  EXPECT_EQ(in.length, 3u);
  ASSERT_EQ(in.examples, 2u);
  ASSERT_EQ(in.dense.size(), 2u * 3072);
  EXPECT_EQ(in.dense[0 * 3072 + 4 + 32 * (6 + 32 * 2)], pixel(2, 4, 6, 2));
  EXPECT_EQ(in.dense[1 * 3072 + 31 + 32 * (31 + 32 * 1)], pixel(0, 31, 31, 1));
  const ExampleSet& out = sets[1];
  EXPECT_EQ(out.name, "output");
  EXPECT_EQ(out.attributes, attr::Sparse | attr::Boolean);
  EXPECT_EQ(out.width, 10u);
  EXPECT_EQ(out.dimensions, 1);
  EXPECT_EQ(out.sparse_index, (std::vector<uint32_t>{5, 3}));
  EXPECT_EQ(out.sparse_start, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(out.sparse_end, (std::vector<uint64_t>{1, 2}));
  // The raw file stores UChar pixels as NC_UBYTE (what DSSTNE's loader reads as uint8).
  test::RawFile raw(dir.file("out.nc"));
  EXPECT_EQ(raw.var_type("data0"), NC_UBYTE);
  EXPECT_EQ(raw.att_uint("dataType0"), 8u);
  EXPECT_EQ(raw.att_uint("kind0"), 1u);
}

TEST(ImageCorpus, GrayscaleDatasetHasTwoDimensions) {
  TempDir dir;
  write_file(dir.file("img"), idx_images(2, 3, 5));
  write_file(dir.file("lab"), idx_labels({1, 2}));
  const ImageCorpus c = read_idx(dir.file("img"), dir.file("lab"));
  const ExampleSet ds = image_dataset(c, all_ids(c), "pixels");
  EXPECT_EQ(ds.dimensions, 2);
  EXPECT_EQ(ds.width, 5u);
  EXPECT_EQ(ds.height, 3u);
  EXPECT_EQ(ds.length, 1u);
  EXPECT_EQ(ds.dense[15 + 4 + 5 * 2], pixel(1, 4, 2, 0));
  EXPECT_NO_THROW(ds.validate("img"));
  EXPECT_NO_THROW(label_dataset(c, all_ids(c), "labels").validate("lab"));
}

TEST(ImageCorpus, SplitIds) {
  std::vector<uint64_t> a, b;
  split_ids(10, 0.7, 0, a, b);
  EXPECT_EQ(a, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(b, (std::vector<uint64_t>{7, 8, 9}));
  split_ids(3, 1.0, 0, a, b);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_TRUE(b.empty());

  split_ids(1000, 0.25, 42, a, b);
  EXPECT_EQ(a.size(), 250u);
  EXPECT_EQ(b.size(), 750u);
  std::set<uint64_t> all(a.begin(), a.end());
  all.insert(b.begin(), b.end());
  EXPECT_EQ(all.size(), 1000u);  // a permutation: every id exactly once
  EXPECT_FALSE(std::is_sorted(a.begin(), a.end()));
  std::vector<uint64_t> a2, b2;
  split_ids(1000, 0.25, 42, a2, b2);
  EXPECT_EQ(a, a2);  // deterministic for a seed
  split_ids(1000, 0.25, 43, a2, b2);
  EXPECT_NE(a, a2);
  EXPECT_THROW(split_ids(10, 1.5, 0, a, b), DataError);
}

// ---- class names ----

TEST(ImageCorpus, ClassNames) {
  EXPECT_EQ(cifar10_class_names().size(), 10u);
  EXPECT_EQ(cifar10_class_names().front(), "airplane");
  EXPECT_EQ(cifar10_class_names().back(), "truck");
  EXPECT_EQ(fashion_mnist_class_names()[0], "T-shirt/top");
  EXPECT_EQ(fashion_mnist_class_names()[9], "Ankle boot");
  EXPECT_EQ(numeric_class_names(3), (std::vector<std::string>{"0", "1", "2"}));

  TempDir dir;
  write_file(dir.file("meta.txt"), "apple\r\nbaby bear\nchair\n\n\n");
  EXPECT_EQ(read_class_names(dir.file("meta.txt"), 3),
            (std::vector<std::string>{"apple", "baby bear", "chair"}));
  expect_data_error([&] { read_class_names(dir.file("meta.txt"), 4); },
                    {"meta.txt: 3 class names; expected 4"});
  write_file(dir.file("gap.txt"), "a\n\nb\n");
  expect_data_error([&] { read_class_names(dir.file("gap.txt"), 3); },
                    {"gap.txt:2: empty class name"});
  write_file(dir.file("comma.txt"), "a\nb,c\n");
  expect_data_error([&] { read_class_names(dir.file("comma.txt"), 2); },
                    {"comma.txt:2: class name \"b,c\" holds ','"});
  EXPECT_THROW(read_class_names(dir.file("absent.txt"), 2), IoError);
}

}  // namespace
}  // namespace nn
