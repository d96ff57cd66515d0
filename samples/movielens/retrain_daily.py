#!/usr/bin/python3
"""Retraining every day on MovieLens (docs/retraining.md, docs/tutorial.md "Retraining every day").

Day 1 is the ratings before the 80th percentile of time; day 2 is all of them. Each user's latest
ratings (--holdout per user with at least --min-ratings) are held out of both days and are what
recall@10 is measured on. Day 2 is indexed afresh from its rows in another order, so its item ids
differ from day 1's, and it has new users and new movies. The recipe:

  1. trains day 1 with the config's own epochs;
  2. warm-starts day 2 from day 1's network (nn-train --warm-start) for --warm-epochs epochs at
     --warm-alpha;
  3. retrains day 2 from random weights with the config's own epochs;
  4. measures recall@10 of both on the held-out ratings, and their training times;
  5. serves day 1's network with nn-serve and replaces the file three times (day 2 warm, day 2
     full, day 1 again) while clients send --requests requests, checking that none fails, that each
     answer names only items of the network version it reports, and that a movie new on day 2 is
     known as soon as a day-2 network is served.

Usage: retrain_daily.py [--ratings ratings.csv] [--work DIR] [--config recommender-autoencoder]
                        [--warm-epochs 20] [--warm-alpha 0.00035] [--users N] [--requests 2000] [--no-serve]
NN_TOOLS names the directory of the tools (default: build/src/tools of this tree).
"""

import argparse
import csv
import http.client
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class RecipeError(Exception):
    """A step failed; the message says which and why."""


def parse_args():
    p = argparse.ArgumentParser(prog="retrain_daily.py", description=__doc__.split("\n")[0])
    p.add_argument("--ratings", default=os.path.join(HERE, "ratings.csv"))
    p.add_argument("--work", default=os.path.join(HERE, "work-retrain"))
    p.add_argument("--config", default="recommender-autoencoder")
    p.add_argument("--warm-epochs", type=int, default=20)
    p.add_argument("--warm-alpha", type=float, default=0.00035,
                   help="learning rate of the warm start (0: the config's Alpha); a third of the "
                        "config's 0.001 reached the full retrain's recall (docs/retraining.md)")
    p.add_argument("--full-epochs", type=int, default=0, help="0: the config's own epochs")
    p.add_argument("--seed", type=int, default=0, help="RandomSeed of the day-2 runs (0: config's)")
    p.add_argument("--day1-epochs", type=int, default=0, help="0: as --full-epochs")
    p.add_argument("--holdout", type=int, default=5, help="latest ratings held out per user")
    p.add_argument("--min-ratings", type=int, default=10)
    p.add_argument("--users", type=int, default=0, help="keep only the first N users (0: all)")
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--no-serve", action="store_true")
    return p.parse_args()


def read_ratings(path, users):
    rows = []
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row or not row[0].isdigit():
                continue
            rows.append((row[0], row[1], int(row[3])))
    if users:
        keep = sorted({u for u, _, _ in rows}, key=int)[:users]
        keep = set(keep)
        rows = [r for r in rows if r[0] in keep]
    return rows


def split(rows, holdout, min_ratings):
    """(day1 rows, day2 rows, held-out items per user) with the held-out ratings in neither day."""
    by_user = {}
    for r in rows:
        by_user.setdefault(r[0], []).append(r)
    held = set()
    for user, mine in by_user.items():
        if len(mine) >= min_ratings:
            mine.sort(key=lambda r: (r[2], int(r[1])))
            held.update((user, m) for user, m, _ in mine[-holdout:])
    times = sorted(t for _, _, t in rows)
    cut = times[int(0.8 * len(times))]
    day1 = [r for r in rows if r[2] < cut and (r[0], r[1]) not in held]
    day2 = [r for r in rows if (r[0], r[1]) not in held]
    return day1, day2, held


def write_examples(path, users, items_of):
    with open(path, "w") as f:
        for u in users:
            f.write(u + "\t" + ":".join(items_of.get(u, [])) + "\n")


class Tools:
    def __init__(self, work):
        self.dir = os.environ.get("NN_TOOLS", os.path.join(ROOT, "build", "src", "tools"))
        self.work = work
        for t in ("nn-generate", "nn-train", "nn-predict", "nn-serve"):
            if not os.access(os.path.join(self.dir, t), os.X_OK):
                raise RecipeError(f"{self.dir}/{t} is missing: build the tools (scripts/setup.sh)")

    def run(self, tool, *args, log=None):
        cmd = [os.path.join(self.dir, tool), *map(str, args)]
        done = subprocess.run(cmd, cwd=self.work, capture_output=True, text=True)
        if log:
            with open(os.path.join(self.work, log), "w") as f:
                f.write(done.stderr)
        if done.returncode != 0:
            raise RecipeError(" ".join(cmd) + f" exited {done.returncode}:\n" + done.stderr[-2000:])
        return done.stderr


