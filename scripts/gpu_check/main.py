#!/usr/bin/env python3
"""The GPU check, planned for a rare window of GPU time: two prepared calls, each within 9
minutes on an H100 or H200 (docs/cuda-backend.md, "The GPU check").

  call 1, correctness: every CUDA test binary's CUDA instances (default paths, then the opt-in
          paths' kernel tests with those paths on), compute-sanitizer memcheck and racecheck over
          the new kernels' tests, and every tool-level path with a verdict
  call 2, speed: the MovieLens-20M-shaped benchmark next to PyTorch, each opt-in path's A/B,
          the --profile tables, BF16 on the host's CPU, torch.compile, the sampled
          1,000,000-item catalog, the CNN

Each starts with the device, the driver (the call stops at once when the driver cannot run the
bundle), the libraries and the CUDA module found as a user's run finds it. Each step runs under a
time limit clamped to what is left of the call's budget, and its verdicts and logs are written
under the output folder when it ends.

Usage:
  gpu-check.sh --bundle ARCHIVE [--call 1|2]   unpack scripts/gpu-bundle.sh's archive and check
  gpu-check.sh [--call 1|2]                    build here with CUDA first (build-gpu/), then check
  gpu-check.sh --plan [--call 1|2]             print the plan of the call(s); run nothing
  --simulate    spend the budget by each step's estimate instead of the time it takes here
                (scripts/gpu-rehearsal.sh; commands still get their steps' limits in real time)
Environment:
  NN_CHECK_OUT     output folder (default $OUT when set, as on the lent machine, else
                   ./gpu-check-out): report.md, results.tsv, bench.jsonl, logs.tar.gz, meta.json
  NN_CHECK_BUDGET  seconds for the call (default 540: 9 minutes); give call 2 what the window
                   has left: its steps come in order of importance
  NN_CHECK_STEPS   the steps to run, comma-separated (default all; the first step always runs)
  NN_DEVICE        CUDA device index (default 0)
  NN_BENCH_BATCHES, NN_BENCH_EPOCHS   benchmark minibatches per epoch (50) and timed epochs (3)
  NN_CUDA_LIB_PATH extra folders (colon-separated) holding the CUDA libraries
  NN_BUILD_DIR     build folder without --bundle (default build-gpu); NN_CUDA_ARCH (default 90)
Exit status: 0 when every verdict is PASS, 1 otherwise (results.tsv: PASS, FAIL, NO-DEVICE when
there was no usable GPU, NOT-RUN when the time budget or a missing tool stopped it), 2 for a
usage error.
"""

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import call1  # noqa: E402
import call2  # noqa: E402
import environment  # noqa: E402
from runner import NOT_RUN, Check  # noqa: E402
from shared import Session, preflight_step  # noqa: E402

DEFAULT_BUDGET = 540


def call_steps(call, session, batches=50, epochs=3):
    card = lambda: session.check.meta.update(card=environment.card_name(session.device))
    first = preflight_step(session, lambda: (card(), session.check.write_meta()))
    rest = call1.steps(session) if call == 1 else call2.steps(session, batches, epochs)
    return [first] + rest


def plan_line(call, steps, budget):
    planned = sum(s.estimate for s in steps)
    return f"call {call}: {planned} s planned of {budget} s, {len(steps)} steps"


def print_plan(call, budget):
    class Stub:  # a session stand-in: the plan needs no machine
        check = None
        device = 0
        paths = None
    steps = call_steps(call, Stub())
    print(f"call {call} (budget {budget} s, {budget - 10} s after the reserve):")
    start = 0
    for s in steps:
        print(f"  {s.name:<18} starts at {start:>4} s  estimate {s.estimate:>4} s  "
              f"limit {s.limit:>4} s")
        start += s.estimate
    print(plan_line(call, steps, budget))
    return 0 if start <= budget - 10 else 1


def unpack_and_run(archive, argv):
    """Unpacks the bundle and runs the copy of this check inside it (what was packed with the
    binaries is what runs)."""
    if not os.path.isfile(archive):
        print(f"gpu-check: {archive}: no such archive", file=sys.stderr)
        return 2
    unpacked = tempfile.mkdtemp(prefix="nn-gpu-bundle.")
    try:
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "tar_filter"):  # Python 3.12: say what is allowed
                tar.extractall(unpacked, filter="tar")
            else:
                tar.extractall(unpacked)
        inner = os.path.join(unpacked, "nn-gpu-bundle")
        return subprocess.call([sys.executable, os.path.join(inner, "scripts", "gpu_check",
                                                             "main.py"), "--in-bundle", inner]
                               + argv)
    finally:
        shutil.rmtree(unpacked, ignore_errors=True)


