#!/usr/bin/python3
"""nn-serve over real HTTP on loopback (tests/tools/serve_http.sh runs it in a work dir holding
network.nc, net2.nc, features.idx): every endpoint, each class of bad request with its status
and JSON error (the server keeps serving), batched answers equal to an unbatched server's under
32 concurrent clients, SIGHUP and a replaced network file reloading with requests in flight (none
fails), SIGTERM draining (a running request answered, new ones 503) and exiting 0, the access log
and -q. Every request
loop is bounded in count and time."""
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

TOOLS = sys.argv[1]
SERVE = os.path.join(TOOLS, "nn-serve")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


class Server:
    def __init__(self, *args, name="serve"):
        self.log_path = f"{name}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([SERVE, "--port", "0", *args], stderr=self.log,
                                     stdout=subprocess.DEVNULL)
        deadline = time.time() + 30
        self.port = None
        while time.time() < deadline and self.port is None:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(self.log_path).read())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None:
                raise SystemExit(f"nn-serve exited {self.proc.returncode}: "
                                 + open(self.log_path).read())
            else:
                time.sleep(0.05)
        if self.port is None:
            raise SystemExit("nn-serve did not say where it listens: " + open(self.log_path).read())

    def request(self, method, path, body=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
            c.request(method, path, body=data,
                      headers={"Content-Type": "application/json"} if data is not None else {})
            r = c.getresponse()
            text = r.read().decode()
            return r.status, (json.loads(text) if text else None)
        finally:
            c.close()

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=30)
        self.log.close()
        return rc

    def text(self):
        return open(self.log_path).read()


def endpoints(s):
    check(s.request("GET", "/v2/health/live") == (200, {"live": True}), "live")
    check(s.request("GET", "/v2/health/ready") == (200, {"ready": True}), "ready")
    status, meta = s.request("GET", "/v2/models/tiny")
    check(status == 200 and meta["name"] == "tiny" and meta["inputs"][0]["name"] == "Input"
          and meta["outputs"][0]["shape"][0] == -1, f"metadata {meta}")
    check(s.request("GET", "/v2/models/tiny/ready")[0] == 200, "model ready")
    status, rec = s.request("POST", "/recommend", {"items": ["m0", "m1", "nope"], "k": 4})
    check(status == 200 and len(rec["items"]) == 4 and len(rec["scores"]) == 4
          and rec["unknown"] == ["nope"] and not {"m0", "m1"} & set(rec["items"]),
          f"recommend {status} {rec}")
    status, recs = s.request("POST", "/recommend", [{"items": ["m0"]}, {"items": ["m6"], "k": 2}])
    check(status == 200 and len(recs) == 2 and len(recs[1]["items"]) == 2, f"list {recs}")
    width = meta["inputs"][0]["shape"][1]
    status, inf = s.request("POST", "/v2/models/tiny/infer", {
        "id": "x", "inputs": [{"name": "Input", "shape": [1, 18], "datatype": "FP32",
                               "data": [1.0] + [0.0] * 17}]})
    check(status == 200 and inf["id"] == "x" and inf["outputs"][0]["shape"] == [1, width],
          f"infer {status} {inf}")


def bad_requests(s):
    cases = [
        ("POST", "/recommend", b'{"items": [', 400, "malformed JSON"),
        ("POST", "/recommend", {"items": ["m0"], "top": 3}, 400, "unknown field 'top'"),
        ("POST", "/recommend", {"items": ["m0"], "k": 0}, 400, "k: must be between"),
        ("POST", "/v2/models/other/infer", {"inputs": []}, 404, "no model 'other'"),
        ("GET", "/v2/models/other", None, 404, "no model 'other'"),
        ("GET", "/elsewhere", None, 404, "no endpoint /elsewhere"),
        ("GET", "/recommend", None, 405, "takes POST"),
        ("DELETE", "/v2/health/ready", None, 405, "takes GET"),
        ("POST", "/recommend", b" " * 70000, 413, "over 65536 bytes"),
        ("POST", "/v2/models/tiny/infer", {"inputs": [{"name": "Input", "shape": [1, 2],
                                            "datatype": "FP64", "data": [1, 2]}]}, 400, "FP64"),
    ]
    for method, path, body, status, text in cases:
        got, answer = s.request(method, path, body)
        check(got == status and answer and text in answer.get("error", ""),
              f"{method} {path}: expected {status} with '{text}', got {got} {answer}")
        check(s.request("GET", "/v2/health/ready")[0] == 200, f"not ready after {method} {path}")
    return len(cases) * 2


