"""Call 2 of the GPU check: speed. The MovieLens-20M-shaped autoencoder (nn-train's training step,
nn-bench-autoencoder) in FP32, TF32 and BF16 next to PyTorch on the same GPU, then TF32 with
each opt-in path on against the plain TF32 run (the A/B of every path, with a verdict: it ran,
its losses equal the plain run's, and it did what it says), the --profile tables, BF16 on the
host's CPU (where it has AVX512-BF16 or AMX), torch.compile, the 1,000,000-item sampled catalog
and the Fashion-MNIST CNN. The steps come in the order of what matters most, so that a call
given less than its full budget (what the window has left) still brings back the comparison
with PyTorch.

Every nn-bench-autoencoder JSON line carries its per-epoch losses and the opt-in paths it ran
with ("opt_in"); every line of bench.jsonl gets the card, the commit and the date."""

import datetime
import glob
import json
import os
import re
import sys

import compare
import environment
from runner import FAIL, NO_DEVICE, NOT_RUN, PASS, Step, tool_status, worst

SHAPES = ("128", "1024x3")


class Bench:
    def __init__(self, session, batches, epochs):
        self.s, self.batches, self.epochs = session, batches, epochs
        self.rows = {}  # (shape, label) -> the nn JSON record

    @property
    def jsonl(self):
        return os.path.join(self.s.check.out, "bench.jsonl")

    def tag(self, record):
        record.update(card=self.s.check.meta.get("card", "?"),
                      commit=self.s.check.meta.get("commit", "?"),
                      date=datetime.datetime.utcnow().strftime("%Y-%m-%d"))
        with open(self.jsonl, "a") as f:
            f.write(json.dumps(record) + "\n")

    def records(self, text):
        out = []
        for line in text.splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
        return out

    def run_nn(self, ctx, shape, label, precision="fp32", env=None, extra=(), timeout=60):
        """One nn-bench-autoencoder run; returns (exit status, its record or None)."""
        log = f"bench-{shape}-{label}"
        epochs = 1 if "--profile" in extra else self.epochs
        rc = ctx.run([self.s.tool("nn-bench-autoencoder"), "--hidden", shape, "--batches",
                      str(self.batches), "--epochs", str(epochs), "--optimizer", "RMSProp",
                      "--precision", precision, "--backend", "cuda", "--device",
                      str(self.s.device)] + list(extra), log, env=env, timeout=timeout)
        recs = self.records(ctx.text(log))
        rec = recs[-1] if rc == 0 and recs else None
        if rec:
            self.rows[(shape, label)] = rec
            if not extra:  # --profile runs are not timings
                self.tag(dict(rec))
        return rc, rec


def bench_step(bench):
    """FP32, TF32 and BF16 for both shapes: each must run, and TF32's and BF16's losses stay near
    FP32's (TF32 within 1e-2 relative, BF16 within 3e-2)."""

    def run(ctx):
        open(bench.jsonl, "a").close()  # bench.jsonl is always there, empty or not
        notes, status = [], PASS
        for shape in SHAPES:
            for math in ("fp32", "tf32", "bf16"):
                rc, rec = bench.run_nn(ctx, shape, math, "bf16" if math == "bf16" else "fp32",
                                       env={"NN_CUDA_TF32": "1" if math == "tf32" else "0"})
                if rec is None:
                    st = tool_status(ctx.text(f"bench-{shape}-{math}"), rc or 1)
                    status = worst([st, status])
                    notes.append(f"{shape} {math}: exit {rc}")
                    continue
                notes.append(f"{shape} {math} {rec['ms_per_batch']:.3f} ms")
                base = bench.rows.get((shape, "fp32"))
                if math != "fp32" and base:
                    tol = 1e-2 if math == "tf32" else 3e-2
                    ok, table = compare.compare_losses(base["losses"], rec["losses"], tol, tol,
                                                       ("fp32", math))
                    ctx.block(f"{shape} {math} against fp32:\n{table}")
                    if not ok:
                        status = FAIL
                        notes.append(f"{shape} {math}: losses off")
        ctx.result("bench_nn", status, "; ".join(notes))
    return Step("bench", 40, 120, run, ["bench_nn"])


