# Fixtures for the nnsuite pytest suite: a tiny recommender trained by the tools themselves
# (nn-generate -> nn-train from a CDL file), so the Python results are compared with the tools'.
# CTest sets PYTHONPATH (the build tree's module) and NN_TOOLS; run by hand with
#   PYTHONPATH=build/python NN_TOOLS=build/src/tools /usr/bin/python3 -m pytest tests/python
import os
import random
import subprocess
from pathlib import Path

import pytest

from blas_env import match_tool_blas_kernels

match_tool_blas_kernels()  # the tools' OpenBLAS kernels, before a test module loads nnsuite

ROOT = Path(__file__).resolve().parents[2]
TOOLS = Path(os.environ.get("NN_TOOLS", ROOT / "build" / "src" / "tools"))

NETWORK = """{ "Name": "tiny", "ErrorFunction": "CrossEntropy", "ShuffleIndices": true,
  "Denoising": { "p": 0.2 },
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "Sigmoid" } ] }
"""

CDL = """{ "Version": 0.9, "Network": "network.json", "Command": "Train", "RandomSeed": 7,
  "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 4, "MiniBatch": 8, "Alpha": 0.01, "Optimizer": "Adam",
    "mu": 0.9, "Lambda": 0.001, "CheckpointInterval": 0, "Results": "%s" } }
"""


def run(*args, cwd):
    subprocess.run([str(a) for a in args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    """A directory with ratings.txt, input.nc/output.nc, features.idx, network.json, train.cdl
    and net.nc (trained by nn-train)."""
    d = tmp_path_factory.mktemp("nnsuite")
    rng = random.Random(5)
    with open(d / "ratings.txt", "w") as f:
        for u in range(60):
            t = u % 3
            items = [f"m{t * 10 + j}" for j in range(10) if rng.random() < 0.6] or [f"m{t * 10}"]
            f.write(f"u{u}\t" + ":".join(items) + "\n")
    run(TOOLS / "nn-generate", "-d", "input", "-i", "ratings.txt", "-o", "input.nc",
        "-f", "features.idx", "-s", "samples.idx", "-c", cwd=d)
    run(TOOLS / "nn-generate", "-d", "output", "-i", "ratings.txt", "-o", "output.nc",
        "-f", "features.idx", "-s", "samples.idx", cwd=d)
    (d / "network.json").write_text(NETWORK)
    (d / "train.cdl").write_text(CDL % "net.nc")
    run(TOOLS / "nn-train", "-q", "train.cdl", cwd=d)
    return d


@pytest.fixture(scope="session")
def tools():
    return TOOLS
