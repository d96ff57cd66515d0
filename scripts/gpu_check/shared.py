"""What both calls of the GPU check share: the first step (device, driver, libraries, the CUDA
module found as a user's run finds it), the table of opt-in CUDA paths read from the binaries
themselves (`nn-train --devices`), and the tool runs on the check's data."""

import os
import re

import compare
import data
import environment
from runner import FAIL, NO_DEVICE, NOT_RUN, PASS, Step, tool_status


class Paths:
    """The CUDA path table as `nn-train --devices` prints it ("cuda path: NAME VARIABLE on=X
    off=Y default=off passed=never"): the binaries' own, so the check never drifts from them."""

    def __init__(self, text):
        self.rows = []
        for m in re.finditer(r"^cuda path: (\S+) (\S+) on=(\S+) off=(\S+) default=(on|off) "
                             r"passed=(\S+)", text, re.M):
            self.rows.append(dict(name=m.group(1), variable=m.group(2), on=m.group(3),
                                  off=m.group(4), default=m.group(5), passed=m.group(6)))

    def opt_in(self):
        """Paths off by default."""
        return [r for r in self.rows if r["default"] == "off"]

    def env_on(self, name):
        r = next(r for r in self.rows if r["name"] == name)
        return {r["variable"]: r["on"]}

    @staticmethod
    def switched(row):
        """The environment that moves one path away from its default (an opt-in path on, a
        default path off): the run the check compares with the default run."""
        return {row["variable"]: row["off"] if row["default"] == "on" else row["on"]}

    def all_switched(self):
        """Every path away from its default at once: the opt-in ones on, the default ones off."""
        return {k: v for r in self.rows for k, v in self.switched(r).items()}

    def all_on(self):
        """Every path on, the opt-in ones included."""
        return {r["variable"]: r["on"] for r in self.rows}

    def all_off(self):
        """Every path off: the CUDA paths of the first GPU runs (2026-11-26)."""
        return {r["variable"]: r["off"] for r in self.rows}


class Session:
    """State shared by a call's steps: the layout, the device, the path table, the data."""

    def __init__(self, check, layout, device):
        self.check, self.layout, self.device = check, layout, device
        self.paths = Paths("")
        self.data = os.path.join(check.work, "data")
        self.data_ok = None

    def tool(self, name):
        return self.layout.tool(name)

    def recommender_data(self, ctx):
        """The check's recommender data, made by the first step that needs it."""
        if self.data_ok is None:
            self.data_ok = data.make_recommender(
                self.data, lambda argv, log: ctx.run([self.tool(argv[0])] + argv[1:], log,
                                                     cwd=self.data, timeout=60))
        return self.data_ok

    def train(self, ctx, name, backend, env=None, extra=(), config="net.json", epochs=5,
              optimizer="Adam", alpha="0.002", timeout=60):
        """nn-train on the check's data, the same seed each time: net-NAME.nc,
        net-NAME.epochs.jsonl, logs/train-NAME.log. Returns the exit status."""
        return ctx.run([self.tool("nn-train"), "-c", config, "-i", "input.nc", "-o", "output.nc",
                        "-n", f"net-{name}.nc", "-b", "128", "-e", str(epochs), "--optimizer",
                        optimizer, "--alpha", alpha, "--seed", "7", "--checkpoint-interval", "0",
                        "--backend", backend, "--device", str(self.device)] + list(extra),
                       f"train-{name}", env=env, cwd=self.data, timeout=timeout)

    def epochs_file(self, name):
        return os.path.join(self.data, f"net-{name}.epochs.jsonl")

    def against(self, ctx, verdict, rc, name, reference, tol1, toln, note, must_say=None):
        """Verdict `verdict` for the run `name` (exit status rc) against the run `reference`
        (judge_run)."""
        judge_run(ctx, verdict, rc, f"train-{name}", self.data, name, reference, tol1, toln,
                  note, must_say)


def judge_run(ctx, verdict, rc, log, folder, name, reference, tol1, toln, note, must_say=None,
              missing_reference=NOT_RUN):
    """Verdict `verdict` for the training run `name` (exit status rc, its log logs/<log>.log,
    folder/net-<name>.epochs.jsonl) against the run `reference` in the same folder: per-epoch
    losses within tol1 (epoch 1, relative) and toln (later, of epoch 1's loss); `must_say`: a
    line the run's log must hold (the path really ran); `missing_reference`: the status when the
    reference wrote no epochs."""
    text = ctx.text(log)
    if rc != 0:
        ctx.block("\n".join(text.splitlines()[-4:]))
        return ctx.result(verdict, tool_status(text, rc), f"nn-train exit {rc}")
    if must_say and must_say not in text:
        return ctx.result(verdict, FAIL, f"the log does not say \"{must_say}\"")
    ref_file = os.path.join(folder, f"net-{reference}.epochs.jsonl")
    if not os.path.exists(ref_file):
        return ctx.result(verdict, missing_reference, f"no {reference} run to compare with")
    ok, table = compare.compare_epoch_files(ref_file,
                                            os.path.join(folder, f"net-{name}.epochs.jsonl"),
                                            tol1, toln, (reference, name))
    ctx.block(table)
    ctx.result(verdict, PASS if ok else FAIL, note)