def generate_day(tools, name, rows, held):
    """<name>_in.nc / <name>_out.nc from rows listed in a shuffled order (ids assigned afresh),
    and <name>_test.nc with the held-out items of the same users (unknown items dropped)."""
    items_of = {}
    order = list(rows)
    random.Random(name).shuffle(order)
    for u, m, _ in order:
        items_of.setdefault(u, []).append(m)
    users = list(items_of)
    write_examples(os.path.join(tools.work, f"{name}.txt"), users, items_of)
    held_of = {}
    for u, m in held:
        if u in items_of:
            held_of.setdefault(u, []).append(m)
    write_examples(os.path.join(tools.work, f"{name}_test.txt"), users, held_of)
    for f in (f"{name}.idx", f"{name}_samples.idx"):
        if os.path.exists(os.path.join(tools.work, f)):
            os.remove(os.path.join(tools.work, f))
    common = ["-f", f"{name}.idx", "-s", f"{name}_samples.idx"]
    tools.run("nn-generate", "-d", "input", "-i", f"{name}.txt", "-o", f"{name}_in.nc", *common, "-c")
    tools.run("nn-generate", "-d", "output", "-i", f"{name}.txt", "-o", f"{name}_out.nc", *common)
    tools.run("nn-generate", "-d", "output", "-i", f"{name}_test.txt", "-o", f"{name}_test.nc",
              *common)
    return users, items_of


def train(tools, config, data, results, epochs, warm_start=None, seed=0, alpha=0.0):
    with open(os.path.join(ROOT, "configs", config, "train.cdl")) as f:
        cdl = json.load(f)
    cdl["Network"] = os.path.join(ROOT, "configs", config, "network.json")
    cdl["Data"] = [f"{data}_in.nc", f"{data}_out.nc"]
    params = cdl["TrainingParameters"]
    for key in ("CheckpointName", "CheckpointInterval", "ValidationData"):
        params.pop(key, None)
    params["Results"] = results
    if seed:
        cdl["RandomSeed"] = seed
    if epochs:
        params["Epochs"] = epochs
    if warm_start:
        params["WarmStart"] = warm_start
    if alpha:
        params["Alpha"] = alpha
    path = os.path.join(tools.work, results.replace(".nc", ".cdl"))
    with open(path, "w") as f:
        json.dump(cdl, f, indent=2)
    start = time.monotonic()
    log = tools.run("nn-train", os.path.basename(path), log=results.replace(".nc", ".log"))
    seconds = time.monotonic() - start
    return seconds, params["Epochs"], log


def recall_at_10(tools, network, data):
    out = tools.run("nn-predict", "-n", network, "--data", f"{data}_in.nc", "--target",
                    f"{data}_test.nc", "-k", "10", "-s", "/dev/null")
    m = re.search(r"^(?:nn-predict: )?10,([0-9.]+),([0-9.]+),([0-9.]+)$", out, re.M)
    evaluated = re.search(r"metrics over (\d+) examples", out)
    if not m or not evaluated:
        raise RecipeError(f"nn-predict printed no recall@10 for {network}:\n{out[-1500:]}")
    return float(m.group(2)), int(evaluated.group(1))


def warm_start_lines(log):
    return [l.strip() for l in log.splitlines() if "items kept" in l]


