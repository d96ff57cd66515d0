#!/usr/bin/python3
"""GET /metrics of nn-serve over HTTP (tests/tools/serve_metrics.sh and serve_metrics_promtool.sh
run it in a work dir holding network.nc, net2.nc and features.idx): after a known mix of requests
(answered, refused by the front, a SIGHUP reload and a refused one) the counters say exactly that;
the answer is Prometheus text format 0.0.4. With --promtool the exposition is also checked by
`promtool check metrics` (Debian's prometheus package), which must find no problem.
Usage: serve_metrics_check.py <tool-dir> [--promtool]"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

TOOLS = sys.argv[1]
PROMTOOL = "--promtool" in sys.argv
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def start():
    log = open("metrics.log", "w")
    proc = subprocess.Popen([os.path.join(TOOLS, "nn-serve"), "--port", "0", "-n", "network.nc",
                             "-i", "features.idx", "-o", "features.idx", "--max-body", "64k",
                             "--watch-ms", "0"], stderr=log, stdout=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open("metrics.log").read())
        if m:
            return proc, log, int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit("nn-serve did not start: " + open("metrics.log").read())


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request(method, path, body=None if body is None else json.dumps(body).encode())
        r = c.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()
    finally:
        c.close()


def samples(text):
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def version(port):
    return json.loads(request(port, "GET", "/v2/models/tiny")[2])["versions"][0]


def main():
    proc, log, port = start()
    try:
        for i in range(5):
            check(request(port, "POST", "/recommend", {"items": [f"m{i}"], "k": 2})[0] == 200,
                  "recommend")
        check(request(port, "POST", "/recommend", [{"items": ["m1"]}] * 3)[0] == 200, "3 users")
        check(request(port, "GET", "/v2/models/other")[0] == 404, "404")
        check(request(port, "GET", "/recommend")[0] == 405, "405")
        # Refused by the front, before routing: a declared body over --max-body.
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"POST /recommend HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
        check(s.recv(100).startswith(b"HTTP/1.1 413"), "413 from the front")
        s.close()
        # A reload, then a refused one (the file replaced by garbage).
        proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 15
        while time.time() < deadline and version(port) != "2":
            time.sleep(0.05)
        check(version(port) == "2", "SIGHUP reload")
        shutil.copy("network.nc", "good.nc")
        with open("network.nc", "w") as f:
            f.write("not a network")
        proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 15
        while time.time() < deadline and "failed" not in open("metrics.log").read():
            time.sleep(0.05)
        shutil.copy("good.nc", "network.nc")
        status, ctype, text = request(port, "GET", "/metrics")
        check(status == 200 and ctype == "text/plain; version=0.0.4; charset=utf-8",
              f"/metrics: {status} {ctype}")
        m = samples(text)
        want = {
            'nn_serve_requests_total{endpoint="recommend",code="200"}': 6,
            'nn_serve_requests_total{endpoint="metadata",code="404"}': 1,
            'nn_serve_requests_total{endpoint="recommend",code="405"}': 1,
            'nn_serve_requests_total{endpoint="refused",code="413"}': 1,
            "nn_serve_batch_rows_sum": 8,  # 5 single users and one request of 3
            "nn_serve_reloads_total": 1,
            "nn_serve_reload_failures_total": 1,
            "nn_serve_model_version": 2,
            "nn_serve_requests_in_flight": 1,  # this /metrics request
            "nn_serve_connections_max": 4096,
        }
        for name, value in want.items():
            check(m.get(name) == value, f"{name}: expected {value}, got {m.get(name)}")
        check(m.get("nn_serve_queue_duration_seconds_count", 0) >= 6, "queue time observed")
        check(m.get("process_resident_memory_bytes", 0) > 1e6, "resident memory")
        check(m.get("nn_serve_connections_accepted_total", 0) >= 10, "connections counted")
        with open("metrics.txt", "w") as f:
            f.write(text)
        if PROMTOOL:
            r = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                               capture_output=True, timeout=60)
            check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
                  f"promtool check metrics: exit {r.returncode}: {r.stdout} {r.stderr}")
    finally:
        proc.send_signal(signal.SIGTERM)
        check(proc.wait(timeout=30) == 0, "nn-serve exit status")
        log.close()
    if failures:
        raise SystemExit(f"serve_metrics_check: {len(failures)} failures")
    print("serve_metrics_check: OK" + (" (promtool check metrics: no problems)" if PROMTOOL else ""))


if __name__ == "__main__":
    main()
