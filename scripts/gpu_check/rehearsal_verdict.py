#!/usr/bin/env python3
"""The verdict of scripts/gpu-rehearsal.sh on the two calls it ran in a bare root without a GPU,
with simulated time: every binary loads, the CUDA module loads when asked for by its path, every
step that needs a GPU says NO-DEVICE (or NOT-RUN where it depends on a GPU result or a tool the
root lacks), the CPU references pass, every step was planned and started within its call's budget
with a time limit no shorter than its estimate, and both calls wrote their files. Ends with one
line per call: "call N: S s planned of L s, K steps".

Usage: rehearsal_verdict.py CALL1_OUT CALL2_OUT     (exit 0 when both pass)
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from environment import host_cpu  # noqa: E402  (the check's own reading of /proc/cpuinfo)

# Call 1: the statuses each verdict may have in the bare root.
CALL1 = {
    "device": {"NO-DEVICE"}, "libraries": {"PASS"}, "module_loads": {"PASS"},
    "module_found": {"NO-DEVICE"}, "cuda_tests": {"NO-DEVICE"},
    "backend_cuda_instances": {"NO-DEVICE"}, "opt_in_kernel_tests": {"NO-DEVICE"},
    "host_kernel_math": {"PASS"}, "gradient_check_cuda": {"NO-DEVICE"},
    "training_cuda_vs_cpu": {"NO-DEVICE"}, "prediction_cuda_vs_cpu": {"NOT-RUN"},
    "bf16_training_cuda": {"NOT-RUN"}, "bf16_prediction_cuda": {"NOT-RUN"},
    "tf32_epilogue_cuda": {"NOT-RUN"}, "validation_topk_padded": {"NO-DEVICE"},
    "sampled_cuda_vs_cpu": {"NO-DEVICE"}, "dense_targets_padded": {"NO-DEVICE"},
    "variational_cuda_vs_cpu": {"NO-DEVICE"}, "stream_cuda": {"NO-DEVICE"},
    "profile_cuda": {"NO-DEVICE"}, "predict_tests_cuda": {"NO-DEVICE"},
    "serve_cuda_32_clients": {"NOT-RUN"}, "serve_cuda_peers": {"NOT-RUN"},
    # The root has no compute-sanitizer, no C++ compiler and no pybind11.
    "sanitizer_memcheck": {"NOT-RUN"}, "sanitizer_racecheck": {"NOT-RUN"},
    # The bundle's relocated mpirun trains two CPU ranks in a root without Open MPI's packages.
    "mpi_np2_cpu": {"PASS"}, "mpi_np2_cuda": {"NO-DEVICE"}, "nccl_tests": {"NO-DEVICE"},
    "python_cuda": {"NOT-RUN"}, "cnn_cuda_vs_cpu": {"NO-DEVICE"},
    "cnn_cuda_fastest": {"NO-DEVICE"}, "cnn_graphs_cuda": {"NO-DEVICE"},
    "cnn_all_on_cuda": {"NO-DEVICE"},
}
# Without a default CUDA run every path's comparison has nothing to compare with.
CALL1_PREFIX = {"path_": {"NOT-RUN"}}
CALL2 = {
    "device": {"NO-DEVICE"}, "libraries": {"PASS"}, "module_loads": {"PASS"},
    "module_found": {"NO-DEVICE"}, "bench_nn": {"NO-DEVICE"},
    "bench_torch_eager": {"NOT-RUN"}, "bench_torch_compile": {"NOT-RUN"},
    "bench_profile": {"NO-DEVICE"}, "sampled_1m_cuda": {"NO-DEVICE"}, "bench_cnn": {"NO-DEVICE"},
    "bench_peer_backends": {"NOT-RUN"},
    # BF16 on the CPU backend: measured where the rehearsal's CPU (this build machine's) has
    # AVX512-BF16 or AMX, as on a GPU machine's host, and then it must pass; NOT-RUN elsewhere.
    "cpu_bf16": {"PASS"} if host_cpu()["bf16"] else {"NOT-RUN"},
}
CALL2_PREFIX = {"bench_": {"NO-DEVICE"}}  # each opt-in path's A/B run


def read_results(folder):
    with open(os.path.join(folder, "results.tsv")) as f:
        return {l.split("\t")[0]: l.rstrip("\n").split("\t") for l in list(f)[1:] if l.strip()}


def judge(call, folder, expected, prefixes):
    ok = True

    def bad(text):
        nonlocal ok
        ok = False
        print(f"  FAIL call {call}: {text}")

    for name in ("report.md", "results.tsv", "meta.json", "logs.tar.gz"):
        if not os.path.exists(os.path.join(folder, name)):
            bad(f"no {name}")
    if not ok:
        return False, f"call {call}: no files"
    results = read_results(folder)
    meta = json.load(open(os.path.join(folder, "meta.json")))
    for name, row in results.items():
        status = row[1]
        want = expected.get(name) or next((v for p, v in prefixes.items()
                                           if name.startswith(p)), None)
        if want is None:
            bad(f"{name}: {status}, a verdict this rehearsal does not know")
        elif status not in want:
            bad(f"{name}: {status} (expected {' or '.join(sorted(want))}): {row[3]}")
        else:
            print(f"  ok   call {call} {name}: {status}")
    for name in expected:
        if name not in results:
            bad(f"{name}: missing")
    # Opt-in paths: the path table must have been read, and each path judged in call 1.
    if call == 1 and not any(n.startswith("path_") for n in results):
        bad("no path_* verdicts (the path table was not read)")
    for entry in meta.get("plan", []):
        if not entry.get("ran"):
            bad(f"step {entry['step']} did not start (simulated time {entry['start']} s)")
        elif entry["timeout"] < entry["estimate"]:
            bad(f"step {entry['step']}: time limit {entry['timeout']} s under its estimate "
                f"{entry['estimate']} s")
    if "## Result" not in open(os.path.join(folder, "report.md")).read():
        bad("report.md has no Result section")
    line = meta.get("plan_line", f"call {call}: no plan")
    m = re.fullmatch(r"call \d+: (\d+) s planned of (\d+) s, \d+ steps", line)
    if not m:
        bad(f"no plan line in meta.json ({line})")
        return False, line
    planned, budget = int(m.group(1)), int(m.group(2))
    if planned > budget - 10:
        bad(f"{planned} s planned over the budget of {budget} s")
    if budget > 540:
        bad(f"a budget of {budget} s: a call must finish within 9 minutes")
    return ok, line


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    ok1, line1 = judge(1, argv[1], CALL1, CALL1_PREFIX)
    ok2, line2 = judge(2, argv[2], CALL2, CALL2_PREFIX)
    print(line1)
    print(line2)
    return 0 if ok1 and ok2 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
