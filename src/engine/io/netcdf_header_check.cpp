// Walks a classic netCDF header (the format of NetCDF Users Guide "File Format Specification")
// with every count bounded by the bytes left in the file, so no claimed size is trusted.
#include "io/netcdf_header_check.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"

namespace nn {

namespace {

constexpr uint32_t kTagDimension = 0x0A, kTagVariable = 0x0B, kTagAttribute = 0x0C;
constexpr uint64_t kMaxName = 256;      // NC_MAX_NAME
constexpr uint64_t kMaxVarDims = 1024;  // NC_MAX_VAR_DIMS

class HeaderWalker {
 public:
  HeaderWalker(const std::string& path, std::FILE* file, uint64_t file_size, int version)
      : path_(path), file_(file), size_(file_size), version_(version) {}

  void walk() {
    pos_ = 4;  // after the magic number
    (void)count_field("number of records", /*allow_streaming=*/true);
    const uint64_t dims = list_header(kTagDimension, "dimension list");
    std::set<std::string> dim_names;
    bool record_dim = false;
    for (uint64_t d = 0; d < dims; ++d) {
      const std::string name = read_name("dimension name");
      if (!dim_names.insert(name).second) fail("duplicate dimension name \"" + name + "\"");
      const uint64_t length = count_field("dimension length");
      if (length == 0) {
        if (record_dim) fail("a second unlimited (record) dimension \"" + name + "\"");
        record_dim = true;
        record_dim_id_ = d;
      }
    }
    dims_ = dims;
    attribute_list("global attribute list");
    const uint64_t vars = list_header(kTagVariable, "variable list");
    std::set<std::string> var_names;
    for (uint64_t v = 0; v < vars; ++v) {
      const std::string name = read_name("variable name");
      if (!var_names.insert(name).second) fail("duplicate variable name \"" + name + "\"");
      const uint64_t rank = count_field("rank of variable \"" + name + "\"");
      if (rank > kMaxVarDims)
        fail("variable \"" + name + "\" claims " + std::to_string(rank) + " dimensions (at most " +
             std::to_string(kMaxVarDims) + ")");
      need(rank * id_bytes(), "dimension ids of variable \"" + name + "\"");
      for (uint64_t i = 0; i < rank; ++i) {
        const uint64_t id = version_ == 5 ? u64() : u32();
        if (id >= dims_)
          fail("variable \"" + name + "\" uses dimension id " + std::to_string(id) + " of " +
               std::to_string(dims_));
        if (record_dim && id == record_dim_id_ && i != 0)
          fail("variable \"" + name + "\" has the record dimension in position " +
               std::to_string(i) + " (only the first may be unlimited)");
      }
      attribute_list("attribute list of variable \"" + name + "\"");
      (void)type_field("type of variable \"" + name + "\"");
      need(version_ == 5 ? 8 : 4, "size of variable \"" + name + "\"");
      pos_ += version_ == 5 ? 8 : 4;  // vsize: informative only (may be wrong for > 4 GiB)
      const uint64_t begin = version_ == 1 ? u32() : u64();
      if (begin > size_)
        fail("variable \"" + name + "\" starts at byte " + std::to_string(begin) +
             ", beyond the end of the file (" + std::to_string(size_) + " bytes)");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw DataError(path_ + ": damaged netCDF header: " + what + " (header byte " +
                    std::to_string(pos_) + " of a " + std::to_string(size_) + "-byte file)");
  }

  // `bytes` more header bytes must exist.
  void need(uint64_t bytes, const std::string& what) const {
    if (bytes > size_ - pos_)
      fail(what + " needs " + std::to_string(bytes) + " bytes; the file ends first");
  }

  void read(void* out, size_t n) {
    need(n, "header field");
    if (std::fseek(file_, static_cast<long>(pos_), SEEK_SET) != 0 ||
        std::fread(out, 1, n, file_) != n)
      throw IoError(path_ + ": cannot read netCDF header: " + std::strerror(errno));
    pos_ += n;
  }
  uint32_t u32() {
    unsigned char b[4];
    read(b, 4);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
  }
  uint64_t u64() {
    const uint64_t hi = u32();
    return hi << 32 | u32();
  }
  uint64_t id_bytes() const { return version_ == 5 ? 8 : 4; }

  // A NON_NEG count: 32-bit signed in CDF-1/2, 64-bit signed in CDF-5.
  uint64_t count_field(const std::string& what, bool allow_streaming = false) {
    if (version_ == 5) {
      const uint64_t v = u64();
      if (allow_streaming && v == ~uint64_t(0)) return 0;
      if (v > uint64_t(INT64_MAX)) fail(what + " is negative");
      return v;
    }
    const uint32_t v = u32();
    if (allow_streaming && v == 0xFFFFFFFFu) return 0;
    if (v > uint32_t(INT32_MAX)) fail(what + " is negative");
    return v;
  }

  // Tag + element count; ABSENT is two zeros. Each element needs at least `min_bytes`, so the
  // count is bounded by the bytes left.
  uint64_t list_header(uint32_t tag, const std::string& what) {
    const uint32_t got = u32();
    const uint64_t n = count_field(what + " length");
    if (got == 0) {
      if (n != 0) fail(what + " is absent but claims " + std::to_string(n) + " elements");
      return 0;
    }
    if (got != tag)
      fail(what + " has tag " + std::to_string(got) + ", expected " + std::to_string(tag));
    const uint64_t min_bytes = 2 * id_bytes();  // a name length + 4 name bytes at least
    if (n > (size_ - pos_) / min_bytes)
      fail(what + " claims " + std::to_string(n) + " elements; the file cannot hold them");
    return n;
  }

  std::string read_name(const std::string& what) {
    const uint64_t length = count_field(what + " length");
    if (length == 0 || length > kMaxName)
      fail(what + " is " + std::to_string(length) + " bytes long (1.." + std::to_string(kMaxName) +
           " allowed)");
    const uint64_t padded = (length + 3) / 4 * 4;
    need(padded, what);
    std::string name(length, '\0');
    read(name.data(), length);
    pos_ += padded - length;
    return name;
  }

  // nc_type: bytes per value, 0 when invalid for this format version.
  uint64_t type_field(const std::string& what) {
    const uint32_t type = u32();
    static const uint64_t sizes[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};  // NC_BYTE .. NC_UINT64
    const uint32_t last = version_ == 5 ? 11 : 6;
    if (type == 0 || type > last)
      fail(what + " is " + std::to_string(type) + ", not a type of this netCDF format");
    return sizes[type];
  }

  void attribute_list(const std::string& what) {
    const uint64_t n = list_header(kTagAttribute, what);
    for (uint64_t a = 0; a < n; ++a) {
      const std::string name = read_name("attribute name in " + what);
      const uint64_t value_size = type_field("type of attribute \"" + name + "\"");
      const uint64_t values = count_field("value count of attribute \"" + name + "\"");
      if (values > (size_ - pos_) / value_size)
        fail("attribute \"" + name + "\" claims " + std::to_string(values) +
             " values; the file cannot hold them");
      const uint64_t padded = (values * value_size + 3) / 4 * 4;
      need(padded, "values of attribute \"" + name + "\"");
      pos_ += padded;
    }
  }

  const std::string& path_;
  std::FILE* file_;
  uint64_t size_;
  int version_;
  uint64_t pos_ = 0;
  uint64_t dims_ = 0;
  uint64_t record_dim_id_ = 0;
};

}  // namespace

void check_netcdf_classic_header(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) throw IoError(path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    std::FILE* f;
    ~Closer() { std::fclose(f); }
  } closer{file};
  unsigned char magic[4];
  if (std::fread(magic, 1, 4, file) != 4) return;  // too short to be anything; netCDF says so
  if (std::memcmp(magic, "CDF", 3) != 0) return;   // not classic netCDF
  const int version = magic[3];
  if (version != 1 && version != 2 && version != 5) return;
  if (std::fseek(file, 0, SEEK_END) != 0)
    throw IoError(path + ": cannot read netCDF header: " + std::strerror(errno));
  const long size = std::ftell(file);
  if (size < 0) throw IoError(path + ": cannot read netCDF header: " + std::strerror(errno));
  HeaderWalker(path, file, static_cast<uint64_t>(size), version).walk();
}

}  // namespace nn
