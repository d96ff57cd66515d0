// nn-export: a trained network file -> an ONNX model, for onnxruntime and other runtimes
// (docs/serving.md, "ONNX"). The flags become an api::ExportJob (nn/export.h).
//   nn-export -n network.nc -o model.onnx [--top-k 10]
#include <string>

#include "common/cli_support.h"
#include "nn/export.h"

const char* const nn::tool::kToolName = "nn-export";

namespace nn::tool {

int run(int argc, char** argv) {
  CLI::App app{
      "Export a trained network to ONNX: input = the input layer as float [batch, units],\n"
      "output = the output layer's scores [batch, units] (and with --top-k its k best).\n"
      "  nn-export -n network.nc -o model.onnx [--top-k 10]",
      "nn-export"};
  api::ExportJob job;
  bool quiet = false;
  app.add_option("-n,--network", job.network, "trained network file (.nc)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output", job.output, "ONNX file to write (- = standard output)")->required();
  app.add_option("-k,--top-k", job.top_k,
                 "also output the k best scores and their columns per row (TopK)");
  app.add_flag("-q,--quiet", quiet, "print errors only");
  int status = 0;
  if (parse_or_exit(app, rewrite_single_dash(argc, argv, {}), status)) return status;
  const LogSink log = quiet ? null_log() : stream_log(stderr, "nn-export: ");
  api::export_onnx(job, log);
  return 0;
}

}  // namespace nn::tool
