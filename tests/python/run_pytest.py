#!/usr/bin/env python3
"""CTest's python.pytest: runs the pytest suite in the given folder, after checking that this
interpreter has what the suite needs; a missing prerequisite fails the test and says which
(a build that made the Python module is expected to test it).
usage: run_pytest.py TEST_DIR
"""
import importlib
import sys

PREREQUISITES = {"pytest": "python3-pytest", "numpy": "python3-numpy", "scipy": "python3-scipy"}


def main(test_dir):
    sys.path.insert(0, test_dir)
    from blas_env import match_tool_blas_kernels
    match_tool_blas_kernels()  # before numpy loads OpenBLAS
    missing = []
    for module, package in PREREQUISITES.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(f"{module} (Debian: {package})")
    if missing:
        print(f"python.pytest: {sys.executable} lacks {', '.join(missing)}; scripts/setup.sh "
              "installs them, or configure with -DNN_BUILD_PYTHON=OFF", file=sys.stderr)
        return 1
    import pytest
    return pytest.main(["-q", "-p", "no:cacheprovider", test_dir])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
