// nn-encode: standard image corpora -> NetCDF datasets for nn-train/nn-predict. CIFAR-10 and
// CIFAR-100 binary batches, MNIST/Fashion-MNIST IDX files (plain or gzip) become a dense UChar
// image input ("input") and a sparse one-hot label output ("output") in one file, optionally
// split in two (train/validation), plus a class-name index file (label<TAB>index). The flags
// become an EncodeJob (nn/encode.h); the library encodes.
#include <filesystem>
#include <string>
#include <vector>

#include "common/cli_support.h"
#include "nn/encode.h"
#include "nn/file_names.h"

const char* const nn::tool::kToolName = "nn-encode";

namespace nn::tool {
namespace {

// The flag combinations that make no sense (UsageError, exit status 2).
void check_usage(const CLI::App& app, const api::EncodeJob& job, bool fine) {
  const bool idx = job.format == "idx", cifar100 = job.format == "cifar100";
  if (idx && job.labels.empty()) throw UsageError("idx format needs the label file (--labels)");
  if (!idx && !job.labels.empty())
    throw UsageError("--labels is for the idx format; CIFAR files hold their labels");
  if (idx && job.inputs.size() != 1)
    throw UsageError("idx format takes one image file (--input), got " +
                     std::to_string(job.inputs.size()));
  if (!cifar100 && (job.coarse || fine))
    throw UsageError("--coarse/--fine apply to the cifar100 format only");
  if (!idx && app.count("--classes"))
    throw UsageError("--classes applies to the idx format only (CIFAR fixes the class count)");
  if (app.count("--split") && job.output2.empty())
    throw UsageError("--split needs --output2 for the rest of the images");
  if (!job.output2.empty() && !app.count("--split"))
    throw UsageError("--output2 needs --split F (the fraction written to --output)");
  if (job.input_name.empty() || job.output_name.empty() || job.input_name == job.output_name)
    throw UsageError("--input-name and --output-name must be non-empty and different");
  // Each output a file of its own, none of them an input, however the names are spelled.
  const std::string class_index =
      !job.class_index.empty()
          ? job.class_index
          : (std::filesystem::path(job.output).parent_path() / "classes.idx").string();
  std::vector<api::NamedFile> inputs;
  for (const std::string& in : job.inputs) inputs.push_back({"-i", in});
  inputs.push_back({"-l", job.labels});
  if (std::filesystem::is_regular_file(job.class_names))
    inputs.push_back({"--class-names", job.class_names});
  api::check_distinct_files(
      {{"-o", job.output},
       {"--output2", job.output2},
       {job.class_index.empty() ? "the class index (default)" : "--class-index", class_index}},
      inputs);
}

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{
      "Convert an image corpus into a NetCDF dataset file (dense UChar images + sparse one-hot\n"
      "labels) and a class index (label<TAB>index).\n"
      "  nn-encode cifar10  -i data_batch_1.bin [more.bin ...] -o train.nc\n"
      "  nn-encode cifar100 -i train.bin -o train.nc [--coarse]\n"
      "  nn-encode idx -i train-images-idx3-ubyte.gz -l train-labels-idx1-ubyte.gz -o train.nc\n"
      "  add --split 0.9 --output2 valid.nc to write the last 10% of the images to valid.nc",
      "nn-encode"};
  api::EncodeJob job;
  bool fine = false;
  app.add_option("format", job.format, "cifar10, cifar100 or idx (MNIST, Fashion-MNIST)")
      ->required()
      ->check(CLI::IsMember({"cifar10", "cifar100", "idx"}));
  app.add_option("-i,--input", job.inputs,
                 "CIFAR batch file(s), concatenated in order; or the IDX image file")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-l,--labels", job.labels, "IDX label file (idx format only)")
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output", job.output,
                 "NetCDF file to write (replaced), or - for standard output")
      ->required();
  app.add_option("--output2", job.output2, "second NetCDF file: the images left by --split");
  app.add_option("--split", job.split,
                 "fraction of the images written to --output; the rest go to --output2")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--shuffle-seed", job.shuffle_seed,
                 "shuffle the images with this seed before splitting (default 0: file order)");
  app.add_option("--input-name", job.input_name, "name of the image dataset (default input)");
  app.add_option("--output-name", job.output_name, "name of the label dataset (default output)");
  app.add_option("--limit", job.limit, "encode only the first N images (default 0: all)");
  auto* coarse = app.add_flag("--coarse", job.coarse, "CIFAR-100: the 20 coarse labels");
  app.add_flag("--fine", fine, "CIFAR-100: the 100 fine labels (default)")->excludes(coarse);
  app.add_option("--classes", job.classes, "idx: number of classes (default 10)")
      ->check(CLI::Range(1u, 256u));
  app.add_option("--class-names", job.class_names,
                 "class names for the index: cifar10, fashion-mnist, numeric, or a text file "
                 "with one name per line (default: cifar10 names for cifar10, else numeric)");
  app.add_option("--class-index", job.class_index,
                 "class index file to write (default: classes.idx beside --output)");
  std::string memory_limit;
  add_memory_limit_option(app, memory_limit);
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "print errors only");
  int status = 0;
  if (parse_or_exit(app, std::vector<std::string>(argv, argv + argc), status)) return status;
  apply_memory_limit(memory_limit, std::nullopt);
  // Under mpirun the conversion is not split: rank 0 does it; the others have nothing to do.
  if (api::world_rank() != 0) return 0;

  check_usage(app, job, fine);
  api::encode_images(job, quiet ? null_log() : stream_log(stderr, std::string(kToolName) + ": "));
  return 0;
}

}  // namespace nn::tool
