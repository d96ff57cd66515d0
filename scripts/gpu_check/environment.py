"""Where the GPU check's binaries and libraries are, and what the machine offers: the bundle's
layout, the CUDA libraries (the loader's cache, /usr/local/cuda*, NVIDIA's Python wheels), the
driver's version against what the bundle needs, and the bundle's relocated Open MPI."""

import glob
import os
import re
import shutil
import subprocess
import sys

# The bundle is built with CUDA 13 (its runtime linked in statically): the driver must be of the
# R580 branch or newer to run it (NVIDIA's CUDA 13.0 release notes). An older driver fails every
# CUDA call with "CUDA driver version is insufficient"; the check then stops in its first seconds.
MIN_DRIVER = (580, 0)
# The CUDA libraries the binaries name (cuDNN is opened at run time).
NEEDED = ("libcublas.so.13", "libcublasLt.so.13", "libcurand.so.10", "libnccl.so.2",
          "libcudnn.so.9")


class Layout:
    """bin/, lib/, scripts/, configs/ of the unpacked bundle (or of a build tree)."""

    def __init__(self, root, bin_dir, module, configs, commit, bundle_text=""):
        self.root, self.bin, self.module, self.configs = root, bin_dir, module, configs
        self.commit, self.bundle_text = commit, bundle_text

    def tool(self, name):
        return os.path.join(self.bin, name)

    def has(self, name):
        return os.access(self.tool(name), os.X_OK)


def bundle_layout(bundle_dir):
    text = open(os.path.join(bundle_dir, "BUNDLE")).read()
    commit = re.search(r"^commit=(.*)$", text, re.M)
    return Layout(bundle_dir, os.path.join(bundle_dir, "bin"),
                  os.path.join(bundle_dir, "lib", "libnn_cuda.so"),
                  os.path.join(bundle_dir, "configs"), commit.group(1) if commit else "unknown",
                  text)


def build_layout(repo, build_dir, work):
    """A CUDA build tree as the bundle's layout: the binaries linked into work/bin."""
    bin_dir = os.path.join(work, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    for rel in ("tests/nn_cuda_tests", "tests/nn_backend_tests", "tests/nn_predict_tests",
                "tests/nn_nccl_tests", "src/tools/nn-train", "src/tools/nn-generate",
                "src/tools/nn-predict", "src/tools/nn-encode", "src/tools/nn-serve",
                "bench/nn-bench-autoencoder", "bench/nn-bench-serve-load", "bench/nn-bench-cnn"):
        path = os.path.join(build_dir, rel)
        if os.access(path, os.X_OK):
            os.symlink(path, os.path.join(bin_dir, os.path.basename(rel)))
    try:
        commit = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        commit = "unknown"
    return Layout(repo, bin_dir, os.path.join(build_dir, "lib", "libnn_cuda.so"),
                  os.path.join(repo, "configs"), commit)


def site_packages():
    """The site-packages folders of every Python here (NVIDIA's wheels put lib/ folders there)."""
    folders = []
    for py in (sys.executable, "python3", "/opt/torch/.venv/bin/python3", "/usr/bin/python3"):
        if not shutil.which(py) and not os.path.exists(py):
            continue
        try:
            out = subprocess.run([py, "-c", "import site; print('\\n'.join(site.getsitepackages()"
                                  " + [site.getusersitepackages()]))"],
                                 capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        folders += [l for l in out.splitlines() if l and l not in folders]
    return folders


def in_loader_cache(lib):
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return f" {lib} " in out


def find_cuda_libraries():
    """(folders to add to LD_LIBRARY_PATH, cuDNN's path or "", libraries found nowhere)."""
    candidates = [d for d in os.environ.get("NN_CUDA_LIB_PATH", "").split(":") if d]
    for pattern in ("/usr/local/cuda*/lib64", "/usr/local/cuda*/lib",
                    "/usr/local/cuda*/targets/x86_64-linux/lib"):
        candidates += sorted(glob.glob(pattern))
    for site in site_packages():
        candidates += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
    folders, absent, cudnn = [], [], ""
    for lib in NEEDED:
        found = in_loader_cache(lib)
        for d in candidates:
            if os.path.exists(os.path.join(d, lib)):
                if not found and d not in folders:
                    folders.append(d)
                if lib.startswith("libcudnn"):
                    cudnn = cudnn or os.path.join(d, lib)
                found = True
                break
        if not found:
            absent.append(lib)
    return folders, cudnn, absent


def missing_libraries(paths):
    """{binary: [library not found]} from ldd."""
    out = {}
    for path in paths:
        try:
            text = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        except OSError:
            continue
        missing = [l.split()[0] for l in text.splitlines() if "not found" in l]
        if missing:
            out[os.path.basename(path)] = missing
    return out


def driver_version():
    """The NVIDIA driver's version as a tuple, from nvidia-smi or /proc (None when absent)."""
    text = ""
    if shutil.which("nvidia-smi"):
        try:
            text = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                   "--format=csv,noheader"], capture_output=True, text=True,
                                  timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            text = ""
    if not text.strip() and os.path.exists("/proc/driver/nvidia/version"):
        text = open("/proc/driver/nvidia/version").read()
    m = re.search(r"(\d{3,})\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def has_driver():
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/proc/driver/nvidia/version")


def smi_summary():
    if not shutil.which("nvidia-smi"):
        return "(no nvidia-smi)"
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total,"
                            "compute_cap,clocks.sm,clocks.max.sm", "--format=csv"],
                           capture_output=True, text=True, timeout=30)
        head = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30)
        lines = head.stdout.splitlines()
        cuda = [l for l in lines if "CUDA Version" in l]
        return (q.stdout + q.stderr).strip() + ("\n" + cuda[0].strip() if cuda else "")
    except (OSError, subprocess.SubprocessError) as e:
        return f"(nvidia-smi failed: {e})"


