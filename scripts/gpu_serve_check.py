#!/usr/bin/env python3
"""nn-serve under concurrent clients against the same network answered one request at a time.

The GPU check (scripts/gpu-check.sh, step "serve") starts two servers on one trained network: a
reference (--backend cpu) and the one under test (--backend cuda, several evaluators). This
sends every request body to the reference one at a time, then all of them to the server under
test from CLIENTS threads at once (each with its own keep-alive connection), several rounds, and
compares each answer with the reference: the same items in the same order, scores within a
relative tolerance (the two backends sum in different orders, which may swap near-ties: a
swap is allowed where the two scores are within the tolerance). A race between concurrent
requests on the device (shared buffers, one stream) shows as answers that belong to another
user or as errors.

Usage: gpu_serve_check.py REF_PORT TEST_PORT BODIES [--clients 32] [--rounds 4] [--tol 1e-4]
Prints a summary line and exits 0 when every answer matches.
"""

import argparse
import http.client
import json
import sys
import threading


def post(conn, body):
    conn.request("POST", "/recommend", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {data[:200]!r}")
    return json.loads(data)


def same(got, want, tol):
    """'' when got answers as want does within tol, else what differs."""
    gi, gs, wi, ws = got["items"], got["scores"], want["items"], want["scores"]
    if len(gi) != len(wi):
        return f"{len(gi)} items, want {len(wi)}"
    close = lambda a, b: abs(a - b) <= tol * max(1.0, abs(b))
    for j, (item, score) in enumerate(zip(gi, gs)):
        if not close(score, ws[j]):
            return f"rank {j}: {item} {score}, want {wi[j]} {ws[j]}"
        if item != wi[j] and not any(i == wi[j] and close(s, ws[j]) for i, s in zip(gi, gs)):
            return f"rank {j}: {item}, want {wi[j]} (score {ws[j]})"
    return ""


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref_port", type=int)
    ap.add_argument("test_port", type=int)
    ap.add_argument("bodies")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args(argv)
    bodies = [line.strip() for line in open(args.bodies) if line.strip()]
    ref = http.client.HTTPConnection("127.0.0.1", args.ref_port, timeout=60)
    want = [post(ref, b) for b in bodies]

    lock = threading.Lock()
    failures, answered = [], [0]

    def client(c):
        conn = http.client.HTTPConnection("127.0.0.1", args.test_port, timeout=60)
        for r in range(args.rounds):
            # Each client walks the bodies from its own offset, so neighbours ask for different
            # users at the same moment.
            for n in range(len(bodies)):
                i = (c * 7 + n + r) % len(bodies)
                try:
                    diff = same(post(conn, bodies[i]), want[i], args.tol)
                except Exception as err:  # an error answer or a broken connection
                    diff = f"{type(err).__name__}: {err}"
                    conn = http.client.HTTPConnection("127.0.0.1", args.test_port, timeout=60)
                with lock:
                    answered[0] += 1
                    if diff:
                        failures.append(f"body {i}: {diff}")

    threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{answered[0]} answers from {args.clients} concurrent clients, {len(failures)} differ "
          f"from the one-at-a-time reference (tolerance {args.tol:g})")
    for f in failures[:10]:
        print("  " + f)
    return 0 if not failures and answered[0] == args.clients * args.rounds * len(bodies) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
