#!/usr/bin/env python3
"""The GPU check's machinery without a GPU (scripts/gpu_check): both calls' plans fit their
budgets; a step's limit is clamped to what is left and a command past it is killed; a step that
cannot get its minimum is NOT-RUN with the reason; a step whose code fails gives FAIL for each
verdict it owed; verdicts and logs are on disk after every step; simulated time charges
estimates; the GoogleTest and loss comparisons judge what they should.

Usage: gpu_check_test.py SOURCE_DIR
"""

import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time

SOURCE = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
CHECK = os.path.join(SOURCE, "scripts", "gpu_check")
sys.path.insert(0, CHECK)

import compare  # noqa: E402
import runner  # noqa: E402
from runner import FAIL, NO_DEVICE, NOT_RUN, PASS, Check, Step  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def results(out):
    with open(os.path.join(out, "results.tsv")) as f:
        return {l.split("\t")[0]: l.rstrip("\n").split("\t") for l in list(f)[1:]}


def test_plans_fit():
    for call in (1, 2):
        p = subprocess.run([sys.executable, os.path.join(CHECK, "main.py"), "--plan", "--call",
                            str(call)], capture_output=True, text=True)
        expect(p.returncode == 0, f"--plan --call {call} exits 0 ({p.stderr[-300:]})")
        last = p.stdout.strip().splitlines()[-1]
        m = re.fullmatch(r"call (\d+): (\d+) s planned of (\d+) s, (\d+) steps", last)
        expect(m and int(m.group(1)) == call, f"plan line: {last}")
        if m:
            planned, budget = int(m.group(2)), int(m.group(3))
            expect(planned <= budget - runner.RESERVE and budget <= 540,
                   f"call {call}: {planned} s planned of {budget} s")


def test_limits_and_files():
    out, work = tempfile.mkdtemp(), tempfile.mkdtemp()
    check = Check(out, work, 1, budget=runner.RESERVE + 12)
    seen_after_first = {}

    def slow(ctx):
        began = time.monotonic()
        rc = ctx.run(["sleep", "30"], "slow")
        ctx.result("slow_verdict", PASS if rc == 0 else FAIL, f"exit {rc} after "
                   f"{time.monotonic() - began:.1f} s")

    def second(ctx):
        seen_after_first.update(results(out))
        with tarfile.open(os.path.join(out, "logs.tar.gz")) as tar:
            seen_after_first["logs"] = tar.getnames()
        ctx.result("second_verdict", PASS, f"timeout {ctx.timeout}")

    def broken(ctx):
        raise RuntimeError("a bug in the check")

    steps = [Step("slow", 2, 3, slow, ["slow_verdict"], minimum=1),
             Step("second", 1, 100, second, ["second_verdict"], minimum=1),
             Step("broken", 1, 5, broken, ["broken_a", "broken_b"], minimum=1),
             Step("late", 30, 30, lambda ctx: None, ["late_verdict"], minimum=20)]
    began = time.monotonic()
    check.run_steps(steps)
    took = time.monotonic() - began
    r = results(out)
    expect(r["slow_verdict"][1] == FAIL and "exit 124" in r["slow_verdict"][3],
           f"a command past its step's limit is stopped: {r['slow_verdict']}")
    expect(took < 15, f"the killed command did not hold the call ({took:.1f} s)")
    expect("slow_verdict" in seen_after_first and "logs/slow.log" in seen_after_first["logs"],
           "the first step's verdict and log were on disk before the second step ran")
    timeout = int(r["second_verdict"][3].split()[-1])
    expect(timeout < 100, f"the second step's limit was clamped to what was left ({timeout} s)")
    expect(r["broken_a"][1] == FAIL and r["broken_b"][1] == FAIL and
           "a bug in the check" in r["broken_a"][3], f"a failing step: {r['broken_a']}")
    expect(r["late_verdict"][1] == NOT_RUN and "time budget" in r["late_verdict"][3],
           f"a step without its minimum: {r['late_verdict']}")
    meta = json.load(open(os.path.join(out, "meta.json")))
    expect([e["step"] for e in meta["plan"]] == ["slow", "second", "broken", "late"],
           "meta.json lists every step")
    expect(check.failed, "the call failed")


def test_simulated_time():
    out, work = tempfile.mkdtemp(), tempfile.mkdtemp()
    check = Check(out, work, 2, budget=runner.RESERVE + 100, simulate=True)
    ok = lambda name: (lambda ctx: ctx.result(name, PASS))
    check.run_steps([Step("a", 60, 90, ok("a"), ["a"]), Step("b", 30, 90, ok("b"), ["b"]),
                     Step("c", 30, 90, ok("c"), ["c"])])
    r = results(out)
    expect(r["a"][1] == PASS and r["b"][1] == PASS, "simulated: the first steps ran")
    expect(r["c"][1] == NOT_RUN, f"simulated: 90 s charged leaves 10 s, under c's 15: {r['c']}")
    meta = json.load(open(os.path.join(out, "meta.json")))
    expect(meta["plan"][1]["timeout"] == 40, f"b's limit clamped to 40 s: {meta['plan'][1]}")


def test_judges():
    good = "[==========] 3 tests from 1 test suite ran. (5 ms total)\n[  PASSED  ] 3 tests.\n"
    expect(runner.gtest_status(good, 0) == PASS, "a clean run passes")
    expect(runner.gtest_status(good + "[  FAILED  ] A.B\n", 1) == FAIL, "a failure fails")
    expect(runner.gtest_status("[ RUN      ] A.B\n", 0) == FAIL, "a run that never ended fails")
    skipped = ("[==========] 3 tests from 1 test suite ran. (5 ms total)\n[  PASSED  ] 0 tests.\n"
               "[  SKIPPED ] 3 tests, listed below:\nno CUDA device\n")
    expect(runner.gtest_status(skipped, 0) == NO_DEVICE, "all skipped for no device: NO-DEVICE")
    empty = "[==========] 0 tests from 0 test suites ran. (0 ms total)\n[  PASSED  ] 0 tests.\n"
    expect(runner.gtest_status(empty, 0) == FAIL, "a filter that matched nothing fails")
    expect(runner.tool_status("error: no usable CUDA device (no CUDA device)", 1) == NO_DEVICE,
           "a tool without a device: NO-DEVICE")
    expect(runner.tool_status("error: out of memory", 1) == FAIL, "a tool error fails")
    expect(compare.compare_losses([1.0, 0.5], [1.0000001, 0.50001], 1e-5, 1e-4)[0],
           "losses within tolerance agree")
    expect(not compare.compare_losses([1.0, 0.5], [1.0, float("nan")], 1e-5, 1e-4)[0],
           "NaN never passes")
    expect(not compare.compare_losses([1.0, 0.5], [1.0], 1e-5, 1e-4)[0],
           "a run with fewer epochs does not pass")
    expect(not compare.compare_losses([1.0], [1.01], 1e-3, 1e-3)[0], "1% off fails at 1e-3")


for test in (test_plans_fit, test_limits_and_files, test_simulated_time, test_judges):
    test()
print(f"{len(failures)} failures" if failures else "all passed")
sys.exit(1 if failures else 0)
