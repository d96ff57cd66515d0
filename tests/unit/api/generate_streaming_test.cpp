// Streaming nn-generate (DatasetGenerator, docs/large-datasets.md) against the in-memory
// conversion it replaced (read_text_examples + write_datasets + the index files, as generate()
// did before): the same variables with the same types and values (ncdump of both files), the
// same datasets read back, the same index files byte for byte, on the user-guide examples and on
// inputs that take every path (slices, rows, dropped features, out-of-order input, chunks and
// deflate, a directory of files).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/test_util.h"
#include "data/text_examples.h"
#include "io/netcdf_dataset.h"
#include "nn/nn.h"

namespace nn::api {
namespace {

using nn::test::ScratchDir;
namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// ncdump of the file without its first line (which names the file); "" without ncdump.
std::string dump(const std::string& path) {
  std::string out;
  std::FILE* p = ::popen(("ncdump '" + path + "' 2>/dev/null").c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ::pclose(p);
  const size_t nl = out.find('\n');
  return nl == std::string::npos ? out : out.substr(nl + 1);
}

bool have_ncdump() {
  return std::system("ncdump >/dev/null 2>&1 </dev/null; command -v ncdump >/dev/null") == 0;
}

// What generate() did before streaming: everything in memory, then the three files.
void generate_in_memory(const GenerateJob& j) {
  FeatureIndex features, samples;
  if (!j.create_features) features = load_index(j.features);
  if (fs::exists(j.samples)) samples = load_index(j.samples);
  TextExamplesOptions opt;
  opt.mode = j.analog ? ExampleMode::Analog : ExampleMode::Indicator;
  opt.allow_new_features = j.create_features || j.merge_features;
  opt.width_align = j.align;
  opt.strict = true;
  opt.rows = j.rows;
  opt.skip_header = j.header;
  const ExampleSet ds = read_text_examples({j.input}, j.dataset, features, samples, opt);
  write_datasets(j.output, {ds});
  if (features.changed() || j.create_features) save_index(j.features, features);
  if (samples.changed()) save_index(j.samples, samples);
}

class StreamingGenerate : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.path() + "/" + name; }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }

  // Runs `job` both ways, from the same index files (copied from `index_from` when given), and
  // compares everything they wrote. Returns the streaming run's report.
  GenerateReport compare(GenerateJob job, const std::string& label) {
    SCOPED_TRACE(label);
    const std::string ref = path(label + ".ref"), got = path(label + ".got");
    fs::create_directories(ref);
    fs::create_directories(got);
    for (const std::string& idx : {job.features, job.samples})
      if (!idx.empty() && fs::exists(idx)) {
        fs::copy_file(idx, ref + "/" + fs::path(idx).filename().string());
        fs::copy_file(idx, got + "/" + fs::path(idx).filename().string());
      }
    const auto in = [](const std::string& dir, GenerateJob j) {
      j.output = dir + "/out.nc";
      j.features = dir + "/" + fs::path(j.features).filename().string();
      j.samples = dir + "/" + fs::path(j.samples).filename().string();
      return j;
    };
    const GenerateJob want_job = in(ref, job), got_job = in(got, job);
    generate_in_memory(want_job);
    const GenerateReport report = DatasetGenerator(got_job).generate();

    const auto want = read_datasets(want_job.output);
    const auto have = read_datasets(got_job.output);  // checks the checksum trailer too
    EXPECT_EQ(have.size(), 1u);
    EXPECT_EQ(want.size(), 1u);
    if (have.size() == 1 && want.size() == 1) {
      const ExampleSet &a = want[0], &b = have[0];
      EXPECT_EQ(b.name, a.name);
      EXPECT_EQ(b.type, a.type);
      EXPECT_EQ(b.attributes, a.attributes);
      EXPECT_EQ(b.width, a.width);
      EXPECT_EQ(b.examples, a.examples);
      EXPECT_EQ(b.sparse_start, a.sparse_start);
      EXPECT_EQ(b.sparse_end, a.sparse_end);
      EXPECT_EQ(b.sparse_index, a.sparse_index);
      EXPECT_EQ(b.sparse_value, a.sparse_value);
      EXPECT_EQ(report.samples, a.examples);
      EXPECT_EQ(report.entries, a.nnz());
      EXPECT_EQ(report.width, a.width);
    }
    if (have_ncdump()) EXPECT_EQ(dump(got_job.output), dump(want_job.output));
    for (const auto& [w, g] : {std::pair{want_job.features, got_job.features},
                               std::pair{want_job.samples, got_job.samples}}) {
      EXPECT_EQ(fs::exists(g), fs::exists(w)) << g;
      if (fs::exists(w)) EXPECT_EQ(read_file(g), read_file(w)) << g;
    }
    // Nothing but the outputs (and index copies) is left in the folder: no temporary file.
    for (const auto& e : fs::directory_iterator(got))
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
    return report;
  }

