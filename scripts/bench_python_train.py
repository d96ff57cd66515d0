#!/usr/bin/python3
"""Training speed from Python against nn-train, on the same data and settings: the bundled
MovieLens ratings as nn-generate --rows makes them, configs/recommender-autoencoder's settings,
runs of each interleaved. Prints the examples per second of every epoch and the medians.

Usage: PYTHONPATH=build/python scripts/bench_python_train.py [--epochs 3] [--repeat 2]
NN_TOOLS: the tools' folder (default build/src/tools). Run it on an otherwise idle machine.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

import nnsuite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.environ.get("NN_TOOLS", os.path.join(ROOT, "build", "src", "tools"))
CONFIG = os.path.join(ROOT, "configs", "recommender-autoencoder")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ratings", default=os.path.join(ROOT, "samples", "movielens", "ratings.csv"))
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--repeat", type=int, default=2)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="bench-python-train-")
    files = dict(features=os.path.join(work, "features.idx"),
                 samples=os.path.join(work, "samples.idx"), rows=True, header=True)
    nnsuite.generate(a.ratings, os.path.join(work, "input.nc"), "input", create_features=True,
                     **files)
    nnsuite.generate(a.ratings, os.path.join(work, "output.nc"), "output", **files)
    with open(os.path.join(CONFIG, "train.cdl")) as f:
        cdl = json.load(f)
    t = {k.lower(): v for k, v in cdl["TrainingParameters"].items()}
    cdl["Network"] = os.path.join(CONFIG, "network.json")
    cdl["TrainingParameters"].update({"Epochs": a.epochs, "CheckpointInterval": 0})
    with open(os.path.join(work, "train.cdl"), "w") as f:
        json.dump(cdl, f)
    x = nnsuite.read_datasets(os.path.join(work, "input.nc"))["input"]
    y = nnsuite.read_datasets(os.path.join(work, "output.nc"))["output"]

    def cli():
        out = subprocess.run([os.path.join(TOOLS, "nn-train"), "train.cdl"], cwd=work,
                             capture_output=True, text=True, check=True).stderr
        return [float(v) for v in re.findall(r"([0-9.]+) examples/s", out)]

    def python():
        model = nnsuite.Model.from_json(cdl["Network"], datasets={"input": x, "output": y},
                                        seed=cdl["RandomSeed"])
        trainer = nnsuite.Trainer(model, {"input": x, "output": y}, epochs=a.epochs,
                                  minibatch=t["minibatch"], optimizer=t["optimizer"],
                                  alpha=t["alpha"], mu=t["mu"], mu1=t["mu1"],
                                  lambda_=t["lambda"], seed=cdl["RandomSeed"])
        return [s["examples_per_second"] for s in trainer.run()]

    runs = {"nn-train": [], "Python Trainer": []}
    for _ in range(a.repeat):
        runs["nn-train"] += cli()
        runs["Python Trainer"] += python()
    for name, values in runs.items():
        print(f"{name:>15}: " + ", ".join(f"{v:.0f}" for v in values) + " examples/s")
    cli_median = statistics.median(runs["nn-train"])
    py_median = statistics.median(runs["Python Trainer"])
    load = os.getloadavg()
    print(f"median examples/s: nn-train {cli_median:.0f}, Python Trainer {py_median:.0f} "
          f"({100 * py_median / cli_median:.0f}%); load average {load[0]:.2f} {load[1]:.2f}")


if __name__ == "__main__":
    main()