def card_name(device):
    if not shutil.which("nvidia-smi"):
        return "no-gpu"
    try:
        name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i",
                               str(device)], capture_output=True, text=True,
                              timeout=30).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return "no-gpu"
    if not name:
        return "no-gpu"
    short = re.sub(r"^nvidia ", "", name[0].lower())
    return re.sub(r"[^a-z0-9]+", "-", short).strip("-") or "no-gpu"


def mpi_launcher(layout):
    """(mpirun, environment) for one-host runs: the bundle's relocated Open MPI (its install
    paths pointed into the bundle), else the mpirun on PATH; (None, {}) when there is none."""
    env = {"OMPI_MCA_plm_rsh_agent": "false"}  # local ranks never need a remote shell
    bundled = os.path.join(layout.bin, "mpirun")
    if os.path.exists(os.path.join(layout.root, "BUNDLE")) and os.access(bundled, os.X_OK):
        r = layout.root
        env.update(OPAL_PREFIX=r, OPAL_EXEC_PREFIX=r, OPAL_BINDIR=layout.bin,
                   OPAL_LIBDIR=f"{r}/lib", OPAL_PKGLIBDIR=f"{r}/lib/openmpi3",
                   OPAL_DATAROOTDIR=f"{r}/share", OPAL_DATADIR=f"{r}/share",
                   OPAL_PKGDATADIR=f"{r}/share/openmpi", OPAL_SYSCONFDIR=f"{r}/etc",
                   PMIX_PREFIX=r, PMIX_LIBDIR=f"{r}/lib", PMIX_PKGLIBDIR=f"{r}/lib/pmix",
                   PMIX_PKGDATADIR=f"{r}/share/pmix",
                   OMPI_MCA_mca_base_component_show_load_errors="0")
        return bundled, env
    found = shutil.which("mpirun")
    return (found, env) if found else (None, {})


def python_with(*modules):
    """A Python that imports every module named, or None."""
    for py in ("python3", "/opt/torch/.venv/bin/python3"):
        if not shutil.which(py) and not os.path.exists(py):
            continue
        try:
            if subprocess.run([py, "-c", "import " + ", ".join(modules)], capture_output=True,
                              timeout=60).returncode == 0:
                return py
        except (OSError, subprocess.SubprocessError):
            continue
    return None


# The CPU features that make BF16 products fast on the CPU backend: AVX512-BF16's dot products,
# AMX's tile multiplies (oneDNN uses them where the kernel allows it).
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "amx_tile")


def host_cpu():
    """The host CPU as /proc/cpuinfo gives it: {'model', 'cores', 'bf16_flags', 'bf16'};
    'bf16' is true when the CPU has AVX512-BF16 or AMX-BF16."""
    model, flags, cores = "unknown CPU", set(), 0
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model == "unknown CPU":
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
                elif key == "processor":
                    cores += 1
    except OSError:
        pass
    found = [f for f in BF16_FLAGS if f in flags]
    return {"model": model, "cores": cores, "bf16_flags": found,
            "bf16": "avx512_bf16" in found or "amx_bf16" in found}
