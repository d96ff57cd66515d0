#!/usr/bin/python3
"""Prediction throughput of the MovieLens sample network from Python (nnsuite, 1 vs 2 Evaluator
threads) and through nn-predict on the same network and data, plus the latency of one Python
call for a single example.

    PYTHONPATH=build/python /usr/bin/python3 scripts/bench_python_predict.py \
        [--network samples/movielens/work/network.nc] [--copies 8] [--threads 0]

Without --network the sample's network (configs/recommender-autoencoder/network.json) is built
with random weights (throughput does not depend on the weights). The input is the bundled
ratings (610 users x 9724 movies) repeated --copies times. Every number is the best of --repeat
runs; top 10 per example, no exclusion. Timings only: nothing is asserted.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import nnsuite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best_of(n, fn):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--network", help="a trained network .nc (default: random weights)")
    ap.add_argument("--tools", default=os.path.join(ROOT, "build", "src", "tools"))
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--threads", type=int, default=0, help="backend threads (0 = all CPUs)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--calls", type=int, default=2000, help="single-example calls timed")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="nn-bench-py-")
    sample = os.path.join(ROOT, "samples", "movielens")
    subprocess.run([sys.executable, os.path.join(sample, "convert_ratings.py"), "--mode",
                    "indicator", "-o", "ratings.txt", os.path.join(sample, "ratings.csv")],
                   cwd=work, check=True, capture_output=True)
    # The users repeated --copies times (renamed), as one NetCDF dataset for both paths.
    lines = open(os.path.join(work, "ratings.txt")).read().splitlines()
    with open(os.path.join(work, "repeated.txt"), "w") as f:
        for c in range(args.copies):
            for line in lines:
                user, rest = line.split("\t", 1)
                f.write(f"{user}_{c}\t{rest}\n")
    subprocess.run([os.path.join(args.tools, "nn-generate"), "-d", "input", "-i", "repeated.txt",
                    "-o", "input.nc", "-f", "features.idx", "-s", "samples.idx", "-c"],
                   cwd=work, check=True, capture_output=True)
    x = nnsuite.read_datasets(os.path.join(work, "input.nc"))["input"]
    net = args.network
    if not net:
        model = nnsuite.Model.from_json(
            os.path.join(ROOT, "configs", "recommender-autoencoder", "network.json"),
            datasets={"input": x, "output": x}, seed=1, threads=args.threads)
        net = os.path.join(work, "network.nc")
        model.save(net)
    model = nnsuite.Model.load(net, threads=args.threads)
    rows = x.shape[0]
    print(f"network {net}: {x.shape[1]} inputs, {model.layer(model.output_layers[0]).units} "
          f"outputs; {rows} examples, {x.nnz} non-zeros; backend threads "
          f"{args.threads or os.cpu_count()}")

    ev = [model.evaluator(max_batch=1024) for _ in range(2)]
    t1 = best_of(args.repeat, lambda: ev[0].predict(x, k=10))
    half = rows // 2
    parts = [x[:half], x[half:]]

    def two_threads():
        ts = [threading.Thread(target=ev[i].predict, args=(parts[i],), kwargs={"k": 10})
              for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    t2 = best_of(args.repeat, two_threads)
    print(f"python, 1 Evaluator thread : {rows / t1:10.0f} examples/s ({t1:.3f} s)")
    print(f"python, 2 Evaluator threads: {rows / t2:10.0f} examples/s ({t2:.3f} s)")

    cdl = os.path.join(work, "predict.cdl")
    with open(cdl, "w") as f:
        f.write('{"Version": 0.9, "Network": "%s", "Command": "Predict", "Data": "input.nc",'
                ' "PredictionParameters": {"K": 10, "MiniBatch": 1024, "Output": "recs"}}' % net)
    cmd = [os.path.join(args.tools, "nn-predict"), cdl]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    best_wall, reported = None, None
    for _ in range(args.repeat):
        start = time.perf_counter()
        out = subprocess.run(cmd, cwd=work, check=True, capture_output=True, text=True)
        wall = time.perf_counter() - start
        m = re.search(r"\(([0-9.]+) examples/s\)", out.stdout + out.stderr)
        if best_wall is None or wall < best_wall:
            best_wall, reported = wall, m.group(1) if m else "?"
    print(f"nn-predict (whole process)  : {rows / best_wall:10.0f} examples/s ({best_wall:.3f} s, "
          f"its own report: {reported} examples/s, reading and writing included)")

    one = x[:1]
    dense_one = one.toarray()[0]
    for name, fn in [("Model.predict, 1 CSR row", lambda: model.predict(one, k=10)),
                     ("Evaluator.predict, 1 CSR row", lambda: ev[0].predict(one, k=10)),
                     ("Evaluator.predict, 1 dense row", lambda: ev[0].predict(dense_one, k=10))]:
        for _ in range(50):
            fn()
        lat = []
        for _ in range(args.calls):
            start = time.perf_counter()
            fn()
            lat.append((time.perf_counter() - start) * 1e6)
        lat.sort()
        print(f"latency, {name:30s}: median {statistics.median(lat):8.1f} us, "
              f"p99 {lat[int(len(lat) * 0.99)]:8.1f} us")
    # The call's own overhead (argument checks, conversion, GIL release, result arrays): the same
    # calls on a network too small to cost anything.
    tiny = nnsuite.Model.from_json(
        {"Name": "tiny", "Layers": [
            {"Name": "In", "Kind": "Input", "N": 8, "DataSet": "x"},
            {"Name": "Out", "Kind": "Output", "N": 8, "DataSet": "y", "Activation": "Sigmoid"}]},
        threads=1)
    tiny_ev = tiny.evaluator()
    row = np.ones(8, np.float32)
    lat = []
    for _ in range(args.calls):
        start = time.perf_counter()
        tiny_ev.predict(row, k=3)
        lat.append((time.perf_counter() - start) * 1e6)
    lat.sort()
    print(f"latency, 8-unit network (call overhead)  : median {statistics.median(lat):8.1f} us, "
          f"p99 {lat[int(len(lat) * 0.99)]:8.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