  GenerateJob job(const std::string& input) const {
    GenerateJob j;
    j.dataset = "input";
    j.input = input;
    j.features = path("features.idx");
    j.samples = path("samples.idx");
    j.create_features = true;
    return j;
  }

  ScratchDir dir_;
};

// Many examples with a deterministic spread of features and values.
std::string many_examples(int lines, int items, bool analog) {
  std::string out;
  for (int i = 0; i < lines; ++i) {
    out += "s" + std::to_string(i) + '\t';
    const int n = 1 + (i * 7) % 37;
    for (int k = 0; k < n; ++k) {
      if (k) out += ':';
      out += "item" + std::to_string((i * 13 + k * 101) % items);
      if (analog) out += "," + std::to_string((i + k) % 11) + ".5";
    }
    out += '\n';
  }
  return out;
}

TEST_F(StreamingGenerate, UserGuideExamplesMatchInMemory) {
  const std::string data = std::string(NN_TEST_DATA_DIR) + "/generate";
  GenerateJob j = job(data + "/indicator.txt");
  const GenerateReport r = compare(j, "indicator");
  EXPECT_TRUE(r.streamed);
  // The analog example with the feature index of the first (fixed: -f without -c or -m).
  j.output = path("guide.nc");
  generate_in_memory(j);
  j.input = data + "/analog.txt";
  j.analog = true;
  j.create_features = false;
  compare(j, "analog");
}

TEST_F(StreamingGenerate, SlicesMatchInMemory) {
  // ~95,000 entries in slices of 4,096 (the smallest buffer): the offsets and entries of many
  // slices must line up.
  GenerateJob j = job(write("many.txt", many_examples(5000, 3000, true)));
  j.analog = true;
  j.buffer_bytes = 1;
  const GenerateReport r = compare(j, "slices");
  EXPECT_TRUE(r.streamed);
  EXPECT_GT(r.entries, 40000u);
}

TEST_F(StreamingGenerate, ChunkedAndDeflatedValuesMatch) {
  GenerateJob j = job(write("many.txt", many_examples(3000, 2000, true)));
  j.analog = true;
  j.buffer_bytes = 1;
  j.chunk_entries = 1000;
  j.deflate_level = 6;
  compare(j, "deflate");
  j.deflate_level = 0;
  j.chunk_entries = 777;  // chunks that do not divide the slices or the arrays
  compare(j, "chunks");
}

