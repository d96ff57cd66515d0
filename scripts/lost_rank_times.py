#!/usr/bin/python3
"""Lost ranks under mpirun, measured (docs/reliability.md, "Lost ranks").

Runs --trials 2-rank trainings of the tests' 40-user set, each long enough never to end by
itself, and in each, at a random moment after its first checkpoint, loses one rank (0 or 1, at
random) in one of three ways, in turn:

  kill9    kill -9 of the rank's process;
  sigstop  SIGSTOP to it (every thread stops: its heartbeats too);
  linkcut  the link between the two "hosts" cut (two network namespaces joined by a veth pair,
           as scripts/mpi-netns-check.sh sets up; the link is set down in the lost rank's
           namespace). Needs root and `ip netns`; skipped with a note where refused.

For each trial it records the seconds from the failure until every process of the job has
ended (the job's launcher and both ranks), whether the output names the lost rank, and whether
it hung (still running --limit seconds after the failure: then killed). Then every checkpoint
left must load (nn-predict), and `nn-train --resume` must continue from the newest one (run for
10 more epochs). Prints one line per trial and a summary; exit status 1 if any trial hung, did
not name the rank, left a damaged checkpoint or did not resume.

Usage: scripts/lost_rank_times.py [--trials 20] [--tools build/src/tools] [--seed 1]
                                  [--rank-timeout S] [--limit 300] [--modes kill9,sigstop,linkcut]
--rank-timeout sets NN_MPI_RANK_TIMEOUT (default: the tools' own, 60 s).
"""

import argparse
import glob
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
CONFIG = """{ "Name": "tiny", "ErrorFunction": "CrossEntropy", "Denoising": { "p": 0.2 },
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid", "pDropout": 0.1 },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "Sigmoid" } ] }"""
TRAIN = """{ "Network": "config.json", "Command": "Train", "RandomSeed": 7,
  "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 1000000, "MiniBatch": 7, "Alpha": 0.01, "Optimizer": "Adam",
    "mu": 0.9, "Lambda": 0.001, "CheckpointName": "ck", "CheckpointInterval": 50,
    "Results": "net.nc" } }"""


def parse_args():
    p = argparse.ArgumentParser(prog="lost_rank_times.py", description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--tools", default=os.path.join(ROOT, "build", "src", "tools"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rank-timeout", type=float, default=None)
    p.add_argument("--limit", type=float, default=300.0)
    p.add_argument("--modes", default="kill9,sigstop,linkcut")
    return p.parse_args()


def make_data(tools, work):
    rng = random.Random(5)
    with open(os.path.join(work, "ratings.txt"), "w") as f:
        for u in range(40):
            t = u % 3
            items = [f"m{t * 8 + j}" for j in range(8) if rng.random() < 0.7] or [f"m{t * 8}"]
            f.write(f"u{u}\t" + ":".join(items) + "\n")
    for name, extra in (("input", ["-c"]), ("output", [])):
        subprocess.run([f"{tools}/nn-generate", "-d", name, "-i", "ratings.txt", "-o",
                        f"{name}.nc", "-f", "features.idx", "-s", "samples.idx"] + extra,
                       cwd=work, check=True, stderr=subprocess.DEVNULL)
    with open(os.path.join(work, "config.json"), "w") as f:
        f.write(CONFIG)
    with open(os.path.join(work, "train.cdl"), "w") as f:
        f.write(TRAIN)


