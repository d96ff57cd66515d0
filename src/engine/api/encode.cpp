// The public encode_images() (include/nn/encode.h): corpus (data/image_corpus.h) -> datasets ->
// NetCDF file(s) (io/netcdf_dataset.h) + class index, with a summary.
#include "nn/encode.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_identity.h"
#include "data/image_corpus.h"
#include "data/text_examples.h"
#include "io/netcdf_dataset.h"

namespace nn::api {
namespace {

ImageCorpus read_corpus(const EncodeJob& job) {
  if (job.format == "cifar10") return read_cifar10(job.inputs, {job.limit});
  if (job.format == "cifar100")
    return read_cifar100(job.inputs, job.coarse ? Cifar100Label::Coarse : Cifar100Label::Fine,
                         {job.limit});
  IdxOptions opt;
  opt.limit = job.limit;
  opt.classes = job.classes;
  return read_idx(job.inputs.at(0), job.labels, opt);
}

std::vector<std::string> class_names(const EncodeJob& job, uint32_t classes) {
  std::string spec = job.class_names;
  if (spec.empty()) spec = job.format == "cifar10" ? "cifar10" : "numeric";
  const std::vector<std::string>* builtin = nullptr;
  if (spec == "numeric") return numeric_class_names(classes);
  if (spec == "cifar10") builtin = &cifar10_class_names();
  if (spec == "fashion-mnist") builtin = &fashion_mnist_class_names();
  if (!builtin) return read_class_names(spec, classes);
  if (builtin->size() != classes)
    throw ArgumentError("--class-names " + spec + ": names " + std::to_string(builtin->size()) +
                        " classes, but the labels have " + std::to_string(classes));
  return *builtin;
}

std::string default_class_index(const std::string& output) {
  const std::filesystem::path dir = std::filesystem::path(output).parent_path();
  return (dir / "classes.idx").string();
}

// "3000 images 28x28x1, 10 classes (298..311 per class)".
std::string describe(const ImageCorpus& c, const std::vector<uint64_t>& ids) {
  std::vector<uint64_t> per_class(c.classes, 0);
  for (uint64_t id : ids) ++per_class[c.labels[id]];
  uint64_t lo = ids.empty() ? 0 : UINT64_MAX, hi = 0;
  for (uint64_t n : per_class) lo = std::min(lo, n), hi = std::max(hi, n);
  return std::to_string(ids.size()) + " images " + std::to_string(c.width) + "x" +
         std::to_string(c.height) + "x" + std::to_string(c.channels) + ", " +
         std::to_string(c.classes) + " classes (" + std::to_string(lo) + ".." + std::to_string(hi) +
         " images per class)";
}

void write_part(const EncodeJob& job, const ImageCorpus& c, const std::vector<uint64_t>& ids,
                AtomicFile& out, const LogSink& log) {
  write_datasets(out,
                 {image_dataset(c, ids, job.input_name), label_dataset(c, ids, job.output_name)});
  const std::string& path = out.target();
  log("wrote " + path + ": " + describe(c, ids) + "; datasets \"" + job.input_name +
      "\" (dense UChar image) and \"" + job.output_name + "\" (sparse one-hot labels)");
}

// The outputs need files of their own, and none may be an input (checked before reading).
void check_files(const EncodeJob& job, const std::string& index_path) {
  std::vector<NamedFile> inputs;
  for (const std::string& in : job.inputs) inputs.push_back({"inputs", in});
  inputs.push_back({"labels", job.labels});
  inputs.push_back({"class_names", job.class_names});  // a preset name is no file: never equal
  check_distinct_files(
      {{"output", job.output}, {"output2", job.output2}, {"class_index", index_path}}, inputs);
}

}  // namespace

void encode_images(const EncodeJob& job, const LogSink& log) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string index_path =
      job.class_index.empty() ? default_class_index(job.output) : job.class_index;
  check_files(job, index_path);
  const ImageCorpus corpus = read_corpus(job);
  if (corpus.images() == 0) throw DataError(job.inputs.at(0) + ": no images found");

  // Names first: a bad --class-names must not leave data files behind.
  const std::vector<std::string> names = class_names(job, corpus.classes);
  FeatureIndex index;
  const std::string names_from = job.class_names.empty() ? job.format : job.class_names;
  for (uint32_t i = 0; i < names.size(); ++i) index.insert(names[i], i, names_from);

  std::vector<uint64_t> first, second;
  split_ids(corpus.images(), job.output2.empty() ? 1.0 : job.split, job.shuffle_seed, first,
            second);
  if (first.empty())
    throw ArgumentError("--split " + std::to_string(job.split) + " leaves no images for " +
                        job.output + " (of " + std::to_string(corpus.images()) + ")");
  if (!job.output2.empty() && second.empty())
    throw ArgumentError("--split " + std::to_string(job.split) + " leaves no images for " +
                        job.output2 + " (of " + std::to_string(corpus.images()) + ")");

  // The data files and the class index are one unit: none replaces its target unless all were
  // written (a full disk leaves the previous set as it was).
  std::vector<std::unique_ptr<AtomicFile>> outputs;
  outputs.push_back(std::make_unique<AtomicFile>(job.output));
  write_part(job, corpus, first, *outputs.back(), log);
  if (!job.output2.empty()) {
    outputs.push_back(std::make_unique<AtomicFile>(job.output2));
    write_part(job, corpus, second, *outputs.back(), log);
  }
  outputs.push_back(std::make_unique<AtomicFile>(index_path));
  outputs.back()->write(format_index(index_path, index));
  std::vector<AtomicFile*> unit;
  for (auto& f : outputs) unit.push_back(f.get());
  commit_all(unit);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f s", secs);
  log("wrote " + index_path + ": " + std::to_string(names.size()) + " class names (" +
      names.front() + " .. " + names.back() + "); " + buf);
}

}  // namespace nn::api
