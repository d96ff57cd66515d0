// read_text_examples (man nn-generate, INPUT FORMAT): tuple syntax, skipped and malformed lines,
// repeated samples, directory input, example order by sample index, width rules, read-only
// feature indices, and a throughput check on a synthetic ratings-sized file.
#include "data/text_examples.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "core/error.h"
#include "data/data_test_util.h"

namespace nn {
namespace {

using test::TempDir;
using test::write_file;

struct Parsed {
  ExampleSet ds;
  FeatureIndex features, samples;
  TextExamplesStats stats;
};

Parsed parse(const std::string& text, TextExamplesOptions opt = {}) {
  TempDir dir;
  write_file(dir.file("in.txt"), text);
  Parsed p;
  p.ds = read_text_examples({dir.file("in.txt")}, "d", p.features, p.samples, opt, &p.stats);
  return p;
}

std::vector<uint32_t> row(const ExampleSet& ds, uint64_t e) {
  return std::vector<uint32_t>(ds.sparse_index.begin() + ds.sparse_start[e],
                               ds.sparse_index.begin() + ds.sparse_end[e]);
}

void expect_parse_error(const std::string& text, const std::string& fragment,
                        const TextExamplesOptions& opt = {}) {
  TempDir dir;
  const std::string path = dir.file("bad.txt");
  write_file(path, text);
  FeatureIndex f, s;
  try {
    read_text_examples({path}, "d", f, s, opt);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
        << e.what() << " lacks " << fragment;
  }
}

TEST(TextExamples, IndicatorDatasetShape) {
  const Parsed p = parse("u1\ta:b\nu2\tc\n");
  EXPECT_EQ(p.ds.attributes, attr::Sparse | attr::Boolean);
  EXPECT_EQ(p.ds.type, DataType::UInt);
  EXPECT_EQ(p.ds.name, "d");
  EXPECT_EQ(p.ds.width, 128u);
  EXPECT_EQ(p.ds.examples, 2u);
  EXPECT_EQ(p.ds.unique_examples, 2u);
  EXPECT_TRUE(p.ds.sparse_value.empty());
  EXPECT_NO_THROW(p.ds.validate("parsed"));
}

TEST(TextExamples, AnalogValuesAndDefaults) {
  TextExamplesOptions opt;
  opt.mode = ExampleMode::Analog;
  const Parsed p = parse("u\ta,1.5:b:c,-2e3:d,+4: e , 7 \n", opt);
  EXPECT_EQ(p.ds.attributes, attr::Sparse);
  EXPECT_EQ(p.ds.type, DataType::Float);
  // "b" has no value (0, as in DSSTNE); blanks around a value are tolerated like stof does.
  EXPECT_EQ(p.ds.sparse_value, (std::vector<float>{1.5f, 0.0f, -2000.0f, 4.0f, 7.0f}));
  EXPECT_EQ(p.features.find(" e "), 4);  // feature names are taken verbatim
}

TEST(TextExamples, SkipsEmptyLinesLinesWithoutTabAndEmptyFeatures) {
  const Parsed p = parse("\nno tab here\nu1\ta::b:\n\r\nu2\t,5:c\r\nu3\t\n");
  EXPECT_EQ(p.stats.skipped_lines, 1u);
  EXPECT_EQ(p.stats.lines, 6u);
  EXPECT_EQ(p.ds.examples, 3u);
  EXPECT_EQ(row(p.ds, 0), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(row(p.ds, 1), (std::vector<uint32_t>{2}));
  EXPECT_TRUE(row(p.ds, 2).empty());  // a sample without features is still an example
  EXPECT_EQ(p.features.find("c"), 2);
}

TEST(TextExamples, LastLineWithoutNewline) {
  const Parsed p = parse("u1\ta\nu2\tb");
  EXPECT_EQ(p.ds.examples, 2u);
  EXPECT_EQ(row(p.ds, 1), (std::vector<uint32_t>{1}));
}

TEST(TextExamples, ExtraValuesKeepFirst) {
  TextExamplesOptions opt;
  opt.mode = ExampleMode::Analog;
  const Parsed p = parse("u\ta,1,2,3:b,4\n", opt);
  EXPECT_EQ(p.ds.sparse_value, (std::vector<float>{1, 4}));
  EXPECT_EQ(p.stats.extra_values, 1u);
}

TEST(TextExamples, RepeatedSampleReplacesEarlierLine) {
  const Parsed p = parse("u1\ta:b\nu2\tc\nu1\td\n");
  EXPECT_EQ(p.ds.examples, 2u);
  EXPECT_EQ(row(p.ds, 0), (std::vector<uint32_t>{3}));
  EXPECT_EQ(row(p.ds, 1), (std::vector<uint32_t>{2}));
  EXPECT_EQ(p.stats.replaced_samples, 1u);
  EXPECT_EQ(p.ds.nnz(), 2u);         // the replaced entries are not in the dataset
  EXPECT_EQ(p.features.size(), 4u);  // but their features stay in the index
}

TEST(TextExamples, StrictRefusesRepeatedSamplesAndBlanksInFeatures) {
  TextExamplesOptions strict;
  strict.strict = true;
  // One line per (user, item): DSSTNE kept the last line per user and lost the rest.
  expect_parse_error("u1\ta\nu1\tb\n", ":2: sample \"u1\" is on an earlier line too", strict);
  expect_parse_error("u1\ta\nu1\tb\n", "--rows", strict);
  // Space-separated features: one feature named "dune alien".
  expect_parse_error("u0\tdune alien\n", ":1: feature \"dune alien\" contains a blank", strict);
  EXPECT_EQ(parse("u1\ta:b\nu2\tc\n", strict).ds.examples, 2u);  // well-formed input passes
  // Without strict (nn-predict's filters, DSSTNE compatibility) both are accepted as before.
  EXPECT_EQ(parse("u0\tdune alien\n").features.size(), 1u);
}

TEST(TextExamples, RowsLayoutGroupsRowsPerSample) {
  TextExamplesOptions opt;
  opt.rows = true;
  opt.skip_header = true;
  // MovieLens ratings.csv: header, user,item,rating,timestamp; a user's rows need not be adjacent.
  const Parsed p = parse(
      "userId,movieId,rating,timestamp\r\n1,10,4.0,964982703\r\n"
      "2,20,3.5,964982224\r\n1,30,5.0,964982931\r\n\n",
      opt);
  ASSERT_EQ(p.ds.examples, 2u);
  EXPECT_EQ(p.samples.find("1"), 0);
  EXPECT_EQ(p.samples.find("userId"), -1);                 // the header is not a sample
  EXPECT_EQ(row(p.ds, 0), (std::vector<uint32_t>{0, 2}));  // 10 and 30, in file order
  EXPECT_EQ(row(p.ds, 1), (std::vector<uint32_t>{1}));
  EXPECT_EQ(p.ds.attributes, attr::Sparse | attr::Boolean);
  EXPECT_EQ(p.stats.extra_columns, 3u);

  opt.mode = ExampleMode::Analog;
  opt.skip_header = false;
  const Parsed a = parse("u\tb\t2.5\nv\ta\t1\nu\ta\t-1\n", opt);  // TAB-separated
  ASSERT_EQ(a.ds.examples, 2u);
  EXPECT_EQ(row(a.ds, 0), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(a.ds.sparse_value, (std::vector<float>{2.5f, -1.0f, 1.0f}));
}

TEST(TextExamples, RowsLayoutErrors) {
  TextExamplesOptions opt;
  opt.rows = true;
  expect_parse_error("u,a\nlonely\n", ":2: expected a row \"sample,feature[,value]\"", opt);
  expect_parse_error("u,a\n,b\n", ":2: expected a row", opt);
  opt.mode = ExampleMode::Analog;
  expect_parse_error("u,a,1\nu,b\n", ":2: analog rows need a value", opt);
  expect_parse_error("u,a,x\n", ":1:", opt);
  // Without skip_header a header row is data: its value column is not a number.
  expect_parse_error("userId,movieId,rating\n", "not a finite number", opt);
}

TEST(TextExamples, ExamplesFollowPreloadedSampleIndexOrder) {
  TempDir dir;
  write_file(dir.file("in.txt"), "first\ta\nsecond\tb\nthird\tc\n");
  FeatureIndex features, samples;
  samples.insert("third", 0, "test");
  samples.insert("other", 1, "test");
  samples.insert("first", 5, "test");
  const ExampleSet ds = read_text_examples({dir.file("in.txt")}, "d", features, samples, {});
  // Sample indices: third=0, first=5, second=6 (new) -> examples third, first, second.
  ASSERT_EQ(ds.examples, 3u);
  EXPECT_EQ(row(ds, 0), (std::vector<uint32_t>{2}));
  EXPECT_EQ(row(ds, 1), (std::vector<uint32_t>{0}));
  EXPECT_EQ(row(ds, 2), (std::vector<uint32_t>{1}));
  EXPECT_EQ(samples.find("second"), 6);
  EXPECT_TRUE(samples.changed());
}

TEST(TextExamples, ReadOnlyFeatureIndexDropsUnknownFeatures) {
  TempDir dir;
  write_file(dir.file("in.txt"), "u1\ta:x:b\nu2\ty\n");
  FeatureIndex features, samples;
  features.insert("a", 0, "test");
  features.insert("b", 1, "test");
  TextExamplesOptions opt;
  opt.allow_new_features = false;
  TextExamplesStats st;
  const ExampleSet ds = read_text_examples({dir.file("in.txt")}, "d", features, samples, opt, &st);
  EXPECT_EQ(st.dropped_features, 2u);
  EXPECT_EQ(st.entries, 2u);
  EXPECT_EQ(row(ds, 0), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(features.size(), 2u);
  EXPECT_FALSE(features.changed());
}

TEST(TextExamples, UnknownSamplesDroppedWhenNotAllowed) {
  TempDir dir;
  write_file(dir.file("in.txt"), "known\ta\nstranger\tb\n");
  FeatureIndex features, samples;
  samples.insert("known", 0, "test");
  TextExamplesOptions opt;
  opt.allow_new_samples = false;
  TextExamplesStats st;
  const ExampleSet ds = read_text_examples({dir.file("in.txt")}, "d", features, samples, opt, &st);
  EXPECT_EQ(ds.examples, 1u);
  EXPECT_EQ(st.dropped_samples, 1u);
}

TEST(TextExamples, WidthRules) {
  std::string text = "u\t";
  for (int i = 0; i < 130; ++i) text += "f" + std::to_string(i) + ":";
  EXPECT_EQ(parse(text).ds.width, 256u);  // 130 rounded up to 128's multiple
  TextExamplesOptions opt;
  opt.width_align = 1;
  EXPECT_EQ(parse(text, opt).ds.width, 130u);
  opt.min_width = 1000;
  EXPECT_EQ(parse(text, opt).ds.width, 1000u);
  opt = {};
  opt.width_align = 100;
  EXPECT_EQ(parse(text, opt).ds.width, 200u);
  EXPECT_EQ(parse("u\t\n").ds.width, 128u);  // never 0, even without features
}

TEST(TextExamples, DirectoryInputReadsRegularFilesSorted) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("parts"));
  std::filesystem::create_directory(dir.file("parts/sub"));
  write_file(dir.file("parts/b.txt"), "s2\tb\ns1\tz\n");
  write_file(dir.file("parts/a.txt"), "s1\ta\n");
  write_file(dir.file("parts/sub/c.txt"), "s3\tc\n");  // not read: not a regular file entry
  FeatureIndex features, samples;
  TextExamplesStats st;
  const ExampleSet ds = read_text_examples({dir.file("parts")}, "d", features, samples, {}, &st);
  EXPECT_EQ(ds.examples, 2u);
  EXPECT_EQ(samples.find("s1"), 0);                   // a.txt first
  EXPECT_EQ(row(ds, 0), (std::vector<uint32_t>{2}));  // s1 replaced by b.txt's "z"
  EXPECT_EQ(samples.find("s3"), -1);
}

TEST(TextExamples, ErrorsNameFileAndLine) {
  expect_parse_error("u\ta,1\nv\tb,abc\n", ":2: feature \"b,abc\": value \"abc\"");
  expect_parse_error("u\ta,\n", ":1:");
  expect_parse_error("u\ta,nan\n", "not a finite number");
  expect_parse_error("u\ta,1e99\n", "not a finite number");
  expect_parse_error("u\ta,1.5x\n", ":1:");
  expect_parse_error("ok\ta\n\tb\n", ":2: empty sample name");
  expect_parse_error("u\ta\tb\n", "more than one TAB");
}

TEST(TextExamples, MissingInputIsError) {
  TempDir dir;
  FeatureIndex f, s;
  try {
    read_text_examples({dir.file("absent.txt")}, "d", f, s, {});
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.txt"), std::string::npos);
  }
}

TEST(TextExamples, LineLongerThanReadBuffer) {
  std::string text = "u\t";
  for (int i = 0; i < 3'000'000; ++i) text += "ab:";  // 9 MB: more than one read block
  text += "\nv\tc\n";
  const Parsed p = parse(text);
  EXPECT_EQ(p.ds.examples, 2u);
  EXPECT_EQ(p.ds.sparse_end[0], 3'000'000u);
  EXPECT_EQ(row(p.ds, 1), (std::vector<uint32_t>{1}));
}

TEST(TextExamples, LineLongerThanTheLimitIsRejected) {
  TextExamplesOptions opt;
  opt.max_line_bytes = 1024;
  std::string line = "u1\t";
  for (int k = 0; k < 1000; ++k) line += "f" + std::to_string(k) + ":";
  try {
    parse("u0\ta:b\n" + line + "\n", opt);
    ADD_FAILURE() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("in.txt:2: line longer than 1.0 KiB"), std::string::npos)
        << e.what();
  }
  // Lines within the limit, many of them, still parse with the small buffer.
  std::string many;
  for (int u = 0; u < 500; ++u) many += "u" + std::to_string(u) + "\ta:b:c\n";
  EXPECT_EQ(parse(many, opt).ds.examples, 500u);
}

TEST(TextExamples, RatingsSizedInputParses) {
  // 20,000 users x 100 ratings over 27,000 movies: 2M entries, a tenth of ML-20M. Its speed is
  // measured by scripts/bench_text_examples.sh (no timing assertions in unit tests: they fail
  // under load).
  std::string text;
  text.reserve(2'000'000 * 12);
  for (int u = 0; u < 20000; ++u) {
    text += std::to_string(u);
    text += '\t';
    for (int k = 0; k < 100; ++k) {
      text += std::to_string((u * 37 + k * 271) % 27000);
      text += k % 2 ? ",4.5:" : ",3:";
    }
    text += '\n';
  }
  TextExamplesOptions opt;
  opt.mode = ExampleMode::Analog;
  const Parsed p = parse(text, opt);
  EXPECT_EQ(p.ds.nnz(), 2'000'000u);
  EXPECT_EQ(p.ds.examples, 20000u);
}

}  // namespace
}  // namespace nn