def serve_swaps(tools, networks, catalogs, new_item, requests):
    """Serves networks[0], replaces the file by each next one while `requests` requests run."""
    served = os.path.join(tools.work, "served.nc")
    shutil.copyfile(os.path.join(tools.work, networks[0]), served)
    log = open(os.path.join(tools.work, "serve.log"), "w")
    proc = subprocess.Popen([os.path.join(tools.dir, "nn-serve"), "-n", "served.nc", "--port",
                             "0", "-q"], cwd=tools.work, stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        log.write(line)
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if found:
            port = int(found.group(1))
            break
    if port is None:
        raise RecipeError("nn-serve did not start; see serve.log")
    threading.Thread(target=lambda: [log.write(l) for l in proc.stderr], daemon=True).start()

    def call(method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request(method, path, body=json.dumps(body) if body is not None else None)
        r = c.getresponse()
        return r.status, json.loads(r.read() or b"{}")

    version_network = {1: 0}
    failures, mixed, answered = [], [], [0]
    common = sorted(set.intersection(*catalogs), key=int)[:50]

    def one(i):
        items = random.Random(i).sample(common, 2)
        try:
            status, answer = call("POST", "/recommend", {"items": items, "k": 10})
        except Exception as e:  # a refused connection or a reset is a failed request
            failures.append(f"request {i}: {e}")
            return
        if status != 200:
            failures.append(f"request {i}: HTTP {status}: {answer}")
            return
        answered[0] += 1
        v = int(answer["model_version"])
        net = version_network.get(v)
        if net is not None and not set(answer["items"]) <= catalogs[net]:
            mixed.append(f"request {i}: version {v} answered items outside its catalog")

    def served_version(items):
        _, answer = call("POST", "/recommend", {"items": items, "k": 5})
        return int(answer.get("model_version", 0)), answer

    swaps, new_known = [], []
    probe = sorted(catalogs[0])[:1]
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(one, i) for i in range(requests)]
        for phase in range(1, len(networks)):
            # Swap while requests are in flight: after each quarter of them has been answered.
            while answered[0] + len(failures) < phase * requests // len(networks):
                time.sleep(0.01)
            version_network[phase + 1] = phase
            tmp = served + ".tmp"
            shutil.copyfile(os.path.join(tools.work, networks[phase]), tmp)
            os.replace(tmp, served)
            start = time.monotonic()
            while served_version(probe)[0] != phase + 1:
                if time.monotonic() - start > 60:
                    raise RecipeError(f"nn-serve did not load {networks[phase]} within 60 s")
                time.sleep(0.02)
            swaps.append(f"version {phase + 1}: {networks[phase]} after "
                         f"{time.monotonic() - start:.2f} s")
            if new_item in catalogs[phase]:
                _, answer = served_version([new_item])
                new_known.append(new_item not in answer.get("unknown", [new_item]))
        for f in futures:
            f.result()
    _, metrics_text = None, ""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    metrics_text = c.getresponse().read().decode()
    proc.terminate()
    proc.wait(timeout=30)
    reloads = re.search(r"^nn_serve_reloads_total (\d+)", metrics_text, re.M)
    reload_failures = re.search(r"^nn_serve_reload_failures_total (\d+)", metrics_text, re.M)
    return {
        "sent": requests, "answered": answered[0], "failures": failures,
        "mixed": mixed, "swaps": swaps, "new_item_known": all(new_known) and bool(new_known),
        "reloads": int(reloads.group(1)) if reloads else -1,
        "reload_failures": int(reload_failures.group(1)) if reload_failures else -1,
    }


def main():
    a = parse_args()
    os.makedirs(a.work, exist_ok=True)
    tools = Tools(os.path.abspath(a.work))
    rows = read_ratings(a.ratings, a.users)
    day1, day2, held = split(rows, a.holdout, a.min_ratings)
    print(f"ratings: {len(rows)}; held out (each user's latest {a.holdout}): {len(held)}; "
          f"day 1: {len(day1)} ratings, day 2: {len(day2)}")
    users1, items1 = generate_day(tools, "day1", day1, held)
    users2, items2 = generate_day(tools, "day2", day2, held)
    movies1 = {m for _, m, _ in day1}
    movies2 = {m for _, m, _ in day2}
    print(f"day 1: {len(users1)} users, {len(movies1)} movies; day 2: {len(users2)} users "
          f"({len(set(users2) - set(users1))} new), {len(movies2)} movies "
          f"({len(movies2 - movies1)} new, {len(movies1 - movies2)} gone)")
    full_epochs = a.full_epochs or None
    t1, e1, _ = train(tools, a.config, "day1", "day1.nc", a.day1_epochs or full_epochs)
    print(f"day 1 trained: {e1} epochs in {t1:.1f} s")
    tw, ew, log = train(tools, a.config, "day2", "day2_warm.nc", a.warm_epochs,
                        warm_start="day1.nc", seed=a.seed, alpha=a.warm_alpha)
    for line in warm_start_lines(log):
        print("  warm start: " + line)
    tf, ef, _ = train(tools, a.config, "day2", "day2_full.nc", full_epochs, seed=a.seed)
    rw, n = recall_at_10(tools, "day2_warm.nc", "day2")
    rf, _ = recall_at_10(tools, "day2_full.nc", "day2")
    print(f"day 2 full retrain: {ef} epochs in {tf:.1f} s, recall@10 {rf:.4f} ({n} users)")
    print(f"day 2 warm start:   {ew} epochs in {tw:.1f} s, recall@10 {rw:.4f} "
          f"= {100 * rw / max(rf, 1e-12):.1f}% of the full retrain's in "
          f"{100 * tw / max(tf, 1e-12):.1f}% of its time")
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if a.no_serve:
        return 0
    new_items = sorted(movies2 - movies1, key=int)
    result = serve_swaps(tools, ["day1.nc", "day2_warm.nc", "day2_full.nc", "day1.nc"],
                         [movies1, movies2, movies2, movies1],
                         new_items[0] if new_items else "", a.requests)
    for s in result["swaps"]:
        print("  swapped: " + s)
    print(f"nn-serve: {result['sent']} requests over {len(result['swaps'])} swaps, "
          f"{len(result['failures'])} failed, {len(result['mixed'])} answers outside their "
          f"version's catalog; new movie known at once: {result['new_item_known']}; "
          f"reloads {result['reloads']}, reload failures {result['reload_failures']}")
    for f in (result["failures"] + result["mixed"])[:5]:
        print("  " + f)
    ok = (not result["failures"] and not result["mixed"] and result["new_item_known"] and
          result["reloads"] == len(result["swaps"]) and result["reload_failures"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RecipeError as e:
        print(f"retrain_daily.py: error: {e}", file=sys.stderr)
        sys.exit(1)