def concurrent_equal(batched, single):
    """32 clients at once on the batching server; each answer equals the unbatched server's."""
    requests = []
    for i in range(96):
        items = [f"m{(i * 7 + j * 5) % 18}" for j in range(1 + i % 5)]
        requests.append({"items": sorted(set(items)), "k": 1 + i % 9})
    got = [None] * len(requests)

    def client(c):
        for i in range(c, len(requests), 32):
            got[i] = batched.request("POST", "/recommend", requests[i])

    threads = [threading.Thread(target=client, args=(c,)) for c in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for i, r in enumerate(requests):
        want = single.request("POST", "/recommend", r)
        check(got[i] == want, f"batched answer {i} differs: {got[i]} vs {want}")


def reload_under_load(s):
    """Clients keep asking while the network is reloaded by SIGHUP and by replacing the file."""
    stop = time.time() + 60
    done = threading.Event()
    results = []

    def client(c):
        n = 0
        while not done.is_set() and time.time() < stop and n < 2000:
            results.append(s.request("POST", "/recommend", {"items": [f"m{c + 6}", "m3"], "k": 3}))
            n += 1

    threads = [threading.Thread(target=client, args=(c,)) for c in range(6)]
    for t in threads:
        t.start()

    def version():
        return s.request("GET", "/v2/models/tiny")[1]["versions"][0]

    def wait_for(v, seconds=15):
        deadline = time.time() + seconds
        while time.time() < deadline and version() != v:
            time.sleep(0.05)
        return version() == v

    time.sleep(0.2)
    s.proc.send_signal(signal.SIGHUP)
    check(wait_for("2"), "SIGHUP did not reload (version 2)")
    shutil.copy("net2.nc", "next.nc")
    os.rename("next.nc", "network.nc")  # replaced as nn-train writes it
    check(wait_for("3"), "replacing network.nc did not reload (version 3)")
    time.sleep(0.2)
    done.set()
    for t in threads:
        t.join(timeout=60)
    bad = [r for r in results if r[0] != 200]
    check(not bad and len(results) > 20, f"{len(bad)} of {len(results)} requests failed "
                                         f"during reloads: {bad[:3]}")
    versions = {r[1]["model_version"] for r in results if r[0] == 200}
    check({"1", "3"} <= versions, f"answers came from versions {versions}")
    # A broken replacement is refused; the server keeps version 3.
    with open("next.nc", "w") as f:
        f.write("not a network")
    os.rename("next.nc", "network.nc")
    time.sleep(1.0)
    check(version() == "3" and s.request("GET", "/v2/health/ready")[0] == 200,
          "a broken network file was not refused")
    return len(results)


def drain_on_sigterm():
    """A large request (4096 users on slow.nc, two hidden layers of 1536 units) is running when
    SIGTERM comes: a request and a readiness probe arriving while the server drains get 503 with
    a JSON error, the large request is answered, and the server exits 0."""
    s = Server("-n", "slow.nc", "-i", "features.idx", "-o", "features.idx", "--threads", "1",
               name="drain")
    users = [{"items": [f"m{u % 9}", f"m{9 + u % 9}"], "k": 3} for u in range(4096)]
    results = []
    big = threading.Thread(target=lambda: results.append(s.request("POST", "/recommend", users)))
    big.start()
    time.sleep(0.15)  # sent, parsed and running
    s.proc.send_signal(signal.SIGTERM)
    deadline = time.time() + 5
    while time.time() < deadline and "draining" not in s.text():
        time.sleep(0.01)
    late = s.request("POST", "/recommend", {"items": ["m1"]})
    ready = s.request("GET", "/v2/health/ready")
    big_was_running = big.is_alive()
    rc = s.proc.wait(timeout=60)
    s.log.close()
    big.join(timeout=60)
    check(rc == 0, f"nn-serve exited {rc} on SIGTERM")
    check(big_was_running, "the large request ended before the checks (too fast here)")
    check(len(results) == 1 and results[0][0] == 200 and len(results[0][1]) == 4096,
          f"the request accepted before SIGTERM was not answered: {str(results)[:200]}")
    check(late[0] == 503 and "shutting down" in late[1]["error"], f"a request while draining: {late}")
    check(ready[0] == 503, f"ready while draining: {ready}")
    log = s.text()
    check("draining" in log and "stopped after 3 requests" in log, f"drain log: {log}")


def term_during_reload():
    """SIGTERM right behind SIGHUP arrives while the serving thread reloads; a thread that does
    not block it (the MPI library's) must pass it on, not die of it: the server drains, exit 0."""
    s = Server("-n", "net2.nc", "-i", "features.idx", "-o", "features.idx", name="hupterm")
    s.proc.send_signal(signal.SIGHUP)
    s.proc.send_signal(signal.SIGTERM)
    rc = s.proc.wait(timeout=60)
    s.log.close()
    check(rc == 0 and "draining" in s.text(), f"SIGTERM during a reload: exit {rc}: {s.text()}")


def main():
    common = ["-i", "features.idx", "-o", "features.idx", "--max-body", "64k"]
    s = Server("-n", "network.nc", *common, "--threads", "2", "--max-delay-ms", "5",
               "--watch-ms", "100")
    single = Server("-n", "network.nc", *common, "--threads", "1", "--max-batch", "1",
                    "--max-delay-ms", "0", "-q", name="single")
    endpoints(s)
    bad_requests(s)
    concurrent_equal(s, single)
    reload_under_load(s)
    check(s.stop() == 0, "SIGTERM exit status")
    check(single.stop(signal.SIGINT) == 0, "SIGINT exit status")
    # The access log: one line per request with method, path, status and latency.
    lines = [l for l in s.text().splitlines() if not l.startswith("nn-serve:")]
    pattern = re.compile(r"^127\.0\.0\.1 (GET|POST|DELETE) /\S* \d{3} \d+\.\d{3} ms$")
    check(lines and all(pattern.match(l) for l in lines), f"access log: {lines[:3]}")
    check(any(" 413 " in l for l in lines) and any(" 405 " in l for l in lines), "logged statuses")
    log = s.text()
    check("serving network.nc as version 2" in log and "as version 3" in log, "reload log lines")
    check(re.search(r"reload \(the network file changed\) failed; still serving version 3", log),
          "the failed reload is logged")
    # -q: nothing but the line that says which port --port 0 chose.
    quiet = single.text().splitlines()
    check(len(quiet) == 1 and "listening on" in quiet[0], f"-q printed: {quiet[:3]}")
    drain_on_sigterm()
    term_during_reload()
    if failures:
        raise SystemExit(f"serve_http_check: {len(failures)} failures")
    print(f"serve_http_check: OK ({len(lines)} requests logged by the main server)")


if __name__ == "__main__":
    main()
