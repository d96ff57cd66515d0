#!/usr/bin/env python3
"""Byte-flip sweep over the files the tools write (docs/reliability.md, "Damaged files").

Writes a dataset (nn-generate), a network file and a checkpoint (nn-train), then, one position at
a time, XORs one byte of a copy with a random non-zero mask and runs the tool that reads that kind
of file:

  network     nn-predict -n <damaged network> ...           (recommendation lines)
  checkpoint  nn-train --resume with the damaged checkpoint as the only one (result network)
  dataset     nn-train -i <damaged dataset> for one epoch    (result network)

Each run is classified by comparing with the run on the intact file:

  detected   exit status 1 with "nn-<tool>: error: ..." and no result file
  unaltered  exit status 0 and the same result as from the intact file (the byte was not used:
             e.g. a magic number of the checksum trailer, after which the file reads as one
             without checksums, whose HDF5 bytes are intact)
  silent     exit status 0 and a different result: damaged data used without a word  (failure)
  signal     ended by a signal (a crash)                                               (failure)
  hang       still running after 180 s                                                 (failure)
  partial    any other failure that left a result file behind                          (failure)
  other      any other exit status                                                     (failure)

Positions are grouped by class from the intact file's checksum table: header (the HDF5
superblock, the first 96 bytes), metadata (HDF5 object headers, attributes, heaps: the regions
without a variable name), data (a variable's values) and trailer (the checksum table and footer).
Classes take turns; within a class positions are drawn at random without repetition, so small
classes are swept completely.

With --without-checksums the files are first cut to their HDF5 image (the trailer removed), as
files written before checksums existed, or by DSSTNE: they have only the structural checks, and
the sweep measures what those catch (the trailer class is then empty).

Usage: flip_sweep.py --tools BUILD/src/tools [--seconds S] [--positions N] [--kinds K,...]
                     [--seed N] [--json FILE] [--without-checksums]
Stops a kind after S seconds or N positions, whichever comes first. Exit status 1 when any run
failed (silent, signal, hang, partial, other).
"""
import argparse
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

CLASSES = ["header", "metadata", "data", "trailer"]
OUTCOMES = ["detected", "unaltered", "silent", "signal", "hang", "partial", "other"]
FAILURES = {"silent", "signal", "hang", "partial", "other"}


def run(cmd, cwd, timeout=180):
    # No gnuplot or python3 on PATH: nn-train skips its loss curve (faster, nothing else changes).
    env = dict(os.environ, PATH="/nonexistent", OMP_NUM_THREADS="1")
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def regions(path):
    """The intact file's (start, end, class) ranges from its checksum trailer."""
    data = open(path, "rb").read()
    foot = data[-40:]
    assert foot[:8] == b"NN-CSUM1" and foot[32:] == b"NN-CSEND", f"{path}: no checksum trailer"
    covered, table_length, _, count, _ = struct.unpack("<QIIII", foot[8:32])
    table = data[covered:covered + table_length]
    out, pos = [], 0
    for _ in range(count):
        start, length, _, name_length = struct.unpack("<QQIH", table[pos:pos + 22])
        pos += 22 + name_length
        out.append((start, start + length, "data" if name_length else "metadata"))
    ranges = []
    for start, end, cls in out:
        if cls == "metadata" and start < 96:
            ranges.append((start, min(end, 96), "header"))
            start = min(end, 96)
        if start < end:
            ranges.append((start, end, cls))
    ranges.append((covered, len(data), "trailer"))
    return ranges, len(data)


class Kind:
    """One kind of file: how to make a run read a damaged copy, and its intact result."""

    def __init__(self, name, work, tools, intact, strip=False):
        self.name, self.work, self.tools, self.intact = name, work, tools, intact
        self.bytes = open(intact, "rb").read()
        self.ranges, self.size = regions(intact)
        if strip:  # the HDF5 image alone: a file without checksums
            covered = self.ranges[-1][0]
            self.bytes = self.bytes[:covered]
            self.ranges = self.ranges[:-1]
            self.size = covered
        self.expected = None

    def command(self):
        """The run, in a fresh directory holding the damaged file (relative names: the result's
        checkpoint_name attribute must not depend on the directory)."""
        w, t = self.work, self.tools
        train = [f"{t}/nn-train", "-c", f"{w}/config.json", "-o", f"{w}/output.nc", "-b", "8",
                 "--seed", "7", "--threads", "1", "-q"]
        if self.name == "network":
            return [f"{t}/nn-predict", "-n", "input.nc", "-r", f"{w}/ratings.txt", "-i",
                    f"{w}/features.idx", "-o", f"{w}/features.idx", "-k", "5", "--threads", "1",
                    "-q", "-s", "result"]
        if self.name == "checkpoint":
            return train + ["-i", f"{w}/input.nc", "-n", "result", "-e", "2",
                            "--checkpoint-name", "ck", "--checkpoint-interval", "1", "--resume"]
        return train + ["-i", "input.nc", "-n", "result", "-e", "1", "--checkpoint-interval", "0"]

    def place(self, content, out_dir):
        """Writes the (damaged) file where the run reads it."""
        path = f"{out_dir}/ck1.nc" if self.name == "checkpoint" else f"{out_dir}/input.nc"
        with open(path, "wb") as f:
            f.write(content)

    def attempt(self, content):
        out_dir = tempfile.mkdtemp(dir=self.work, prefix=f"{self.name}-")
        try:
            self.place(content, out_dir)
            result = f"{out_dir}/result"
            try:
                p = run(self.command(), out_dir)
            except subprocess.TimeoutExpired:
                return "hang", None, ""
            produced = open(result, "rb").read() if os.path.exists(result) else None
            leftovers = [f for f in os.listdir(out_dir) if ".tmp." in f]
            if leftovers:
                return "partial", produced, "temporary files left: " + " ".join(leftovers)
            return p.returncode, produced, p.stderr
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)

    def classify(self, status, produced, stderr):
        if status == "hang" or status == "partial":
            return status
        if status < 0 or status >= 128:
            return "signal"
        tool = "nn-predict" if self.name == "network" else "nn-train"
        if status == 1:
            if produced is not None:
                return "partial"
            return "detected" if f"{tool}: error:" in stderr else "other"
        if status == 0:
            return "unaltered" if produced == self.expected else "silent"
        return "other"


