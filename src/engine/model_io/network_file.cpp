// Entry points for network .nc files: atomic writing (temporary file beside the target, fsync,
// rename) and reading with errors mapped to IoError (cannot open) and DataError (not NetCDF,
// missing or invalid content). The layout itself is in network_file_{write,read,validate}.cpp.
#include "model_io/network_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/netcdf_header_check.h"
#include "model_io/nc_attribute_reader.h"
#include "model_io/network_file_layout.h"

namespace nn {
namespace {

namespace fs = std::filesystem;
using netCDF::NcFile;
using netCDF::exceptions::NcException;

// A name no other writer uses: hidden, beside the target (rename is only atomic within one
// file system), unique per process and call.
std::string temporary_name(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  return (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                 std::to_string(counter++)))
      .string();
}

// Flushes a file (or directory entry) to stable storage, so that after a crash the renamed file
// has its contents. Failure to sync a directory is ignored: some file systems refuse it.
void sync_path(const std::string& path, bool directory, const std::string& target) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) {
    if (directory) return;
    throw IoError(target + ": cannot reopen temporary file '" + path +
                  "' to flush it: " + std::strerror(errno));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && !directory)
    throw IoError(target + ": cannot flush temporary file '" + path + "': " + std::strerror(err));
}

}  // namespace

void write_network_file(const std::string& path, const NetworkFile& net) {
  // Check first: an invalid network must not cost the previous good file at `path`.
  validate_network_file(net, path);

  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw IoError(path + ": cannot write network file: directory '" + dir.string() +
                  "' does not exist");

  const std::string temp = temporary_name(target);
  bool created = false;
  try {
    {
      NcFile nc;
      try {
        nc.open(temp, NcFile::newFile, NcFile::nc4);
      } catch (const NcException& e) {
        throw IoError(path + ": cannot create temporary file '" + temp + "': " + nc_error_text(e));
      }
      created = true;
      try {
        write_network_layout(nc, net);
        nc.close();
      } catch (const NcException& e) {
        throw IoError(path + ": writing network file failed (temporary file '" + temp +
                      "'): " + nc_error_text(e));
      }
    }
    sync_path(temp, false, path);
    if (std::rename(temp.c_str(), path.c_str()) != 0)
      throw IoError(path + ": cannot move temporary file '" + temp +
                    "' into place: " + std::strerror(errno));
    created = false;
    sync_path(dir.string(), true, path);
  } catch (...) {
    if (created) std::remove(temp.c_str());
    throw;
  }
}

NetworkFile read_network_file(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status))
    throw IoError(path + ": cannot open network file: " +
                  (ec ? ec.message() : std::string("No such file or directory")));
  if (fs::is_directory(status)) throw IoError(path + ": cannot open network file: is a directory");
  if (!std::ifstream(path, std::ios::binary))
    throw IoError(path + ": cannot open network file: " + std::strerror(errno));

  check_netcdf_classic_header(path);  // libnetcdf's own parser crashes on some bad headers
  NcFile nc;
  try {
    nc.open(path, NcFile::read);
  } catch (const NcException& e) {
    throw DataError(path + ": not a NetCDF file (" + nc_error_text(e) + "), or truncated");
  }
  NetworkFile net;
  try {
    net = read_network_layout(nc, path);
  } catch (const NcException& e) {
    throw DataError(path + ": damaged NetCDF file (" + nc_error_text(e) + ")");
  }
  validate_network_file(net, path);
  return net;
}

}  // namespace nn
