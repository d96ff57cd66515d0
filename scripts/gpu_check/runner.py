"""The GPU check's machinery: the steps of a call run in order, each under a time limit clamped to
what is left of the call's budget, and each step's verdicts, report lines and logs are written
under the output folder as soon as it ends, so that a call killed at its limit still brings back
everything it finished.

The output folder holds at most these files (the device tool brings back 8 files, no deeper than
two folders): report.md, results.tsv, bench.jsonl, logs.tar.gz (rewritten after every step),
meta.json (card, commit, call, plan). A plain folder of logs would be more files than come back.

Simulated time (--simulate, for scripts/gpu-rehearsal.sh): the budget is spent by each step's
estimate of its time on an H100/H200 instead of the time it takes here, so that the plan and
the clamped limits are exercised as a GPU machine would see them; commands still get their
step's own limit in real time (this machine is slower, and without a GPU most steps end at once).
"""

import json
import os
import shlex
import signal
import subprocess
import tarfile
import time
import traceback

PASS, FAIL, NO_DEVICE, NOT_RUN = "PASS", "FAIL", "NO-DEVICE", "NOT-RUN"
# Seconds kept back from the budget for the last repacking of the logs and the summary.
RESERVE = 10
# What the tools print when there is no device (a skip, not a failure of the code).
NO_DEVICE_MARKERS = ("no usable CUDA device", "no CUDA device", "no NVIDIA driver")