class Namespaces:
    """Two network namespaces joined by a veth pair; mpirun runs in the first and starts the
    second rank in the second through an rsh agent (scripts/mpi-netns-check.sh)."""

    def __init__(self, work):
        tag = f"lr{os.getpid()}"
        self.ns = [tag + "a", tag + "b"]
        self.dev = ["v" + tag, "w" + tag]
        self.work = work
        self.ok = False
        try:
            for ns in self.ns:
                subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
            run = lambda *a: subprocess.run(["ip"] + list(a), check=True, capture_output=True)
            run("link", "add", self.dev[0], "type", "veth", "peer", "name", self.dev[1])
            for i in (0, 1):
                run("link", "set", self.dev[i], "netns", self.ns[i])
                run("-n", self.ns[i], "addr", "add", f"10.78.0.{i + 1}/24", "dev", self.dev[i])
                run("-n", self.ns[i], "link", "set", "lo", "up")
            self.ok = True
        except (subprocess.CalledProcessError, FileNotFoundError) as e:
            self.why = getattr(e, "stderr", b"") or str(e)
            self.close()
            return
        agent = os.path.join(work, "agent.sh")
        with open(agent, "w") as f:
            f.write("#!/bin/sh\nhost=$1\nshift\ncase $host in\n"
                    f"  10.78.0.1) ns={self.ns[0]} ;;\n  *) ns={self.ns[1]} ;;\nesac\n"
                    'exec ip netns exec "$ns" sh -c "$*"\n')
        os.chmod(agent, 0o755)
        with open(os.path.join(work, "hosts"), "w") as f:
            f.write("10.78.0.1 slots=1\n10.78.0.2 slots=1\n")

    def link(self, up):
        for i in (0, 1):
            subprocess.run(["ip", "-n", self.ns[i], "link", "set", self.dev[i],
                            "up" if up else "down"], check=True)

    def cut(self, rank):
        subprocess.run(["ip", "-n", self.ns[rank], "link", "set", self.dev[rank], "down"],
                       check=True)

    def command(self, tools):
        return (["ip", "netns", "exec", self.ns[0], "mpirun", "-np", "2", "--hostfile",
                 os.path.join(self.work, "hosts"), "--mca", "plm_rsh_agent",
                 os.path.join(self.work, "agent.sh"), "--mca", "btl", "tcp,self", "--mca",
                 "btl_tcp_if_include", "10.78.0.0/24", "--mca", "oob_tcp_if_include",
                 "10.78.0.0/24", "-x", "PATH", "-x", "NN_MPI_RANK_TIMEOUT"] +
                [f"{tools}/nn-train", "train.cdl", "-q"])

    def close(self):
        for ns in self.ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def ranks_running(ranks):
    return any(os.path.exists(f"/proc/{p}") and open(f"/proc/{p}/stat").read().split()[2] != "Z"
               for p in ranks.values())


def job_alive(job, ranks):
    return job.poll() is None or ranks_running(ranks)


def newest_checkpoint(work):
    best = (-1, "")
    for path in glob.glob(os.path.join(work, "ck*.nc")):
        m = re.match(r"ck(\d+)(?:_(\d+))?\.nc$", os.path.basename(path))
        if m:
            key = int(m.group(1)) * 10**6 + int(m.group(2) or 0)
            best = max(best, (key, path))
    return best[1]


def trial(args, tools, base, mode, rank, netns, rng):
    work = tempfile.mkdtemp(prefix="lost-rank-")
    for f in ("input.nc", "output.nc", "config.json", "train.cdl"):
        shutil.copy(os.path.join(base, f), work)
    env = dict(ENV)
    if args.rank_timeout is not None:
        env["NN_MPI_RANK_TIMEOUT"] = str(args.rank_timeout)
    else:
        env["NN_MPI_RANK_TIMEOUT"] = env.get("NN_MPI_RANK_TIMEOUT", "60")
    command = (netns.command(tools) if mode == "linkcut" else
               ["mpirun", "-np", "2", "--oversubscribe", f"{tools}/nn-train", "train.cdl", "-q"])
    if mode == "linkcut":
        netns.link(True)
    err = open(os.path.join(work, "job.err"), "w")
    job = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=err,
                           start_new_session=True)
    # The job's ranks: the nn-train processes working in its directory, by the rank in their
    # environment.
    ranks = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not glob.glob(os.path.join(work, "ck*.nc")):
        time.sleep(0.05)
    for pid in subprocess.run(["pgrep", "-x", "nn-train"], capture_output=True,
                              text=True).stdout.split():
        try:
            if os.readlink(f"/proc/{pid}/cwd") != work:
                continue
            env_of = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        for e in env_of:
            if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                ranks[int(e.split(b"=")[1])] = int(pid)
    if len(ranks) != 2:
        os.killpg(job.pid, signal.SIGKILL)
        return {"mode": mode, "rank": rank, "error": f"ranks not found ({ranks})", "work": work}
    time.sleep(rng.uniform(0.0, 2.0))  # a random moment of the run
    failed_at = time.monotonic()
    if mode == "kill9":
        os.kill(ranks[rank], signal.SIGKILL)
    elif mode == "sigstop":
        os.kill(ranks[rank], signal.SIGSTOP)
    else:
        netns.cut(rank)
    hung = False
    ranks_ended = None  # seconds until both ranks had ended (the launcher may take longer)
    while job_alive(job, ranks):
        if ranks_ended is None and not ranks_running(ranks):
            ranks_ended = time.monotonic() - failed_at
        if time.monotonic() - failed_at > args.limit:
            hung = True
            break
        time.sleep(0.05)
    if ranks_ended is None and not ranks_running(ranks):
        ranks_ended = time.monotonic() - failed_at
    seconds = time.monotonic() - failed_at
    left = []  # what still ran when the trial gave up on the job
    if hung:
        left = (["launcher"] if job.poll() is None else []) + (
            ["ranks"] if ranks_running(ranks) else [])
        for pid in ranks.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(job.pid, signal.SIGKILL)
        except OSError:
            pass
    job.wait()
    err.close()
    if mode == "linkcut":
        netns.link(True)
    text = open(os.path.join(work, "job.err")).read()
    named = bool(re.search(rf"rank {rank}\b", text))
    # Every checkpoint left loads; --resume continues from the newest for 10 more epochs.
    damaged = []
    for path in sorted(glob.glob(os.path.join(work, "ck*.nc"))):
        r = subprocess.run([f"{tools}/nn-predict", "-n", path, "--data", "input.nc", "-k", "3",
                            "-s", "/dev/null", "-q"], cwd=work, capture_output=True, env=ENV)
        if r.returncode != 0:
            damaged.append(os.path.basename(path))
    newest = newest_checkpoint(work)
    epoch = int(re.match(r"ck(\d+)", os.path.basename(newest)).group(1)) if newest else 0
    r = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", f"{tools}/nn-train",
                        "train.cdl", "--resume", "-e", str(epoch + 10), "-q"], cwd=work,
                       capture_output=True, text=True, env=ENV, timeout=300)
    resumed = r.returncode == 0 and os.path.exists(os.path.join(work, "net.nc"))
    result = {"mode": mode, "rank": rank, "seconds": seconds, "hung": hung, "named": named,
              "damaged": damaged, "resumed": resumed, "checkpoint": os.path.basename(newest),
              "status": job.returncode, "work": work, "left": left,
              "ranks_ended": ranks_ended}
    if named and not hung and not damaged and resumed:
        shutil.rmtree(work)
    return result