def torch_step(bench, compiled):
    """PyTorch on the same GPU: eager (FP32, TF32, BF16 autocast; sparse and dense input), or
    torch.compile of each with sparse input."""
    verdict = "bench_torch_compile" if compiled else "bench_torch_eager"

    def run(ctx):
        s = bench.s
        py = environment.python_with("torch")
        if not py:
            return ctx.result(verdict, NOT_RUN, "no PyTorch here")
        peer = os.path.join(s.layout.root, "scripts", "bench_peer_torch.py")
        made, errors = 0, []
        for shape in SHAPES:
            log = f"torch-{'compile-' if compiled else ''}{shape}"
            variants = ("compile-fp32,compile-tf32,compile-bf16" if compiled
                        else "eager-fp32,eager-tf32,eager-bf16")
            rc = ctx.run([py, peer, "--hidden", shape, "--batches", str(bench.batches),
                          "--optimizer", "rmsprop", "--device", f"cuda:{s.device}", "--input",
                          "sparse" if compiled else "sparse,dense", "--variants", variants], log,
                         timeout=ctx.left() / (2 if shape == SHAPES[0] else 1))
            for rec in bench.records(ctx.text(log)):
                if "error" in rec:
                    errors.append(f"{shape} {rec.get('variant', '?')}: {rec['error'][:80]}")
                else:
                    bench.tag(rec)
                    made += 1
            if rc != 0:
                errors.append(f"{shape}: exit {rc}")
        status = PASS if made and not errors else (
            NO_DEVICE if not environment.has_driver() else FAIL)
        ctx.result(verdict, status, f"{made} rows" + ("; " + "; ".join(errors)[:300]
                                                       if errors else ""))
    return Step("torch_compile" if compiled else "torch_eager", 100 if compiled else 50,
                240 if compiled else 150, run, [verdict])


# What the benchmark row of a run with the path on must show besides its losses.
def path_shows(name, rec):
    if name == "graphs":
        return rec.get("cuda_graphs") and rec.get("graph_steps", 0) > 0, "no step ran as a graph"
    if name == "padded-rows":
        return rec.get("padded_rows") is True, "the output layer was not padded"
    if name == "row-sparse-updates":
        return rec.get("row_sparse") is True, "the input matrix was not updated row by row"
    return True, ""


def paths_bench_step(bench):
    """TF32 with each path moved away from its default by itself (an opt-in path on, a default
    path off), then every path on and every path off, against the plain TF32 run of the same
    shape: the run must end, its losses equal the plain run's (epoch 1 within 1e-4 relative,
    later within 1e-3 of epoch 1's loss: only summation orders differ), and the run with the
    path on must show that it ran. One verdict per path, both shapes; the speed is the plain
    run's time over the variant's (above 1: the variant is faster)."""

    def verdicts_of(session):
        return [f"bench_{r['name'].replace('-', '_')}" for r in session.paths.rows] + \
            ["bench_all_on", "bench_all_off"]

    def run(ctx):
        s = bench.s
        rows = [r for r in s.paths.rows if r["name"] != "peer-backends"]
        if any(r["name"] == "peer-backends" for r in s.paths.rows):
            ctx.result("bench_peer_backends", NOT_RUN, "serving only (call 1's serve step)")
        default_on = {r["name"] for r in rows if r["default"] == "on"}
        cases = [(r["name"], s.paths.switched(r)) for r in rows] + \
            [("all-on", s.paths.all_on()), ("all-off", s.paths.all_off())]
        results = {name: [] for name, _ in cases}
        for shape in SHAPES:
            base = bench.rows.get((shape, "tf32"))
            for name, env in cases:
                if ctx.left() < 8:
                    results[name].append((NOT_RUN, f"{shape}: no time left"))
                    continue
                rc, rec = bench.run_nn(ctx, shape, "tf32-" + name, env=dict(NN_CUDA_TF32="1",
                                                                            **env), timeout=45)
                if rec is None:
                    results[name].append((tool_status(ctx.text(f"bench-{shape}-tf32-{name}"),
                                                      rc or 1), f"{shape}: exit {rc}"))
                    continue
                if not base:
                    results[name].append((NOT_RUN, f"{shape}: no plain TF32 run"))
                    continue
                # The run with the path on: the plain one for a default path switched off.
                shows, why = (True, "") if name in ("all-on", "all-off") else path_shows(
                    name, base if name in default_on else rec)
                if not shows:
                    results[name].append((FAIL, f"{shape}: {why}"))
                    continue
                ok, table = compare.compare_losses(base["losses"], rec["losses"], 1e-4, 1e-3,
                                                   ("tf32", name))
                sign = "-" if name in default_on else "+"
                ctx.block(f"{shape} tf32 {sign}{name}:\n{table}")
                speed = base["ms_per_batch"] / rec["ms_per_batch"]
                results[name].append((PASS if ok else FAIL,
                                      f"{shape}: {rec['ms_per_batch']:.3f} ms, {speed:.2f}x the "
                                      f"plain run" + ("" if ok else ", losses off")))
        for name, parts in results.items():
            ctx.result(f"bench_{name.replace('-', '_')}", worst([p[0] for p in parts]),
                       "; ".join(p[1] for p in parts))
    step = Step("bench_paths", 80, 180, run, [])
    # The verdicts follow the binaries' path table, known after the first step.
    step.verdicts_of = lambda: verdicts_of(bench.s)
    return step


