#!/usr/bin/python3
"""Tunes the recommender configs on validation users carved from a ratings CSV, then trains the
winner on every rating and writes <output-dir>/recs in run.sh's format (docs/tuning.md).

  1. 10% of the users (at least 5 ratings each; a seeded draw) become validation users: 80% of
     each one's ratings go in, 20% are to be found. The other users' ratings train the trials.
     Nothing else is held out: the users you later report on must not be among them.
  2. nn-tune searches each config: recommender-linear-dae over its ridge and denoising rate
     (a grid: the closed form has no epochs to halve), recommender-autoencoder over its rate,
     width and denoising rate (random draws, successive halving).
  3. The config with the best validation recall@20 wins. Its network JSON and command file (the
     epoch count its validation chose, for a network trained by steps) train on every rating,
     and nn-predict writes each user's 10 best unseen movies.

Usage: tune.py [ratings.csv] [output-dir]      NN_TOOLS: the tools' folder (default build/src/tools)
"""
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOOLS = os.environ.get("NN_TOOLS", os.path.join(ROOT, "build", "src", "tools"))

SEARCHES = {
    "recommender-linear-dae": {
        "Space": {"TrainingParameters.Lambda": [0.1, 0.27, 0.6],
                  "Network.Denoising.p": [0.25, 0.4, 0.55]},
        "Sampler": "Grid", "Epochs": {"Max": 1}},
    "recommender-autoencoder": {
        "Space": {"TrainingParameters.Alpha": {"LogUniform": [0.0003, 0.003]},
                  "Network.Layers.Hidden.N": [128, 256, 512],
                  "Network.Denoising.p": {"Uniform": [0.3, 0.6]}},
        "Sampler": "Random", "Trials": 9, "Seed": 1,
        "Epochs": {"Min": 10, "Max": 90, "Eta": 3}},
}


def run(args, cwd, log):
    with open(log, "a") as out:
        done = subprocess.run([str(a) for a in args], cwd=cwd, stdout=out, stderr=out)
    if done.returncode != 0:
        sys.exit(f"tune.py: {os.path.basename(str(args[0]))} failed (exit {done.returncode}); "
                 f"see {log}")


def read_rows(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r and r[0].isdigit()]
    return [(r[0], r[1]) for r in rows]


def write_rows(path, rows):
    with open(path, "w") as f:
        for u, m in rows:
            f.write(f"{u},{m}\n")


def generate(work, log, name, rows_file, dataset, samples, create=False):
    args = [os.path.join(TOOLS, "nn-generate"), "-d", dataset, "-i", rows_file, "--rows",
            "-o", name, "-f", "features.idx", "-s", samples]
    run(args + (["-c"] if create else []), work, log)


def main():
    ratings = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                              os.path.join(HERE, "ratings.csv"))
    out = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "work-tune"))
    start = time.time()
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, "tune.log")
    rows = read_rows(ratings)
    items_of = {}
    for u, m in rows:
        items_of.setdefault(u, []).append(m)
    eligible = sorted((u for u, ms in items_of.items() if len(ms) >= 5), key=int)
    rng = random.Random(7)
    val_users = set(rng.sample(eligible, max(1, len(items_of) // 10)))
    val_in, val_out = [], []
    for u in sorted(val_users, key=int):
        ms = list(dict.fromkeys(items_of[u]))
        rng.shuffle(ms)
        cut = max(1, round(0.2 * len(ms)))
        val_out += [(u, m) for m in ms[:cut]]
        val_in += [(u, m) for m in ms[cut:]]
    train = [(u, m) for u, m in rows if u not in val_users]
    data = os.path.join(out, "data")
    os.makedirs(data, exist_ok=True)
    for f in ("features.idx", "samples.idx", "val_samples.idx"):
        if os.path.exists(os.path.join(data, f)):
            os.remove(os.path.join(data, f))
    write_rows(os.path.join(data, "train.csv"), train)
    write_rows(os.path.join(data, "val_in.csv"), val_in)
    write_rows(os.path.join(data, "val_out.csv"), val_out)
    generate(data, log, "input.nc", "train.csv", "input", "samples.idx", create=True)
    generate(data, log, "output.nc", "train.csv", "output", "samples.idx")
    generate(data, log, "val_input.nc", "val_in.csv", "input", "val_samples.idx")
    generate(data, log, "val_output.nc", "val_out.csv", "output", "val_samples.idx")
    print(f"== {len(items_of)} users, {len(rows)} ratings; {len(val_users)} validation users "
          f"({len(val_in)} ratings in, {len(val_out)} to find) ({time.time() - start:.0f} s)",
          flush=True)

    results = []
    for config, search in SEARCHES.items():
        tune = {"Config": os.path.join(ROOT, "configs", config),
                "Data": [os.path.join(data, "input.nc"), os.path.join(data, "output.nc")],
                "ValidationData": [os.path.join(data, "val_input.nc"),
                                   os.path.join(data, "val_output.nc")],
                "Metric": "recall@20", "Output": os.path.join(out, "tune-" + config), **search}
        path = os.path.join(out, config + ".tune.json")
        with open(path, "w") as f:
            json.dump(tune, f, indent=2)
        run([os.path.join(TOOLS, "nn-tune"), "-q", path], out, log)
        with open(os.path.join(tune["Output"], "best", "settings.json")) as f:
            best = json.load(f)
        results.append((best["value"], config, best))
        print(f"== {config}: validation recall@20 {best['value']:.4f} with "
              f"{json.dumps(best['settings'])} (epoch {best['epoch']}) "
              f"({time.time() - start:.0f} s)", flush=True)
    value, config, best = max(results, key=lambda r: r[0])
    print(f"== winner: {config} (validation recall@20 {value:.4f}); training it on every rating",
          flush=True)

    final = os.path.join(out, "final")
    if os.path.isdir(final):
        shutil.rmtree(final)
    os.makedirs(final)
    write_rows(os.path.join(final, "ratings.csv"), rows)
    generate(final, log, "input.nc", "ratings.csv", "input", "samples.idx", create=True)
    generate(final, log, "output.nc", "ratings.csv", "output", "samples.idx")
    chosen = os.path.join(out, "tune-" + config, "best")
    shutil.copy(os.path.join(chosen, "network.json"), final)
    with open(os.path.join(chosen, "train.cdl")) as f:
        cdl = json.load(f)
    params = cdl["TrainingParameters"]
    for key in ("ValidationData", "ValidationK", "ValidationInterval", "KeepBest",
                "CheckpointName", "CheckpointsKept"):
        params.pop(key, None)
    params["CheckpointInterval"] = 0
    if params.get("Solver", "Gradient") != "LeastSquares":
        params["Epochs"] = max(1, best["epoch"])  # the epoch its validation chose
    cdl["Data"] = ["input.nc", "output.nc"]
    with open(os.path.join(final, "train.cdl"), "w") as f:
        json.dump(cdl, f, indent=2)
    run([os.path.join(TOOLS, "nn-train"), "train.cdl"], final, log)
    run([os.path.join(TOOLS, "nn-predict"), "-n", "network.nc", "--data", "input.nc",
         "--sample-index", "samples.idx", "-f", "input.nc", "-k", "10", "-s",
         os.path.join(out, "recs")], final, log)
    with open(os.path.join(out, "recs")) as f:
        users = sum(1 for _ in f)
    print(f"== wrote {out}/recs: {users} users' 10 best unseen movies, from {config} "
          f"({time.time() - start:.0f} s in all)")


if __name__ == "__main__":
    main()