def setup(work, tools):
    """Tiny data (30 users over 18 items), a network file and a checkpoint."""
    with open(f"{work}/ratings.txt", "w") as f:
        for u in range(30):
            t = u % 3
            items = [f"m{t * 6 + j}" for j in range(6) if (u + j) % 4 != 0]
            f.write(f"u{u}\t" + ":".join(items) + "\n")
    with open(f"{work}/config.json", "w") as f:
        json.dump({"Name": "tiny", "ErrorFunction": "CrossEntropy", "Layers": [
            {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": True},
            {"Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid"},
            {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
             "Activation": "Sigmoid"}]}, f)
    gen = [f"{tools}/nn-generate", "-i", "ratings.txt", "-f", "features.idx", "-s", "samples.idx"]
    for cmd in (gen + ["-d", "input", "-o", "input.nc", "-c"], gen + ["-d", "output", "-o",
                                                                        "output.nc"]):
        run(cmd, work).check_returncode()
    run([f"{tools}/nn-train", "-c", "config.json", "-i", "input.nc", "-o", "output.nc", "-n",
         "net.nc", "-e", "1", "-b", "8", "--seed", "7", "--threads", "1", "-q",
         "--checkpoint-name", "ck", "--checkpoint-interval", "1"], work).check_returncode()


def sweep(kind, seconds, positions, rng, log):
    counts = {c: {o: 0 for o in OUTCOMES} for c in CLASSES}
    status, produced, stderr = kind.attempt(kind.bytes)
    if status != 0 or produced is None:
        sys.exit(f"flip_sweep: {kind.name}: the run on the intact file failed: {stderr}")
    kind.expected = produced
    pools = {c: [] for c in CLASSES}
    for start, end, cls in kind.ranges:
        pools[cls].extend(range(start, end))
    for c in CLASSES:
        rng.shuffle(pools[c])
    deadline = time.monotonic() + seconds
    tried = 0
    failures = []
    while tried < positions and time.monotonic() < deadline and any(pools.values()):
        for c in CLASSES:
            if not pools[c] or tried >= positions or time.monotonic() >= deadline:
                continue
            pos = pools[c].pop()
            mask = rng.randrange(1, 256)
            content = bytearray(kind.bytes)
            content[pos] ^= mask
            status, produced, stderr = kind.attempt(bytes(content))
            outcome = kind.classify(status, produced, stderr)
            counts[c][outcome] += 1
            tried += 1
            if outcome in FAILURES:
                note = (stderr.strip().splitlines() or [""])[-1][:200]
                failures.append(f"{kind.name} {c} byte {pos} ^0x{mask:02x}: {outcome} "
                                f"(status {status}) {note}")
                log(failures[-1])
    return counts, tried, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", required=True)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--positions", type=int, default=10**9)
    ap.add_argument("--kinds", default="network,checkpoint,dataset")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default="")
    ap.add_argument("--without-checksums", action="store_true")
    args = ap.parse_args()
    tools = os.path.abspath(args.tools)
    work = tempfile.mkdtemp(prefix="nn-flip-sweep-")
    rng = random.Random(args.seed)
    print(f"flip_sweep: seed {args.seed} (--seed repeats the positions)", flush=True)
    summary, all_failures = {}, []
    try:
        setup(work, tools)
        files = {"network": "net.nc", "checkpoint": "ck1.nc", "dataset": "input.nc"}
        for name in args.kinds.split(","):
            kind = Kind(name, work, tools, f"{work}/{files[name]}", args.without_checksums)
            start = time.monotonic()
            counts, tried, failures = sweep(kind, args.seconds, args.positions, rng,
                                            lambda line: print("  " + line, flush=True))
            summary[name] = {"file_bytes": kind.size, "positions": tried,
                             "seconds": round(time.monotonic() - start, 1), "classes": counts}
            all_failures += failures
            print(f"{name}: {kind.size} bytes, {tried} positions in "
                  f"{summary[name]['seconds']} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'kind':<11} {'class':<9} {'tried':>6} " +
          " ".join(f"{o:>9}" for o in OUTCOMES))
    for name, s in summary.items():
        for c in CLASSES:
            row = s["classes"][c]
            print(f"{name:<11} {c:<9} {sum(row.values()):>6} " +
                  " ".join(f"{row[o]:>9}" for o in OUTCOMES))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "failures": all_failures}, f, indent=1)
    print(f"\nflip_sweep: {len(all_failures)} failure(s)")
    return 1 if all_failures else 0


if __name__ == "__main__":
    sys.exit(main())
