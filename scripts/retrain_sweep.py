#!/usr/bin/env python3
"""Warm-start settings against the full retrain over several seeds, on the MovieLens time split
of samples/movielens/retrain_daily.py (docs/retraining.md, "A recipe: day 1, day 2").

Day 1 is trained once (the config's epochs); then, for every seed, day 2 is retrained from random
weights and warm-started from day 1 with each setting, one after the other, so that the full
retrain and the warm starts of a seed see the same load. Prints each run and, per setting, the
mean recall@10 as a share of the full retrain's and the summed training time as a share of its.

Usage: retrain_sweep.py [--seeds 12345,7,99,1,2,3] [--setting NAME:EPOCHS[:KEY=VALUE...]]...
  e.g. --setting rate-0.00035:20:Alpha=0.00035 --setting config-rate:16
Default setting: the recipe's (20 epochs at Alpha 0.00035). NN_TOOLS: the tools' folder.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "samples", "movielens"))
import retrain_daily as rd  # noqa: E402


def parse_setting(text):
    name, epochs, *pairs = text.split(":")
    extra = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        extra[key] = json.loads(value)
    return name, int(epochs), extra


def train_day2(tools, config, results, epochs, seed, warm, extra):
    """One day-2 run; returns (seconds, recall@10)."""
    with open(os.path.join(rd.ROOT, "configs", config, "train.cdl")) as f:
        cdl = json.load(f)
    cdl["Network"] = os.path.join(rd.ROOT, "configs", config, "network.json")
    cdl["Data"] = ["day2_in.nc", "day2_out.nc"]
    params = cdl["TrainingParameters"]
    for key in ("CheckpointName", "CheckpointInterval", "ValidationData"):
        params.pop(key, None)
    params["Results"] = results
    cdl["RandomSeed"] = seed
    if epochs:
        params["Epochs"] = epochs
    if warm:
        params["WarmStart"] = "day1.nc"
    params.update(extra)
    path = os.path.join(tools.work, results.replace(".nc", ".cdl"))
    with open(path, "w") as f:
        json.dump(cdl, f)
    start = time.monotonic()
    tools.run("nn-train", os.path.basename(path))
    seconds = time.monotonic() - start
    recall, _ = rd.recall_at_10(tools, results, "day2")
    os.remove(os.path.join(tools.work, results))
    return seconds, recall


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ratings", default=os.path.join(rd.HERE, "ratings.csv"))
    p.add_argument("--work", default=os.path.join(rd.ROOT, "out", "retrain-sweep"))
    p.add_argument("--config", default="recommender-autoencoder")
    p.add_argument("--seeds", default="12345,7,99,1,2,3")
    p.add_argument("--setting", action="append", type=parse_setting,
                   help="NAME:EPOCHS[:KEY=JSON...] (TrainingParameters keys)")
    a = p.parse_args()
    settings = a.setting or [("recipe", 20, {"Alpha": 0.00035})]
    os.makedirs(a.work, exist_ok=True)
    tools = rd.Tools(os.path.abspath(a.work))
    if not os.path.exists(os.path.join(tools.work, "day1.nc")):
        rows = rd.read_ratings(a.ratings, 0)
        day1, day2, held = rd.split(rows, 5, 10)
        rd.generate_day(tools, "day1", day1, held)
        rd.generate_day(tools, "day2", day2, held)
        rd.train(tools, a.config, "day1", "day1.nc", None)
    runs = {name: [] for name in ["full"] + [s[0] for s in settings]}
    for seed in (int(s) for s in a.seeds.split(",")):
        runs["full"].append(train_day2(tools, a.config, "full.nc", 0, seed, False, {}))
        line = f"seed {seed}: full {runs['full'][-1][1]:.4f} ({runs['full'][-1][0]:.1f} s)"
        for name, epochs, extra in settings:
            runs[name].append(train_day2(tools, a.config, f"warm_{name}.nc", epochs, seed, True,
                                         extra))
            line += f"; {name} {runs[name][-1][1]:.4f} ({runs[name][-1][0]:.1f} s)"
        load = os.getloadavg()[0]
        print(line + f"; load {load:.2f}", flush=True)
    full_recall = sum(r for _, r in runs["full"]) / len(runs["full"])
    full_time = sum(t for t, _ in runs["full"])
    print(f"full retrain: mean recall@10 {full_recall:.4f}, {full_time:.1f} s in all")
    for name, _, _ in settings:
        recall = sum(r for _, r in runs[name]) / len(runs[name])
        seconds = sum(t for t, _ in runs[name])
        print(f"{name}: mean recall@10 {recall:.4f} = {100 * recall / full_recall:.1f}% of the "
              f"full retrain's in {100 * seconds / full_time:.1f}% of its time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