def profile_step(bench):
    """nn-bench-autoencoder --profile (nn-train --profile's table with floors), FP32, both
    shapes: it must end and print its table."""

    def run(ctx):
        notes, status = [], PASS
        for shape in SHAPES:
            rc, rec = bench.run_nn(ctx, shape, "profile", extra=["--profile"])
            text = ctx.text(f"bench-{shape}-profile")
            table = [l for l in text.splitlines() if l.startswith("profile")]
            if rc != 0:
                st = tool_status(text, rc)
                status = worst([st, status])
                notes.append(f"{shape}: exit {rc}")
            elif len(table) < 5:
                status = FAIL
                notes.append(f"{shape}: no profile table")
            else:
                ctx.block("\n".join(table[:40]))
                notes.append(f"{shape}: {len(table)} lines")
        ctx.result("bench_profile", status, "; ".join(notes))
    return Step("bench_profile", 10, 60, run, ["bench_profile"])


CPU_BF16_AIM = 1.6  # BF16's examples per second over FP32's on 3x1024 that the CPU should reach


def cpu_bf16_step(bench):
    """BF16 on the host's CPU, which the development VMs can measure only now and then:
    where the GPU machine's CPU has AVX512-BF16 or AMX, nn-bench-autoencoder on the CPU backend
    in FP32 and in BF16 for both shapes (SGD, as docs/performance.md's CPU tables; BF16 forced,
    as the benchmark sets the precision itself), BF16's losses within 3e-2 of FP32's, and BF16's
    speed over FP32's against the aim; then nn-train --precision bf16 on the check's data, whose
    precision stage times the network's widest product in both and keeps BF16 or falls back to
    FP32 with a warning: the line it printed is reported. The verdict is about correctness (the
    runs end, the losses agree, the stage printed its rates); the speed is in the note."""

    def run(ctx):
        s = bench.s
        cpu = environment.host_cpu()
        s.check.meta["host_cpu"] = cpu
        ctx.block(f"host CPU: {cpu['model']}, {cpu['cores']} logical cores; BF16 features: "
                  f"{' '.join(cpu['bf16_flags']) or 'none'}")
        if not cpu["bf16"]:
            return ctx.result("cpu_bf16", NOT_RUN,
                              f"{cpu['model']}: neither AVX512-BF16 nor AMX-BF16")
        notes, status = [], PASS
        for shape in ("1024x3", "128"):
            recs = {}
            for precision in ("fp32", "bf16"):
                log = f"cpu-{shape}-{precision}"
                rc = ctx.run([s.tool("nn-bench-autoencoder"), "--hidden", shape, "--batches",
                              "20", "--epochs", "2", "--optimizer", "SGD", "--precision",
                              precision, "--backend", "cpu"], log, timeout=min(45, ctx.left()))
                found = bench.records(ctx.text(log))
                if rc != 0 or not found:
                    status = worst([status, tool_status(ctx.text(log), rc or 1)])
                    notes.append(f"{shape} {precision}: exit {rc}")
                    continue
                rec = found[-1]
                rec["shape"] = f"hostcpu-{shape}"  # a row of its own, apart from the GPU rows
                bench.tag(dict(rec))
                recs[precision] = rec
            if len(recs) < 2:
                continue
            ok, table = compare.compare_losses(recs["fp32"]["losses"], recs["bf16"]["losses"],
                                               3e-2, 3e-2, ("fp32", "bf16"))
            ctx.block(f"host CPU {shape} bf16 against fp32:\n{table}")
            speed = recs["fp32"]["ms_per_batch"] / recs["bf16"]["ms_per_batch"]
            aim = f" (aim {CPU_BF16_AIM}x)" if shape == "1024x3" else ""
            notes.append(f"{shape}: FP32 {recs['fp32']['ms_per_batch']:.1f} ms, BF16 "
                         f"{recs['bf16']['ms_per_batch']:.1f} ms, {speed:.2f}x{aim}" +
                         ("" if ok else ", losses off"))
            if not ok:
                status = FAIL
        if ctx.left() > 15 and s.recommender_data(ctx):
            rc = s.train(ctx, "cpu-bf16", "cpu", extra=["--precision", "bf16"], epochs=1,
                         timeout=min(60, ctx.left()))
            said = [l for l in ctx.text("train-cpu-bf16").splitlines()
                    if "BF16" in l and "GFLOP/s" in l]
            if rc != 0 or not said:
                status = worst([status, tool_status(ctx.text("train-cpu-bf16"), rc or 1)
                                if rc != 0 else FAIL])
                notes.append(f"nn-train --precision bf16: exit {rc}" +
                             ("" if said else ", no line with the measured rates"))
            else:
                ctx.block(said[0])
                notes.append("stage: " + ("fell back to FP32" if said[0].startswith("warning")
                                          else "kept BF16") + " (" +
                             said[0].split("(", 1)[-1].split(" on the network")[0] + ")")
        ctx.result("cpu_bf16", status, "; ".join(notes))
    return Step("cpu_bf16", 30, 150, run, ["cpu_bf16"], minimum=20)


