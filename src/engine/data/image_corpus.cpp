// Readers for CIFAR-10/100 binary batches and IDX (MNIST, Fashion-MNIST) files, plain or gzip.
// Files are small enough (tens of MB) to be read whole; every format check runs before any
// image is accepted, so a wrong or truncated file fails with a message naming the file, the
// offending record or header field, what was found and what was expected.
#include "data/image_corpus.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory_budget.h"

namespace nn {

namespace {

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

bool is_gzip(const std::vector<uint8_t>& b) {
  return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

// Inflates every gzip member of `in` into one byte stream.
std::vector<uint8_t> gunzip(const std::vector<uint8_t>& in, const std::string& path) {
  std::vector<uint8_t> out;
  // The gzip trailer holds the (last member's) uncompressed size mod 2^32: a good first guess,
  // capped because a truncated file's last bytes are not a trailer at all.
  if (in.size() >= 4) {
    const size_t n = in.size();
    const size_t isize = uint32_t(in[n - 4]) | uint32_t(in[n - 3]) << 8 |
                         uint32_t(in[n - 2]) << 16 | uint32_t(in[n - 1]) << 24;
    out.reserve(std::min(isize, 16 * n));
  }
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK)  // 15 + 16: gzip wrapper, largest window
    throw DataError(path + ": cannot initialise zlib");
  size_t pos = 0;
  uint8_t chunk[1 << 16];
  int rc = Z_OK;
  while (true) {
    zs.next_in = const_cast<Bytef*>(in.data() + pos);
    zs.avail_in = static_cast<uInt>(std::min<size_t>(in.size() - pos, 1u << 30));
    zs.next_out = chunk;
    zs.avail_out = sizeof chunk;
    const uInt avail_before = zs.avail_in;
    rc = inflate(&zs, Z_NO_FLUSH);
    pos += avail_before - zs.avail_in;
    out.insert(out.end(), chunk, chunk + (sizeof chunk - zs.avail_out));
    // A gzip member can inflate 1032-fold: a few MB of "bomb" would otherwise take all the
    // machine's memory before any format check runs.
    if (out.size() > memory_budget()) {
      inflateEnd(&zs);
      throw DataError(path + ": gzip data (" + std::to_string(in.size()) +
                      " bytes) decompresses to more than the memory budget of " +
                      format_bytes(memory_budget()) +
                      " (raise it with --memory-limit or the CDL key MemoryLimit)");
    }
    if (rc == Z_STREAM_END) {
      // Another member may follow (as `cat a.gz b.gz` makes); trailing zero padding is allowed.
      if (pos + 2 <= in.size() && in[pos] == 0x1f && in[pos + 1] == 0x8b) {
        inflateReset(&zs);
        continue;
      }
      const bool zeros = std::all_of(in.begin() + pos, in.end(), [](uint8_t c) { return c == 0; });
      inflateEnd(&zs);
      if (!zeros)
        throw DataError(path + ": " + std::to_string(in.size() - pos) +
                        " bytes of unexpected data after the gzip stream at byte " +
                        std::to_string(pos));
      return out;
    }
    if (rc != Z_OK) break;  // Z_BUF_ERROR: no progress possible, the input ended early
  }
  const std::string msg = zs.msg ? zs.msg : "";
  inflateEnd(&zs);
  if (rc == Z_BUF_ERROR)
    throw DataError(path + ": truncated gzip data: the compressed stream ends after " +
                    std::to_string(in.size()) + " bytes (" + std::to_string(out.size()) +
                    " bytes decompressed) before its end marker");
  throw DataError(path + ": corrupt gzip data near compressed byte " + std::to_string(pos) +
                  (msg.empty() ? std::string() : ": " + msg));
}

// ------------------------------------------------------------------------------------------
// CIFAR

struct CifarFormat {
  const char* name;       // "CIFAR-10"
  uint32_t label_bytes;   // 1 (CIFAR-10) or 2 (coarse, fine)
  uint32_t label_offset;  // which label byte is the class
  uint32_t classes;
  const char* other_hint;  // what a file with the other record size probably is
};

constexpr uint32_t kCifarPixels = 32 * 32 * 3;

// Rejects files that are evidently not CIFAR binary batches, with a hint of what they are.
void check_not_archive(const std::vector<uint8_t>& b, const std::string& path) {
  if (b.empty()) throw DataError(path + ": empty file; expected CIFAR binary records");
  if (b.size() >= 262 && std::memcmp(b.data() + 257, "ustar", 5) == 0)
    throw DataError(path + ": is a tar archive; extract it first (tar xzf) and pass the " +
                    "batch .bin files it holds");
  if (b.size() >= 2 && b[0] == 0x80 && b[1] >= 2 && b[1] <= 5)
    throw DataError(path + ": looks like a Python pickle (CIFAR's \"python version\"); " +
                    "download the \"binary version\" instead");
}

ImageCorpus read_cifar(const std::vector<std::string>& paths, const CifarFormat& f,
                       uint64_t limit) {
  if (paths.empty()) throw DataError(std::string(f.name) + ": no input files given");
  ImageCorpus c;
  c.width = 32;
  c.height = 32;
  c.channels = 3;
  c.classes = f.classes;
  const uint64_t rec = f.label_bytes + kCifarPixels;
  const uint64_t other = (f.label_bytes == 1 ? 2 : 1) + kCifarPixels;
  for (const std::string& path : paths) {
    if (limit && c.images() >= limit) break;
    const std::vector<uint8_t> b = read_maybe_gzip(path);
    check_not_archive(b, path);
    if (b.size() % rec != 0) {
      std::string msg = path + ": size " + std::to_string(b.size()) +
                        " bytes is not a whole number of " + std::to_string(rec) + "-byte " +
                        f.name + " records (" + std::to_string(f.label_bytes) +
                        " label byte(s) + 3072 pixel bytes)";
      if (b.size() % other == 0)
        msg +=
            "; it is a whole number of " + std::to_string(other) + "-byte records: " + f.other_hint;
      else
        msg += ": truncated, or not a " + std::string(f.name) + " binary batch";
      throw DataError(msg);
    }
    uint64_t n = b.size() / rec;
    if (limit) n = std::min<uint64_t>(n, limit - c.images());
    const uint64_t first = c.images();
    c.labels.resize(first + n);
    c.pixels.resize((first + n) * kCifarPixels);
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t* r = b.data() + i * rec;
      const uint32_t label = r[f.label_offset];
      if (label >= f.classes)
        throw DataError(path + ": record " + std::to_string(i) + " (byte offset " +
                        std::to_string(i * rec + f.label_offset) + "): label " +
                        std::to_string(label) + "; expected 0.." + std::to_string(f.classes - 1) +
                        " (is this a " + f.name + " file?)");
      c.labels[first + i] = label;
      // CIFAR stores the R, G and B planes row-major: already x, then y, then channel.
      std::memcpy(c.pixels.data() + (first + i) * kCifarPixels, r + f.label_bytes, kCifarPixels);
    }
  }
  return c;
}

// ------------------------------------------------------------------------------------------
// IDX

const char* idx_type_name(uint8_t t) {
  switch (t) {
    case 0x08:
      return "uint8";
    case 0x09:
      return "int8";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
  }
  return "unknown";
}

uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// A parsed IDX header: dimension sizes and where the data starts.
struct IdxHeader {
  std::vector<uint32_t> dims;
  uint64_t data_offset = 0;
};

// Checks magic, element type and rank; `want_dims` is 3 for images, 1 for labels.
IdxHeader parse_idx_header(const std::vector<uint8_t>& b, const std::string& path,
                           uint32_t want_dims) {
  const uint32_t want_magic = 0x800 + want_dims;
  const std::string want =
      hex32(want_magic) + (want_dims == 1 ? " (IDX uint8 labels)" : " (IDX uint8 images)");
  if (b.size() < 4)
    throw DataError(path + ": " + std::to_string(b.size()) +
                    " bytes: too short for an IDX header; expected magic " + want);
  const uint32_t magic = be32(b.data());
  if (b[0] != 0 || b[1] != 0)
    throw DataError(path + ": magic number " + hex32(magic) + " is not an IDX file's; expected " +
                    want);
  const uint8_t type = b[2];
  const uint32_t rank = b[3];
  if (type != 0x08)
    throw DataError(path + ": IDX element type " + hex32(type).substr(8) + " (" +
                    idx_type_name(type) + "), magic " + hex32(magic) + "; expected " + want);
  if (rank != want_dims) {
    std::string what = rank == 1   ? "an IDX label file"
                       : rank == 3 ? "an IDX image file"
                                   : "an IDX file with " + std::to_string(rank) + " dimensions";
    throw DataError(path + ": magic number " + hex32(magic) + ": " + what + "; expected " + want);
  }
  IdxHeader h;
  h.data_offset = 4 + 4 * uint64_t(rank);
  if (b.size() < h.data_offset)
    throw DataError(path + ": truncated IDX header: " + std::to_string(b.size()) +
                    " bytes; expected " + std::to_string(h.data_offset) + " (magic + " +
                    std::to_string(rank) + " dimension sizes)");
  for (uint32_t d = 0; d < rank; ++d) h.dims.push_back(be32(b.data() + 4 + 4 * d));
  return h;
}

// Checks that exactly `expected` data bytes follow the header.
void check_idx_size(const std::vector<uint8_t>& b, const IdxHeader& h, const std::string& path,
                    uint64_t expected, const std::string& what) {
  const uint64_t actual = b.size() - h.data_offset;
  if (actual < expected)
    throw DataError(path + ": truncated: " + what + " need " + std::to_string(expected) +
                    " bytes after the " + std::to_string(h.data_offset) + "-byte header, found " +
                    std::to_string(actual));
  if (actual > expected)
    throw DataError(path + ": " + std::to_string(actual - expected) +
                    " unexpected bytes after the data: " + what + " need " +
                    std::to_string(expected) + " bytes after the header, found " +
                    std::to_string(actual));
}

}  // namespace