def main():
    args = parse_args()
    tools = os.path.abspath(args.tools)
    rng = random.Random(args.seed)
    base = tempfile.mkdtemp(prefix="lost-rank-data-")
    make_data(tools, base)
    modes = args.modes.split(",")
    netns = Namespaces(base) if "linkcut" in modes else None
    if netns is not None and not netns.ok:
        print(f"linkcut: skipped, network namespaces refused here: {netns.why}")
        modes.remove("linkcut")
    results = []
    try:
        for i in range(args.trials):
            mode = modes[i % len(modes)]
            rank = rng.randrange(2)
            r = trial(args, tools, base, mode, rank, netns, rng)
            results.append(r)
            if "error" in r:
                print(f"trial {i + 1:2d}: {mode} of rank {rank}: ERROR {r['error']}")
                continue
            ranks = (f"ranks ended after {r['ranks_ended']:5.1f} s, " if r["ranks_ended"] is not None
                     else "ranks still running, ")
            print(f"trial {i + 1:2d}: {mode:7s} of rank {rank}: {ranks}job after {r['seconds']:6.1f} s"
                  f" (status {r['status']})"
                  f"{' HUNG (still running: ' + ', '.join(r['left']) + ')' if r['hung'] else ''}"
                  f"; rank named: "
                  f"{r['named']}; damaged checkpoints: {r['damaged'] or 'none'}; --resume from "
                  f"{r['checkpoint']}: {'ok' if r['resumed'] else 'FAILED'}", flush=True)
    finally:
        if netns is not None:
            netns.close()
        shutil.rmtree(base, ignore_errors=True)
    good = [r for r in results if "error" not in r]
    by_mode = {}
    for r in good:
        by_mode.setdefault(r["mode"], []).append(r["seconds"])
    for mode, times in by_mode.items():
        print(f"{mode}: {len(times)} trials, {min(times):.1f}-{max(times):.1f} s to the end of the "
              f"job (mean {sum(times) / len(times):.1f})")
    bad = [r for r in results if "error" in r or r["hung"] or not r["named"] or r["damaged"] or
           not r["resumed"]]
    load = os.getloadavg()
    print(f"{len(good)} trials: {sum(r['hung'] for r in good)} hung, "
          f"{sum(not r['named'] for r in good)} without the rank named, "
          f"{sum(bool(r['damaged']) for r in good)} with damaged checkpoints, "
          f"{sum(not r['resumed'] for r in good)} not resumed; load average {load[0]:.2f}")
    for r in bad:
        print(f"  kept for a look: {r.get('work')}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