class Step:
    """One step of a call: `run(ctx)` writes the verdicts named in `verdicts` through
    ctx.result(). `estimate`: seconds expected on an H100/H200; `limit`: the most it may take
    (clamped to what is left of the budget); a step is not started with less than `minimum`."""

    def __init__(self, name, estimate, limit, run, verdicts, minimum=None):
        self.name, self.estimate, self.limit, self.run = name, estimate, limit, run
        self.verdicts = list(verdicts)
        self.minimum = minimum if minimum is not None else max(5, estimate // 2)


class Check:
    def __init__(self, out_dir, work_dir, call, budget, simulate=False, meta=None):
        self.out, self.work, self.call, self.budget = out_dir, work_dir, call, budget
        self.simulate = simulate
        self.logs = os.path.join(work_dir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        os.makedirs(out_dir, exist_ok=True)
        self.start = time.monotonic()
        self.spent_simulated = 0.0
        self.failed = False
        self.stopped = ""  # why the call stopped early ("" while it runs)
        self.meta = dict(meta or {}, call=call, budget=budget, simulated=simulate, plan=[])
        self.report = os.path.join(out_dir, "report.md")
        self.results = os.path.join(out_dir, "results.tsv")
        with open(self.results, "w") as f:
            f.write("step\tstatus\tseconds\tnote\n")
        open(self.report, "w").close()
        self.write_meta()

    # ---- time -------------------------------------------------------------------------------
    def elapsed(self):
        return self.spent_simulated if self.simulate else time.monotonic() - self.start

    def left(self):
        return self.budget - RESERVE - self.elapsed()

    # ---- output -----------------------------------------------------------------------------
    def say(self, text=""):
        print(text, flush=True)
        with open(self.report, "a") as f:
            f.write(text + "\n")

    def block(self, text):
        text = text.rstrip("\n")
        if not text:
            return
        with open(self.report, "a") as f:
            f.write("\n```\n" + text + "\n```\n\n")

    def record(self, name, status, note=""):
        with open(self.results, "a") as f:
            f.write(f"{name}\t{status}\t{self.elapsed():.0f}\t{note}\n")
        self.say(f"- **{name}: {status}**" + (f" ({note})" if note else ""))
        if status != PASS:
            self.failed = True

    def write_meta(self):
        tmp = os.path.join(self.out, "meta.json.tmp")
        with open(tmp, "w") as f:
            json.dump(self.meta, f, indent=1)
        os.replace(tmp, os.path.join(self.out, "meta.json"))

    def pack_logs(self):
        """logs.tar.gz anew, written aside and renamed: a kill leaves the previous one whole."""
        tmp = os.path.join(self.out, "logs.tar.gz.tmp")
        with tarfile.open(tmp, "w:gz", compresslevel=6) as tar:
            tar.add(self.logs, arcname="logs")
        os.replace(tmp, os.path.join(self.out, "logs.tar.gz"))

    # ---- steps ------------------------------------------------------------------------------
    def run_steps(self, steps):
        for step in steps:
            self.run_step(step)
        self.pack_logs()

    def run_step(self, step):
        if getattr(step, "verdicts_of", None):
            step.verdicts = list(step.verdicts_of())
        left = self.left()
        timeout = int(min(step.limit, left))
        entry = {"step": step.name, "estimate": step.estimate, "limit": step.limit,
                 "start": round(self.elapsed()), "timeout": max(timeout, 0)}
        self.meta["plan"].append(entry)
        ctx = StepContext(self, step, timeout)
        if self.stopped:
            for v in step.verdicts:
                self.record(v, NOT_RUN, self.stopped)
            entry["ran"] = False
        elif timeout < step.minimum:
            why = f"time budget: {max(0, int(left))} s left, the step needs {step.minimum} s"
            for v in step.verdicts:
                self.record(v, NOT_RUN, why)
            entry["ran"] = False
        else:
            began = time.monotonic()
            try:
                step.run(ctx)
            except Exception:  # the check's own fault: every verdict not yet given fails
                with open(os.path.join(self.logs, f"step-{step.name}.error"), "w") as f:
                    f.write(traceback.format_exc())
                self.failed = True
                self.say(f"- the check's step {step.name} raised "
                         f"{traceback.format_exc().strip().splitlines()[-1]} "
                         f"(logs/step-{step.name}.error)")
                for v in step.verdicts:
                    if v not in ctx.given:
                        ctx.given.add(v)
                        self.record(v, FAIL, f"the check's step {step.name} failed: "
                                    f"{traceback.format_exc().strip().splitlines()[-1]}")
            for v in step.verdicts:
                if v not in ctx.given:
                    self.record(v, FAIL, "the step gave no verdict")
            entry["ran"] = True
            entry["seconds"] = round(time.monotonic() - began, 1)
            if self.simulate:
                self.spent_simulated += step.estimate
        self.write_meta()
        self.pack_logs()


class StepContext:
    """What a step's code uses: commands under the step's deadline, verdicts, report blocks."""

    def __init__(self, check, step, timeout):
        self.check, self.step, self.timeout = check, step, timeout
        self.began = time.monotonic()
        self.given = set()

    def left(self):
        """Real seconds left for this step's commands."""
        return self.timeout - (time.monotonic() - self.began)

    def log(self, name):
        return os.path.join(self.check.logs, name if "." in name else name + ".log")

    def run(self, argv, log, timeout=None, env=None, cwd=None, stdin=None):
        """Runs argv with its output in logs/<log>.log under min(timeout, the step's time left);
        returns its exit status, 124 when it was stopped at its limit (the whole process group
        is killed: a launcher's children too)."""
        limit = self.left() if timeout is None else min(timeout, self.left())
        path = self.log(log)
        with open(path, "a") as out:
            out.write(f"$ {' '.join(shlex.quote(str(a)) for a in argv)}\n")
            out.flush()
            if limit < 1:
                out.write("not run: the step's time is spent\n")
                return 124
            full_env = dict(os.environ)
            full_env.update(env or {})
            for k, v in list(full_env.items()):
                if v is None:
                    del full_env[k]
            try:
                p = subprocess.Popen([str(a) for a in argv], stdout=out, stderr=subprocess.STDOUT,
                                     env=full_env, cwd=cwd, stdin=stdin or subprocess.DEVNULL,
                                     start_new_session=True)
            except OSError as e:
                out.write(f"cannot start: {e}\n")
                return 127
            try:
                return p.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                out.write(f"\nstopped at its time limit ({limit:.0f} s)\n")
                kill_group(p)
                return 124

    def text(self, log):
        try:
            with open(self.log(log), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def result(self, name, status, note=""):
        if name not in self.step.verdicts:
            raise ValueError(f"step {self.step.name} gives no verdict '{name}'")
        if name in self.given:
            raise ValueError(f"verdict '{name}' given twice")
        self.given.add(name)
        self.check.record(name, status, note)

    def block(self, text):
        self.check.block(text)

    def say(self, text=""):
        self.check.say(text)


def kill_group(p):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def worst(statuses):
    """The verdict of several runs: FAIL over NOT-RUN over NO-DEVICE over PASS."""
    for s in (FAIL, NOT_RUN, NO_DEVICE):
        if s in statuses:
            return s
    return PASS


def no_device(text):
    return any(m in text for m in NO_DEVICE_MARKERS)


def tool_status(text, rc):
    """PASS for exit 0; NO-DEVICE when the tool said there was no device; else FAIL."""
    if rc == 0:
        return PASS
    return NO_DEVICE if no_device(text) else FAIL


def gtest_status(text, rc):
    """PASS, FAIL or NO-DEVICE from a GoogleTest run's output: NO-DEVICE when nothing passed and
    the skips say there was no device; FAIL when it failed, stopped, or never reached its end."""
    if rc in (124, 137) or "[  FAILED  ]" in text or rc != 0:
        return FAIL
    passed = skipped = 0
    ended = False
    for line in text.splitlines():
        if line.startswith("[  PASSED  ] "):
            passed = int(line.split()[3])
        elif line.startswith("[  SKIPPED ] ") and line.split()[3].isdigit():
            skipped = int(line.split()[3])
        elif line.startswith("[==========] ") and " ran." in line:
            ended = True
    if passed == 0 and skipped > 0 and no_device(text):
        return NO_DEVICE
    if not ended:
        return FAIL
    if passed == 0:
        return FAIL  # a filter that matched nothing proves nothing
    return PASS


def gtest_summary(text, lines=12):
    keep = [l for l in text.splitlines()
            if l.startswith(("[==========]", "[  PASSED  ]", "[  FAILED  ]"))
            or (l.startswith("[  SKIPPED ] ") and l.split()[3].isdigit())]
    return "\n".join(keep[:lines])


def gtest_counts(text):
    passed = skipped = 0
    for line in text.splitlines():
        if line.startswith("[  PASSED  ] "):
            passed = int(line.split()[3])
        elif line.startswith("[  SKIPPED ] ") and line.split()[3].isdigit():
            skipped = int(line.split()[3])
    return passed, skipped