TEST_F(StreamingGenerate, ChecksumTrailerNamesTheVariableOfADamagedChunk) {
  // Chunks are regions of the checksum trailer named after their variable (contiguous arrays
  // are one region each): a byte changed in the middle of a file that is mostly sparseIndex0's
  // deflated chunks is reported by name. (Few items: their names, stored with the dataset, are
  // then a small part of the file.)
  GenerateJob j = job(write("many.txt", many_examples(20000, 200, false)));
  j.output = path("chunks.nc");
  j.chunk_entries = 5000;
  j.deflate_level = 6;
  DatasetGenerator(j).generate();
  ASSERT_EQ(read_datasets(j.output).size(), 1u);
  std::string bytes = read_file(j.output);
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(j.output, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_CONTAINS(nn::test::error_of<DataError>([&] { read_datasets(j.output); }),
                  "variable 'sparseIndex0': checksum mismatch in its values");
}

TEST_F(StreamingGenerate, OddLinesAndDroppedFeaturesMatch) {
  // A fixed feature index drops unknown features (a line may lose all of them), lines without a
  // TAB are skipped, blank lines and CRLF endings are fine.
  write("features.idx", "a\t0\nb\t1\nc\t2\n");
  GenerateJob j =
      job(write("odd.txt", "s1\ta:b:zz\r\n\nno tab here\ns2\tzz:yy\ns3\tc,4:a\ns4\t\ns5\tb\n"));
  j.create_features = false;
  const GenerateReport r = compare(j, "odd");
  EXPECT_EQ(r.dropped_features, 3u);
  EXPECT_EQ(r.skipped_lines, 1u);
  j.merge_features = true;
  compare(j, "merge");
}

TEST_F(StreamingGenerate, RowsMatchInMemory) {
  // Rows grouped per sample are written as they come; rows of one sample far apart go through
  // the scratch file. Both give the in-memory result.
  GenerateJob j = job(write("grouped.csv",
                            "user,item,rating\nu1,m1,5\nu1,m2,3\nu2,m1,4\n"
                            "u3,m3,1\nu3,m3,2\n"));
  j.rows = true;
  j.header = true;
  j.analog = true;
  EXPECT_FALSE(compare(j, "grouped").reordered);
  j.input = write("scattered.csv", "user,item,rating\nu1,m1,5\nu2,m1,4\nu1,m2,3\n");
  EXPECT_TRUE(compare(j, "scattered").reordered);
}

// Rows of `users` users in an order that scatters every user's rows over the whole file, some
// rows repeated (a user's repeated item stays twice, in file order), values from the row.
std::string scattered_rows(int rows, int users, int items) {
  std::string out = "user,item,rating\n";
  for (int i = 0; i < rows; ++i) {
    const int user = int((uint64_t(i) * 7919) % uint64_t(users));
    const int item = (i % 5 == 4) ? (i / users) % items : (i * 31 + user * 17) % items;
    out += "u" + std::to_string(user) + "," + "m" + std::to_string(item) + "," +
           std::to_string(1 + i % 5) + "\n";
  }
  return out;
}

TEST_F(StreamingGenerate, ScatteredRowsThroughManyBuffersMatchInMemory) {
  // 60,000 rows of 701 users, buffers of 4,096 entries: each user's rows are written to the
  // scratch file from ~15 buffers, in runs of one or a few places; the slices of the copy into
  // the dataset do not line up with the examples.
  GenerateJob j = job(write("ratings.csv", scattered_rows(60000, 701, 2500)));
  j.rows = true;
  j.header = true;
  j.analog = true;
  j.buffer_bytes = 1;
  const GenerateReport r = compare(j, "scattered-analog");
  EXPECT_TRUE(r.reordered);
  EXPECT_EQ(r.entries, 60000u);
  j.analog = false;  // indicator: sparseIndex only
  EXPECT_TRUE(compare(j, "scattered-indicator").reordered);
  j.chunk_entries = 3000;  // and into chunks with deflate
  j.deflate_level = 4;
  EXPECT_TRUE(compare(j, "scattered-deflate").reordered);
}

TEST_F(StreamingGenerate, ExistingSampleIndexInAnotherOrderMatches) {
  // The sample index numbers s2 before s1: the dataset is in index order, not input order.
  write("samples.idx", "s2\t0\ns1\t1\n");
  GenerateJob j = job(write("in.txt", "s1\ta:b\ns2\tc\ns3\ta\n"));
  EXPECT_TRUE(compare(j, "reordered").reordered);
  // In order with the existing index: written as read, and s3 is added after them.
  write("samples.idx", "s1\t0\ns2\t1\n");
  EXPECT_FALSE(compare(j, "ordered").reordered);
  // An index with samples this input does not have: they are not examples.
  write("samples.idx", "s9\t0\ns3\t1\ns8\t2\ns1\t3\n");
  EXPECT_TRUE(compare(j, "gaps").reordered);
}

TEST_F(StreamingGenerate, DirectoryOfFilesMatches) {
  fs::create_directories(path("parts"));
  write("parts/b.txt", "s3\tx:y\ns4\tz\n");
  write("parts/a.txt", "s1\ty\ns2\tx:z:w\n");
  compare(job(path("parts")), "directory");
}

TEST_F(StreamingGenerate, ErrorsAreThoseOfTheInMemoryReader) {
  // The first pass parses as before: the same message names the file and line, and nothing is
  // written.
  GenerateJob j = job(write("dup.txt", "s1\ta\ns2\tb\ns1\tc\n"));
  j.output = path("dup.nc");
  EXPECT_CONTAINS(nn::test::error_of<DataError>([&] { DatasetGenerator(j).generate(); }),
                  "dup.txt:3: sample \"s1\" is on an earlier line too");
  EXPECT_FALSE(fs::exists(j.output));
  EXPECT_FALSE(fs::exists(j.features));
  j.input = write("empty.txt", "no tab\n");
  EXPECT_CONTAINS(nn::test::error_of<DataError>([&] { DatasetGenerator(j).generate(); }),
                  "no examples found");
}

}  // namespace
}  // namespace nn::api
