// export_onnx in a build without ONNX (libonnx-dev was not found): the API stays, the call says
// what is missing. src/engine/CMakeLists.txt compiles this file or the real exporter.
#include "core/error.h"
#include "nn/export.h"

namespace nn::api {

ExportReport export_onnx(const ExportJob&, const LogSink&) {
  throw BackendError(
      "this build has no ONNX library: install Debian's libonnx-dev and libprotobuf-dev "
      "(scripts/setup.sh) and rebuild");
}

}  // namespace nn::api
