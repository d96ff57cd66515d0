// Finding and opening libnn_cuda.so (backend/cuda_module.h), and the device probes of
// backend/cuda/device_probe.h answered through it (no device without the module).
#include "backend/cuda_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

#include "backend/cuda/device_probe.h"
#include "backend/cuda_module_fingerprint.h"
#include "core/allocation_context.h"

namespace nn {
namespace {

constexpr const char* kModuleFile = "libnn_cuda.so";
constexpr const char* kEntry = "nn_cuda_module_v1";

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The file (program or shared library) this code was linked into.
std::string engine_file() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuda_module_candidates), &info) == 0 || !info.dli_fname)
    return "";
  std::string file = info.dli_fname;
  if (file.find('/') == std::string::npos) {  // the main program, named without a path
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "";
    file.assign(buf, size_t(n));
  }
  // A symbolic link to a tool looks beside the tool itself.
  if (char* real = realpath(file.c_str(), nullptr)) {
    file = real;
    std::free(real);
  }
  return file;
}

// A fingerprint as a refusal shows it: "interface <the digest's first 16 hex digits>", followed
// by the sizes when `with_sizes`; one not of this form (a module from before the interface
// digest) as it is.
std::string shown_fingerprint(const std::string& f, bool with_sizes) {
  const std::string head = "nn-cuda-module 2 interface ";
  const size_t abi = f.find(" abi ");
  if (f.compare(0, head.size(), head) != 0 || abi == std::string::npos || abi < head.size())
    return f;
  const std::string digest = f.substr(head.size(), abi - head.size());
  return "interface " + digest.substr(0, 16) + (with_sizes ? f.substr(abi) : "");
}

// The sizes of a fingerprint ("" when it has none).
std::string sizes_of(const std::string& f) {
  const size_t abi = f.find(" abi ");
  return abi == std::string::npos ? "" : f.substr(abi);
}

struct Loaded {
  const CudaModule* module = nullptr;
  std::string why;
  std::string path;  // where the loaded module is
};

Loaded load() {
  Loaded out;
#ifndef NN_HAVE_CUDA
  out.why = "this build has no CUDA support";
  return out;
#else
  std::string tried, last_error;
  for (const std::string& path : cuda_module_candidates()) {
    const bool explicit_path = path.find('/') != std::string::npos;
    if (explicit_path && access(path.c_str(), F_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      tried += (tried.empty() ? "" : ", ") + (explicit_path ? path : "the library path");
      if (!explicit_path) continue;  // not on the loader's search path
      last_error = path + ": " + (e ? e : "cannot be opened");
      break;  // a module that is there but does not load: say why
    }
    using Entry = const CudaModule* (*)(const CudaHost*);
    auto entry = reinterpret_cast<Entry>(dlsym(handle, kEntry));
    if (!entry) {
      out.why = path + " has no " + kEntry + " (not this project's CUDA module?)";
      return out;
    }
    static const CudaHost host{&current_allocation};
    const CudaModule* m = entry(&host);
    out.why = cuda_module_refusal(m ? m->fingerprint : nullptr, path);
    if (!out.why.empty()) return out;
    out.module = m;
    char* real = realpath(path.c_str(), nullptr);
    out.path = real ? real : path;
    std::free(real);
    return out;
  }
  out.why = !last_error.empty()
                ? "the CUDA module failed to load: " + last_error
                : "the CUDA module " + std::string(kModuleFile) + " was not found (looked in " +
                      tried + "); build it with `bash scripts/setup.sh nn_cuda`";
  return out;
#endif
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

std::vector<std::string> cuda_module_candidates() {
  if (const char* env = std::getenv("NN_CUDA_MODULE"); env && *env) return {env};
  std::vector<std::string> out;
  const std::string self = engine_file();
  if (!self.empty()) {
    const std::string dir = directory_of(self);
    out.push_back(dir + "/" + kModuleFile);
    out.push_back(dir + "/../lib/" + kModuleFile);
  }
#ifdef NN_CUDA_MODULE_BUILD_DIR
  out.push_back(std::string(NN_CUDA_MODULE_BUILD_DIR) + "/" + kModuleFile);
#endif
#ifdef NN_CUDA_MODULE_INSTALL_DIR
  out.push_back(std::string(NN_CUDA_MODULE_INSTALL_DIR) + "/" + kModuleFile);
#endif
  out.push_back(kModuleFile);  // the loader's search path
  return out;
}

std::string cuda_module_refusal(const char* module_fingerprint, const std::string& path) {
  const std::string ours = cuda_module_fingerprint();
  if (module_fingerprint && ours == module_fingerprint) return "";
  const std::string theirs = module_fingerprint ? module_fingerprint : "";
  const std::string their_sizes = sizes_of(theirs);
  const bool with_sizes = !their_sizes.empty() && their_sizes != sizes_of(ours);
  return path + " is from another build (" +
         (module_fingerprint ? shown_fingerprint(theirs, with_sizes) : "?") +
         "; this program: " + shown_fingerprint(ours, with_sizes) +
         "); rebuild it with the tools (bash scripts/setup.sh nn_cuda)";
}

std::string cuda_module_path() {
  return loaded().path;
}

const CudaModule* cuda_module(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.why;
  return l.module;
}

// Why there can be no CUDA device, found without loading anything ("" when there may be one).
// CUDA needs NVIDIA's kernel driver, whose control device (or /proc entry) every machine with an
// NVIDIA GPU has. Without it the probes say so without loading the module and the CUDA libraries
// it brings (backend "auto" on a machine without a GPU costs nothing). $NN_CUDA_MODULE forces
// the module to be loaded.
static std::string no_cuda_reason() {
#ifndef NN_HAVE_CUDA
  return "this build has no CUDA support";
#else
  const char* env = std::getenv("NN_CUDA_MODULE");
  if ((env && *env) || access("/dev/nvidiactl", F_OK) == 0 ||
      access("/proc/driver/nvidia/version", F_OK) == 0)
    return "";
  return "no NVIDIA driver (neither /dev/nvidiactl nor /proc/driver/nvidia/version exists)";
#endif
}

int cuda_device_count() noexcept {
  try {
    if (!no_cuda_reason().empty()) return 0;
    const CudaModule* m = cuda_module();
    return m ? m->device_count() : 0;
  } catch (...) {
    return 0;
  }
}

std::string cuda_device_summary() {
  std::string why = no_cuda_reason();
  const CudaModule* m = why.empty() ? cuda_module(&why) : nullptr;
  return m ? m->device_summary() : "no CUDA device: " + why;
}

bool cuda_smoke_test() noexcept {
  try {
    if (!no_cuda_reason().empty()) return false;
    const CudaModule* m = cuda_module();
    return m && m->smoke_test();
  } catch (...) {
    return false;
  }
}

bool cudnn_loadable(std::string* why) noexcept {
  try {
    std::string reason = no_cuda_reason();
    const CudaModule* m = reason.empty() ? cuda_module(&reason) : nullptr;
    if (m) return m->cudnn_loadable(why);
    if (why) *why = reason;
    return false;
  } catch (...) {
    return false;
  }
}

}  // namespace nn
