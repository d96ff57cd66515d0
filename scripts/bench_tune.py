#!/usr/bin/env python3
"""How nn-tune's searches compare with the whole grid (docs/tuning.md, "Measured"): on one fold of
scripts/bench_quality.sh's held-out users, each search of a study runs nn-tune over a config and
reports the best validation metric it found, the winner's settings, its wall time, and both as a
share of the exhaustive grid's (the first search of every study). The grid's best is the bar: a
search "finds it" when its best is within 1% of the grid's.

Studies:
  mult-dae  configs/recommender-mult-dae, Alpha x code width x denoising (27 points), up to 27
            epochs: the grid, successive halving and ASHA over it (rungs 3/9/27), TPE and random
            draws (9 trials) with halving.
  dlae      configs/recommender-linear-dae (closed form: no epochs to halve), Lambda x denoising
            on a 7 x 7 grid against 12 TPE and 12 random draws over the same ranges.
  autoencoder configs/recommender-autoencoder, Alpha x width x denoising (27 points), up to 18
            epochs: the grid, halving (6/18) and ASHA, TPE (9 trials) with halving.
  Both deep studies also run TPE with ASHA, with and without a constant liar ("ConstantLiar":
  the trials still running count as the worst at each draw), which matters with --parallel.
  Every TPE search also runs with "Multivariate": true (one joint density, a kernel per trial).

Usage: scripts/bench_tune.py [--data DIR] [--studies mult-dae,dlae] [-w WORK] [--json FILE]
The data folder holds input.nc, output.nc, val_input.nc and val_output.nc (default:
out/bench-quality/data/fold0/nn-data, made by `scripts/bench_quality.sh --methods nn-linear-dae`).
NN_TOOLS names the tool folder (default build/src/tools). The table goes to stdout, progress to
stderr.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def grid_space(study):
    if study == "mult-dae":
        return {"TrainingParameters.Alpha": [0.0003, 0.001, 0.003],
                "Network.Layers.Code.N": [100, 200, 400],
                "Network.Denoising.p": [0.3, 0.5, 0.7]}
    if study == "autoencoder":
        return {"TrainingParameters.Alpha": [0.0003, 0.001, 0.003],
                "Network.Layers.Hidden.N": [64, 128, 256],
                "Network.Denoising.p": [0.2, 0.4, 0.6]}
    lambdas = [0.02, 0.05, 0.1, 0.2, 0.35, 0.6, 1.0]
    rates = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    return {"TrainingParameters.Lambda": lambdas, "Network.Denoising.p": rates}


def range_space(study):
    """The grid's box as ranges, for the samplers that draw from ranges."""
    if study == "dlae":
        return {"TrainingParameters.Lambda": {"LogUniform": [0.02, 1.0]},
                "Network.Denoising.p": {"Uniform": [0.2, 0.8]}}
    return grid_space(study)  # lists: TPE and random draw among the grid's values


def searches(study):
    """(label, tune-file fields) for each search of a study; the first is the grid."""
    if study == "dlae":
        one = {"Epochs": {"Max": 1}}
        return [("grid 7 x 7", dict(one, Sampler="Grid", Space=grid_space(study))),
                ("TPE, 12 trials", dict(one, Sampler="TPE", Trials=12, StartupTrials=4,
                                        Space=range_space(study))),
                ("TPE, 12 trials, multivariate", dict(one, Sampler="TPE", Trials=12,
                                                      StartupTrials=4, Multivariate=True,
                                                      Space=range_space(study))),
                ("random, 12 trials", dict(one, Sampler="Random", Trials=12,
                                           Space=range_space(study)))]
    top = 27 if study == "mult-dae" else 18
    low = 3 if study == "mult-dae" else 6
    halving = {"Min": low, "Max": top, "Eta": 3}
    grid = grid_space(study)
    return [("grid, %d epochs each" % top, {"Sampler": "Grid", "Space": grid,
                                            "Epochs": {"Max": top}}),
            ("grid, halving", {"Sampler": "Grid", "Space": grid, "Epochs": halving}),
            ("grid, ASHA", {"Sampler": "Grid", "Space": grid, "Epochs": halving,
                            "Schedule": "ASHA"}),
            ("TPE 9, halving", {"Sampler": "TPE", "Trials": 9, "StartupTrials": 3,
                                "Space": grid, "Epochs": halving}),
            ("TPE 9, ASHA", {"Sampler": "TPE", "Trials": 9, "StartupTrials": 3,
                             "Space": grid, "Epochs": halving, "Schedule": "ASHA"}),
            ("TPE 9, ASHA, liar", {"Sampler": "TPE", "Trials": 9, "StartupTrials": 3,
                                   "Space": grid, "Epochs": halving, "Schedule": "ASHA",
                                   "ConstantLiar": True}),
            ("TPE 9, halving, multivariate", {"Sampler": "TPE", "Trials": 9,
                                              "StartupTrials": 3, "Space": grid,
                                              "Epochs": halving, "Multivariate": True}),
            ("random 9, halving", {"Sampler": "Random", "Trials": 9, "Space": grid,
                                   "Epochs": halving}),
            ("TPE 14, halving", {"Sampler": "TPE", "Trials": 14, "StartupTrials": 4,
                                 "Space": grid, "Epochs": halving}),
            ("TPE 14, halving, multivariate", {"Sampler": "TPE", "Trials": 14,
                                               "StartupTrials": 4, "Space": grid,
                                               "Epochs": halving, "Multivariate": True}),
            ("random 14, halving", {"Sampler": "Random", "Trials": 14, "Space": grid,
                                    "Epochs": halving})]


CONFIGS = {"mult-dae": "recommender-mult-dae", "dlae": "recommender-linear-dae",
           "autoencoder": "recommender-autoencoder"}