def sampled_step(session):
    """A 1,000,000-item planted catalog on CUDA: sampled output (2,048 Popularity negatives)
    against the full layer (scripts/bench_sampled.sh): examples per second and recall@10."""

    def run(ctx):
        s = session
        script = os.path.join(s.layout.root, "scripts", "bench_sampled.sh")
        if not os.path.exists(script):
            return ctx.result("sampled_1m_cuda", NOT_RUN, "no bench_sampled.sh")
        rc = ctx.run(["bash", script, "synthetic", "1000000", "100", "20000", "2", "2048", "2",
                      "Popularity"], "sampled",
                     env={"NN_TOOLS": s.layout.bin, "NN_BENCH_BACKEND": "cuda",
                          "NN_BENCH_DIR": os.path.join(s.check.work, "sampled")})
        if rc != 0:  # the tools' own messages are in the benchmark's folder
            for log in sorted(glob.glob(os.path.join(s.check.work, "sampled", "*", "*.log"))):
                with open(log, errors="replace") as f, open(ctx.log("sampled"), "a") as out:
                    out.write(f"\n== {os.path.basename(log)}\n" + f.read()[-3000:])
        text = ctx.text("sampled")
        rates = dict(re.findall(r"^(full|sampled) +best epoch.* (\d+) examples/s", text, re.M))
        ctx.block("\n".join(l for l in text.splitlines()
                            if re.match(r"^(==|   |variant|full|sampled)", l))[:2000])
        if rc == 0 and "full" in rates and "sampled" in rates and int(rates["full"]) > 0:
            ctx.result("sampled_1m_cuda", PASS, f"sampled {rates['sampled']} examples/s, full "
                       f"{rates['full']}: {int(rates['sampled']) / int(rates['full']):.1f}x "
                       "(aim 50x); recall in the table")
        else:
            ctx.result("sampled_1m_cuda", NOT_RUN if rc == 124 else tool_status(text, rc or 1),
                       f"bench_sampled.sh exit {rc}")
    return Step("sampled_1m", 120, 300, run, ["sampled_1m_cuda"])


def cnn_bench_step(bench):
    """The Fashion-MNIST CNN (scripts/bench_cnn.sh's network) on 12,000 generated images:
    nn-bench-cnn on CUDA next to bench_cnn.py on the same GPU."""

    def run(ctx):
        s = bench.s
        if not s.layout.has("nn-bench-cnn"):
            return ctx.result("bench_cnn", NOT_RUN, "no nn-bench-cnn")
        folder = os.path.join(s.check.work, "fashion")
        os.makedirs(folder, exist_ok=True)
        ctx.run([sys.executable,
                 os.path.join(s.layout.root, "scripts", "gen_fashion_idx.py"), folder, "12000"],
                "cnn-bench-data", timeout=60)
        rc = ctx.run([s.tool("nn-bench-cnn"), "--data", folder, "--epochs", "2", "--backend",
                      "cuda", "--device", str(s.device)], "cnn-bench-nn", timeout=60)
        lines = []
        for rec in bench.records(ctx.text("cnn-bench-nn")):
            rec["shape"] = "fashion-cnn"
            bench.tag(rec)
            lines.append(f"nn: {rec['seconds_per_epoch'][-1]:.3f} s for epoch 2, test accuracy "
                         f"{rec['test_accuracy']:.4f}")
        py = environment.python_with("torch")
        if py:
            ctx.run([py, os.path.join(s.layout.root, "scripts", "bench_cnn.py"), "--data", folder,
                     "--epochs", "2", "--device", f"cuda:{s.device}"], "cnn-bench-torch")
            for rec in bench.records(ctx.text("cnn-bench-torch")):
                rec["shape"] = "fashion-cnn"
                bench.tag(rec)
                lines.append(f"torch: {rec['seconds_per_epoch'][-1]:.3f} s for epoch 2, test "
                             f"accuracy {rec['test_accuracy']:.4f}")
        ctx.block("\n".join(lines))
        ctx.result("bench_cnn", tool_status(ctx.text("cnn-bench-nn"), rc),
                   "; ".join(lines) or f"nn-bench-cnn exit {rc}")
    return Step("bench_cnn", 30, 120, run, ["bench_cnn"])


def steps(session, batches, epochs):
    bench = Bench(session, batches, epochs)
    session.bench = bench
    return [bench_step(bench), torch_step(bench, False), paths_bench_step(bench),
            profile_step(bench), cpu_bf16_step(bench), torch_step(bench, True),
            sampled_step(session),
            cnn_bench_step(bench)]