def build_here(repo, work):
    build = os.path.realpath(os.environ.get("NN_BUILD_DIR", os.path.join(repo, "build-gpu")))
    log = os.path.join(work, "build.log")
    with open(log, "w") as out:
        ok = subprocess.call(["cmake", "-S", repo, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                              "-DNN_ENABLE_CUDA=ON",
                              f"-DCMAKE_CUDA_ARCHITECTURES={os.environ.get('NN_CUDA_ARCH', '90')}"],
                             stdout=out, stderr=subprocess.STDOUT) == 0
        targets = ["nn_cuda", "nn_cuda_tests", "nn_backend_tests", "nn_predict_tests", "nn-train",
                   "nn-generate", "nn-predict", "nn-encode", "nn-serve", "nn-bench-autoencoder",
                   "nn-bench-serve-load", "nn-bench-cnn"]
        ok = ok and subprocess.call(["cmake", "--build", build, "-j", str(os.cpu_count()),
                                     "--target"] + targets, stdout=out,
                                    stderr=subprocess.STDOUT) == 0
    if not ok:
        print(open(log).read()[-3000:], file=sys.stderr)
        print("gpu-check: the CUDA build failed", file=sys.stderr)
        return None
    return environment.build_layout(repo, build, work)


def main(argv):
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--bundle")
    ap.add_argument("--in-bundle")
    ap.add_argument("--call", type=int, choices=(1, 2), default=1)
    ap.add_argument("--simulate", action="store_true")
    ap.add_argument("--plan", action="store_true")
    ap.add_argument("-h", "--help", action="store_true")
    args, rest = ap.parse_known_args(argv)
    if args.help:
        print(__doc__.strip())
        return 0
    if rest:
        print(f"gpu-check: unknown argument '{rest[0]}' (see --help)", file=sys.stderr)
        return 2
    budget = int(os.environ.get("NN_CHECK_BUDGET", DEFAULT_BUDGET))
    if args.plan:
        return max(print_plan(c, budget) for c in ((args.call,) if "--call" in argv else (1, 2)))
    if args.bundle:
        passed = [a for a in argv if a not in ("--bundle", args.bundle)]
        return unpack_and_run(os.path.realpath(args.bundle), passed)

    out = os.path.realpath(os.environ.get("NN_CHECK_OUT") or os.environ.get("OUT") or
                           os.path.join(os.getcwd(), "gpu-check-out"))
    work = tempfile.mkdtemp(prefix="nn-gpu-check.")
    try:
        if args.in_bundle:
            layout = environment.bundle_layout(os.path.realpath(args.in_bundle))
        else:
            layout = build_here(os.path.dirname(os.path.dirname(HERE)), work)
            if layout is None:
                return 1
        # The CUDA libraries' folders for every program the check starts; cuDNN's path for the
        # backend's dlopen. NN_CUDA_MODULE is never set: the module is found as a user's is.
        folders, cudnn, absent = environment.find_cuda_libraries()
        if folders:
            os.environ["LD_LIBRARY_PATH"] = ":".join(
                folders + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p])
        if cudnn and not os.environ.get("NN_CUDNN_LIBRARY"):
            os.environ["NN_CUDNN_LIBRARY"] = cudnn
        os.environ.pop("NN_CUDA_MODULE", None)
        device = int(os.environ.get("NN_DEVICE", "0"))
        check = Check(out, work, args.call, budget, args.simulate,
                      meta={"commit": layout.commit, "card": "no-gpu"})
        title = "correctness" if args.call == 1 else "speed"
        check.say(f"# GPU check, call {args.call}: {title} "
                  f"({datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC')})")
        check.say("")
        check.say("Bundle: " + "; ".join(layout.bundle_text.strip().splitlines())
                  if layout.bundle_text
                  else f"Build: commit {layout.commit}")
        check.say(f"Budget: {budget} s{' (simulated: each step charged its estimate)' if args.simulate else ''}; "
                  f"library folders added: {':'.join(folders) or '(none)'}"
                  + (f"; not found: {' '.join(absent)}" if absent else ""))
        session = Session(check, layout, device)
        steps = call_steps(args.call, session,
                           int(os.environ.get("NN_BENCH_BATCHES", "50")),
                           int(os.environ.get("NN_BENCH_EPOCHS", "3")))
        check.meta["plan_line"] = plan_line(args.call, steps, budget)
        chosen = os.environ.get("NN_CHECK_STEPS")
        if chosen:
            wanted = set(chosen.split(","))
            for s in steps[1:]:
                if s.name not in wanted:
                    s.run = skipped
                    s.estimate = 0
                    s.minimum = 0
        began = time.monotonic()
        check.run_steps(steps)
        if args.call == 2:
            table = subprocess.run([sys.executable, os.path.join(layout.root, "scripts",
                                                                 "bench_table.py"),
                                    os.path.join(out, "bench.jsonl")], capture_output=True,
                                   text=True)
            check.say("")
            check.say("## Benchmark table")
            check.block(table.stdout + table.stderr)
        counts = {}
        with open(check.results) as f:
            for line in list(f)[1:]:
                status = line.split("\t")[1]
                counts[status] = counts.get(status, 0) + 1
        check.say("")
        check.say("## Result")
        check.say("  ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
                  f" in {time.monotonic() - began:.0f} s"
                  + (f" ({check.elapsed():.0f} s simulated)" if args.simulate else ""))
        check.say(check.meta["plan_line"])
        check.meta["counts"] = counts
        check.write_meta()
        check.pack_logs()
        print(f"gpu-check: report in {check.report}, logs in {out}/logs.tar.gz")
        return 1 if check.failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def skipped(ctx):
    for v in ctx.step.verdicts:
        ctx.result(v, NOT_RUN, "not asked for (NN_CHECK_STEPS)")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