std::vector<uint8_t> read_maybe_gzip(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw IoError(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> b;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) b.insert(b.end(), buf, buf + n);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) throw IoError(path + ": read error (is it a directory?)");
  return is_gzip(b) ? gunzip(b, path) : b;
}

ImageCorpus read_cifar10(const std::vector<std::string>& paths, const CifarOptions& options) {
  static const CifarFormat f{"CIFAR-10", 1, 0, 10, "a CIFAR-100 file? (use the cifar100 format)"};
  return read_cifar(paths, f, options.limit);
}

ImageCorpus read_cifar100(const std::vector<std::string>& paths, Cifar100Label which,
                          const CifarOptions& options) {
  static const char* hint = "a CIFAR-10 file? (use the cifar10 format)";
  static const CifarFormat fine{"CIFAR-100", 2, 1, 100, hint};
  static const CifarFormat coarse{"CIFAR-100", 2, 0, 20, hint};
  return read_cifar(paths, which == Cifar100Label::Fine ? fine : coarse, options.limit);
}

ImageCorpus read_idx(const std::string& images_path, const std::string& labels_path,
                     const IdxOptions& options) {
  if (options.classes == 0) throw DataError(labels_path + ": class count is 0; expected >= 1");
  const std::vector<uint8_t> ib = read_maybe_gzip(images_path);
  const IdxHeader ih = parse_idx_header(ib, images_path, 3);
  const uint64_t count = ih.dims[0], rows = ih.dims[1], cols = ih.dims[2];
  if (rows == 0 || cols == 0)
    throw DataError(images_path + ": image size " + std::to_string(rows) + "x" +
                    std::to_string(cols) + " in the IDX header; expected at least 1x1");
  // Each dimension is 32 bits, so count x rows x cols can overflow 64 bits: computed with checks,
  // or a wrapped product could match a short file and leave images without pixels.
  const uint64_t size = rows * cols;
  const auto total = checked_mul(count, size);
  const std::string what =
      std::to_string(count) + " images of " + std::to_string(rows) + "x" + std::to_string(cols);
  if (!total || size > UINT32_MAX)
    throw DataError(images_path + ": the IDX header claims " + what +
                    (total ? " (" + std::to_string(size) + " pixels per image)"
                           : std::string(" (more than 2^64 pixels)")) +
                    ", more than an image or a dataset can hold (at most 4294967295 pixels per "
                    "image); the file is damaged or not an IDX image file");
  check_idx_size(ib, ih, images_path, *total, what);

  const std::vector<uint8_t> lb = read_maybe_gzip(labels_path);
  const IdxHeader lh = parse_idx_header(lb, labels_path, 1);
  if (lh.dims[0] != count)
    throw DataError(labels_path + ": holds " + std::to_string(lh.dims[0]) + " labels, but " +
                    images_path + " holds " + std::to_string(count) +
                    " images; expected one label per image");
  check_idx_size(lb, lh, labels_path, count, std::to_string(count) + " labels");

  const uint64_t n = options.limit ? std::min<uint64_t>(count, options.limit) : count;
  ImageCorpus c;
  c.width = static_cast<uint32_t>(cols);
  c.height = static_cast<uint32_t>(rows);
  c.channels = 1;
  c.classes = options.classes;
  c.labels.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t label = lb[lh.data_offset + i];
    if (label >= options.classes)
      throw DataError(labels_path + ": label " + std::to_string(i) + " (byte offset " +
                      std::to_string(lh.data_offset + i) + ") is " + std::to_string(label) +
                      "; expected 0.." + std::to_string(options.classes - 1) + " (" +
                      std::to_string(options.classes) + " classes)");
    c.labels[i] = label;
  }
  // IDX images are row-major: x (column) fastest, then y (row), as DSSTNE lays out dense data.
  c.pixels.assign(ib.begin() + ih.data_offset, ib.begin() + ih.data_offset + n * size);
  return c;
}

}  // namespace nn
