"""The tools run OpenBLAS kernels for this CPU: when OpenBLAS chose an older instruction set's
(a CPU newer than the library), they restart themselves with OPENBLAS_CORETYPE set
(docs/performance.md, "OpenBLAS kernels"). The suite compares this process's results with the
tools' bit for bit, so it needs the same kernels, and OpenBLAS reads the variable only when it
loads: call match_tool_blas_kernels() before anything imports numpy or nnsuite."""
import os
import subprocess
import sys


def match_tool_blas_kernels():
    if os.environ.get("OPENBLAS_CORETYPE"):
        return
    probe = subprocess.run(
        [sys.executable, "-W", "ignore", "-c",
         "import nnsuite; print(nnsuite.blas_kernels_override())"],
        capture_output=True, text=True)
    if probe.returncode == 0 and probe.stdout.strip():
        os.environ["OPENBLAS_CORETYPE"] = probe.stdout.strip()
