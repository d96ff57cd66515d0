"""OpenBLAS kernels for this CPU, chosen before the engine loads: OpenBLAS picks its kernels
once, when the library loads, and on a CPU newer than the library it picks an older instruction
set's (several times slower). The command-line tools restart themselves with
OPENBLAS_CORETYPE set; a Python module cannot restart its interpreter, but it can set the
variable before it loads the engine, which is as good when nothing loaded OpenBLAS earlier.

What the library would choose is learnt once per machine by a child interpreter and cached in
$XDG_CACHE_HOME/nnsuite (default ~/.cache/nnsuite), keyed by the CPU and the engine file."""
import hashlib
import json
import os
import subprocess
import sys

PROBE_ENV = "NNSUITE_BLAS_PROBE"  # set in the child interpreter: no probe, no warning


def _openblas_loaded():
    try:
        with open("/proc/self/maps") as f:
            return any("libopenblas" in line for line in f)
    except OSError:
        return False


def _machine_key(core_path):
    h = hashlib.sha256()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags", "vendor_id")):
                    h.update(line.encode())
                if not line.strip():
                    break  # the first CPU is enough
    except OSError:
        pass
    st = os.stat(core_path)
    h.update(f"{os.path.realpath(core_path)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _probe():
    env = dict(os.environ, **{PROBE_ENV: "1"})
    done = subprocess.run(
        [sys.executable, "-c", "import nnsuite; print(nnsuite.blas_kernels_override())"],
        capture_output=True, text=True, env=env, timeout=120)
    if done.returncode != 0:
        return None
    return done.stdout.strip()


def choose_kernels(core_path):
    """Sets OPENBLAS_CORETYPE for this process when OpenBLAS would pick older kernels than the
    CPU's and has not loaded yet. Returns the value set, or ''."""
    if os.environ.get(PROBE_ENV) or os.environ.get("OPENBLAS_CORETYPE"):
        return ""
    if _openblas_loaded():
        return ""  # too late: the import warns
    forced = os.environ.get("NN_TEST_BLAS_RESTART")  # test hook, as the tools' (any CPU)
    if forced:
        os.environ["OPENBLAS_CORETYPE"] = forced
        return forced
    cache_dir = os.path.join(os.environ.get("XDG_CACHE_HOME") or
                             os.path.join(os.path.expanduser("~"), ".cache"), "nnsuite")
    cache = os.path.join(cache_dir, "openblas-kernels.json")
    try:
        key = _machine_key(core_path)
    except OSError:
        return ""
    known = {}
    try:
        with open(cache) as f:
            known = json.load(f)
    except (OSError, ValueError):
        pass
    if key not in known:
        try:
            value = _probe()
        except (OSError, subprocess.SubprocessError):
            value = None
        if value is None:
            return ""
        known = {key: value}
        try:
            os.makedirs(cache_dir, exist_ok=True)
            with open(cache + ".part", "w") as f:
                json.dump(known, f)
            os.replace(cache + ".part", cache)
        except OSError:
            pass  # a read-only home: probe again next time
    value = known[key]
    if value:
        os.environ["OPENBLAS_CORETYPE"] = value
    return value
