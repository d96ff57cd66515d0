// Entry points for network .nc files: atomic writing (built in memory, then core/atomic_file's
// temporary file beside the target, fsync, rename) and reading with errors mapped to IoError
// (cannot open) and DataError (not NetCDF, missing or invalid content). The layout itself is in
// network_file_{write,read,validate}.cpp.
#include "io/network_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "io/file_checksum.h"
#include "io/isolated_read.h"
#include "io/nc_attribute_reader.h"
#include "io/netcdf_header_check.h"
#include "io/netcdf_output.h"
#include "io/netcdf_storage.h"
#include "io/netcdf_strings.h"
#include "io/network_file_layout.h"

namespace nn {
namespace {

namespace fs = std::filesystem;
using netCDF::NcFile;
using netCDF::exceptions::NcException;

// Bytes of the arrays (a size hint for the in-memory file).
size_t payload_bytes(const NetworkFile& net) {
  size_t floats = 0;
  for (const WeightArrays& w : net.weights) {
    floats += weights_of(w).size + w.bias.size();
    for (const FloatRun& s : weight_states_of(w)) floats += s.size;
    for (const auto& s : w.bias_state) floats += s.size();
  }
  for (const LayerArrays& l : net.layers)
    floats += l.bn_scale.size() + l.bn_bias.size() + l.bn_running_mean.size() +
              l.bn_running_variance.size();
  size_t names = 0;
  for (const LayerSpec& l : net.spec.layers)
    if (l.features) names += string_variable_bytes(*l.features);
  return floats * sizeof(float) + names;
}

}  // namespace

FloatRun run_of(const std::vector<float>& v) {
  return {v.data(), v.size()};
}

std::vector<FloatRun> runs_of(const std::vector<std::vector<float>>& vs) {
  std::vector<FloatRun> out;
  for (const auto& v : vs) out.push_back(run_of(v));
  return out;
}

FloatRun weights_of(const WeightArrays& w) {
  return w.weights_run.data ? w.weights_run : run_of(w.weights);
}

std::vector<FloatRun> weight_states_of(const WeightArrays& w) {
  return w.weight_state_runs.empty() ? runs_of(w.weight_state) : w.weight_state_runs;
}

void write_network_file(const std::string& path, const NetworkFile& net) {
  // Check first: an invalid network must not cost the previous good file at `path`.
  validate_network_file(net, path);
  // A large network is written by netCDF straight into a named temporary file (not held in
  // memory a second time as its file image).
  const size_t payload = payload_bytes(net);
  AtomicFile out(path, /*named=*/payload >= netcdf_direct_bytes());
  write_netcdf(out, payload, [&](int ncid) {
    try {
      write_network_layout(netCDF::NcGroup(ncid), net);
    } catch (const NcException& e) {
      throw IoError(path + ": writing network file failed: " + nc_error_text(e));
    } catch (const IoError& e) {  // the C API's calls (the layers' item names)
      throw IoError(path + ": writing network file failed: " + e.what());
    }
  });
  out.commit();
}

namespace {

NetworkFile read_network_file_here(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status))
    throw IoError(path + ": cannot open network file: " +
                  (ec ? ec.message() : std::string("No such file or directory")));
  if (fs::is_directory(status)) throw IoError(path + ": cannot open network file: is a directory");
  if (!std::ifstream(path, std::ios::binary))
    throw IoError(path + ": cannot open network file: " + std::strerror(errno));

  // Every byte of a file we wrote is checked before any library parses it (libhdf5 crashes on
  // some damaged metadata); older and DSSTNE's files have no checksum to check.
  verify_file_checksum(path);
  check_netcdf_classic_header(path);  // libnetcdf's own parser crashes on some bad headers
  const NetcdfStorage storage(path);  // looked at before netCDF opens the file
  NcFile nc;
  try {
    nc.open(path, NcFile::read);
  } catch (const NcException& e) {
    throw DataError(path + ": not a NetCDF file (" + nc_error_text(e) + "), or truncated");
  }
  NetworkFile net;
  try {
    net = read_network_layout(nc, path, &storage);
  } catch (const NcException& e) {
    throw DataError(path + ": damaged NetCDF file (" + nc_error_text(e) + ")");
  }
  validate_network_file(net, path);
  return net;
}

}  // namespace

NetworkFile read_network_file(const std::string& path) {
  // A file without a checksum is read in a child process first: libhdf5 can crash on it.
  read_isolated_first(path, [&] { read_network_file_here(path); });
  return read_network_file_here(path);
}

}  // namespace nn