def preflight_step(session, card_file_writer):
    """The call's first seconds: nvidia-smi, the driver against what the bundle needs (the call
    stops here when it cannot run it), every binary's libraries, the module forced and the module
    found the way a user's run finds it (no NN_CUDA_MODULE), and the path table."""

    def run(ctx):
        s, layout = session, session.layout
        ctx.say("## Device, driver, libraries and the CUDA module")
        smi = environment.smi_summary()
        print(smi, flush=True)
        ctx.block(smi)
        card_file_writer()
        driver = environment.driver_version()
        built = re.search(r"release ([0-9.]+)", layout.bundle_text)
        needs = ".".join(map(str, environment.MIN_DRIVER))
        if driver is None:
            ctx.result("device", NO_DEVICE, "no NVIDIA driver on this machine")
        elif driver < environment.MIN_DRIVER:
            why = (f"driver {'.'.join(map(str, driver))} cannot run this bundle (CUDA "
                   f"{built.group(1) if built else '13'} needs driver {needs} or newer)")
            ctx.result("device", FAIL, why)
            s.check.stopped = "the call stopped: " + why
        else:
            ctx.result("device", PASS, f"driver {'.'.join(map(str, driver))} (needs {needs}+), "
                       f"bundle built with CUDA {built.group(1) if built else '?'}")
        # Libraries: every binary and the module, by ldd.
        binaries = [os.path.join(layout.bin, f) for f in sorted(os.listdir(layout.bin))]
        missing = environment.missing_libraries(binaries + [layout.module])
        if not os.path.exists(layout.module):
            ctx.result("libraries", FAIL, f"{layout.module}: not built")
        elif missing:
            ctx.block("\n".join(f"{b}: {' '.join(m)}" for b, m in missing.items()))
            ctx.result("libraries", FAIL, "missing: " + "; ".join(
                f"{b}: {' '.join(m)}" for b, m in missing.items()))
        else:
            ctx.result("libraries", PASS, "every binary and libnn_cuda.so load")
        # The module opened by its path (it must load and match this build), then found the way a
        # user's run finds it: beside the program (bin/../lib), no variable set.
        rc = ctx.run([s.tool("nn-train"), "--devices"], "devices-forced",
                     env={"NN_CUDA_MODULE": layout.module}, timeout=60)
        forced = ctx.text("devices-forced")
        s.paths = Paths(forced)
        ctx.block(forced)
        if rc == 0 and f"cuda module: {os.path.realpath(layout.module)}" in forced:
            ctx.result("module_loads", PASS if s.paths.rows else FAIL,
                       f"{len(s.paths.rows)} paths in its table, "
                       f"{len(s.paths.opt_in())} opt-in")
        else:
            ctx.result("module_loads", FAIL, "nn-train --devices with NN_CUDA_MODULE: "
                       + (forced.strip().splitlines() or ["no output"])[-1])
        rc = ctx.run([s.tool("nn-train"), "--devices"], "devices", timeout=60,
                     env={"NN_CUDA_MODULE": None})
        found = ctx.text("devices")
        ctx.block(found)
        beside = f"cuda module: {os.path.realpath(layout.module)}" in found
        if not beside:
            ctx.result("module_found", FAIL, "without NN_CUDA_MODULE the bundle's module was not "
                       "the one found: " + (found.strip().splitlines() or ["no output"])[-1])
        elif not environment.has_driver():
            ctx.result("module_found", NO_DEVICE, "found beside the program (bin/../lib) without "
                       "NN_CUDA_MODULE; no NVIDIA driver to list a device")
        elif rc == 0 and re.search(r"^cuda:\d+ ", found, re.M):
            ctx.result("module_found", PASS, "bin/../lib/libnn_cuda.so found without "
                       "NN_CUDA_MODULE; a device listed")
        else:
            ctx.result("module_found", FAIL, (found.strip().splitlines() or ["no output"])[-1])

    return Step("preflight", 10, 60, run, ["device", "libraries", "module_loads", "module_found"],
                minimum=5)