def run_search(tools, data, work, study, index, label, fields, seed, parallel=1):
    out = os.path.join(work, study, f"search-{index}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    tune = {"Config": os.path.join(ROOT, "configs", CONFIGS[study]),
            "Data": [os.path.join(data, "input.nc"), os.path.join(data, "output.nc")],
            "ValidationData": [os.path.join(data, "val_input.nc"),
                               os.path.join(data, "val_output.nc")],
            "Metric": "recall@20", "Seed": seed, "Output": os.path.join(out, "tune")}
    tune.update(fields)
    path = os.path.join(out, "tune.json")
    with open(path, "w") as f:
        json.dump(tune, f, indent=2)
    print(f"bench_tune: {study}: {label} ...", file=sys.stderr, flush=True)
    start = time.monotonic()
    with open(os.path.join(out, "nn-tune.log"), "w") as log:
        subprocess.run([os.path.join(tools, "nn-tune"), "--parallel", str(parallel), path],
                       stdout=log, stderr=log, check=True)
    seconds = time.monotonic() - start
    with open(os.path.join(out, "tune", "best", "settings.json")) as f:
        best = json.load(f)
    epochs = 0
    with open(os.path.join(out, "tune", "results.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    # Epochs trained: each row's epochs less what the trial's rung before had trained.
    trained = {}
    for row in rows:
        trial, e = row[0], int(row[2])
        epochs += e - trained.get(trial, 0)
        trained[trial] = e
    # Only the records are needed; the trials' networks (hundreds of MB each for the DLAE) go.
    for trial in os.listdir(os.path.join(out, "tune")):
        if trial.startswith("trial-"):
            for name in os.listdir(os.path.join(out, "tune", trial)):
                if name.endswith(".nc"):
                    os.remove(os.path.join(out, "tune", trial, name))
    print(f"bench_tune: {study}: {label}: {best['value']:.4f} in {seconds:.1f} s",
          file=sys.stderr, flush=True)
    return {"study": study, "search": label, "metric": best["value"],
            "settings": best["settings"], "seconds": seconds, "epochs": epochs,
            "trials": len(trained)}


def short(settings):
    names = {"TrainingParameters.Alpha": "Alpha", "TrainingParameters.Lambda": "Lambda",
             "Network.Layers.Code.N": "code", "Network.Layers.Hidden.N": "units",
             "Network.Denoising.p": "p"}
    parts = []
    for key, value in settings.items():
        if isinstance(value, float):
            value = f"{value:.3g}"
        parts.append(f"{names.get(key, key)} {value}")
    return ", ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=os.path.join(ROOT, "out/bench-quality/data/fold0/nn-data"))
    parser.add_argument("--studies", default="mult-dae,dlae")
    parser.add_argument("-w", "--work", default=os.path.join(ROOT, "out/bench-tune"))
    parser.add_argument("--seeds", default="1",
                        help="comma list: the random and TPE searches run once per seed (the "
                        "grid's do not depend on it)")
    parser.add_argument("--parallel", type=int, default=1,
                        help="trials at a time (nn-tune --parallel; default 1)")
    parser.add_argument("--only", help="run only the searches whose label contains one of these "
                        "(comma list), e.g. 'halving,ASHA'")
    parser.add_argument("--json", help="write the records here too")
    parser.add_argument("--reuse", help="records of an earlier --json: its searches are not run "
                        "again (for adding searches to a study; their seconds must come from a "
                        "machine as quiet as this run's)")
    args = parser.parse_args()
    tools = os.environ.get("NN_TOOLS", os.path.join(ROOT, "build/src/tools"))
    for name in ("input.nc", "output.nc", "val_input.nc", "val_output.nc"):
        if not os.path.exists(os.path.join(args.data, name)):
            sys.exit(f"bench_tune: {args.data} has no {name}; make it with "
                     "`bash scripts/bench_quality.sh --methods nn-linear-dae`")
    earlier = {}
    if args.reuse:
        with open(args.reuse) as f:
            earlier = {(r["study"], r["search"]): r for r in json.load(f)}
    records = []
    for study in args.studies.split(","):
        if study not in CONFIGS:
            sys.exit(f"bench_tune: unknown study {study}; expected {', '.join(CONFIGS)}")
        seeds = [int(x) for x in args.seeds.split(",")]
        for seed in seeds:
            for i, (label, fields) in enumerate(searches(study)):
                if fields["Sampler"] == "Grid" and seed != seeds[0]:
                    continue
                if args.only and not any(w in label for w in args.only.split(",")):
                    continue
                if fields["Sampler"] != "Grid" and len(seeds) > 1:
                    label += f", seed {seed}"
                if args.parallel > 1:
                    label += f", {args.parallel} at a time"
                if (study, label) in earlier:
                    records.append(earlier[(study, label)])
                    continue
                records.append(run_search(tools, args.data, args.work, study,
                                          f"{i}-seed{seed}-p{args.parallel}", label, fields,
                                          seed, args.parallel))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=2)
    print(f"{'study':<12} {'search':<30} {'trials':>6} {'epochs':>6} {'recall@20':>9} "
          f"{'of grid':>8} {'seconds':>8} {'of grid':>8}  winner")
    grid = {}
    for r in records:
        g = grid.setdefault(r["study"], r)
        print(f"{r['study']:<12} {r['search']:<30} {r['trials']:>6} {r['epochs']:>6} "
              f"{r['metric']:>9.4f} {100 * r['metric'] / g['metric']:>7.1f}% "
              f"{r['seconds']:>8.1f} {100 * r['seconds'] / g['seconds']:>7.1f}%  "
              f"{short(r['settings'])}")


if __name__ == "__main__":
    main()
