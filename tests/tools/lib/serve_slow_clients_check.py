#!/usr/bin/python3
"""Slow and idle clients cannot stall nn-serve (tests/tools/serve_slow_clients.sh runs it in a
work dir holding network.nc and features.idx). On loopback, with bounded counts and generous
bounds (a loaded 2-core machine passes; a thread-per-connection server, which waited 5-10 s here,
does not):
  - 1,000 connections open at once (idle ones, ones that sent half a header, ones dripping a
    header a byte at a time) while 100 valid requests are answered, each within 2 s;
  - a declared body over --max-body gets 413, a negative or malformed Content-Length 400, each
    within 2 s and without the body being sent;
  - Expect: 100-continue is honoured;
  - --header-timeout answers 408 and closes, --idle-timeout closes an idle connection;
  - --max-connections: the connection over the bound gets 503, and the server serves again once
    connections close.
Usage: serve_slow_clients_check.py <tool-dir> [--report] [--basic]
(--report: print the latencies; --basic: only the checks an older nn-serve can be run through,
to measure it)"""
import http.client
import json
import os
import re
import resource
import socket
import subprocess
import sys
import threading
import time

TOOLS = sys.argv[1]
REPORT = "--report" in sys.argv
BASIC = "--basic" in sys.argv  # only the stall and Content-Length checks (flags any server has)
SERVE = os.path.join(TOOLS, "nn-serve")
BOUND = 2.0  # seconds; the old server took 5-10 s for each of these
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


class Server:
    def __init__(self, *args, name):
        self.log_path = f"{name}.log"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([SERVE, "--port", "0", "-n", "network.nc", "-i",
                                      "features.idx", "-o", "features.idx", "--max-body", "64k",
                                      *args], stderr=self.log, stdout=subprocess.DEVNULL)
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

    def connect(self, timeout=10):
        return socket.create_connection(("127.0.0.1", self.port), timeout=timeout)

    def recommend(self, timeout=30):
        """One valid POST /recommend on a new connection: (status, seconds)."""
        start = time.monotonic()
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request("POST", "/recommend", body=json.dumps({"items": ["m0", "m3"], "k": 3}),
                      headers={"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            return r.status, time.monotonic() - start
        except OSError as e:
            return str(e), time.monotonic() - start
        finally:
            c.close()

    def raw(self, head, timeout=10):
        """Sends `head` (a request without its body) and reads the answer: (status line, body,
        seconds)."""
        start = time.monotonic()
        s = self.connect(timeout)
        try:
            s.sendall(head)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            head_end = data.find(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length: *(\d+)", data[:head_end])
            while length and len(data) < head_end + 4 + int(length.group(1)):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            line = data.split(b"\r\n", 1)[0].decode(errors="replace")
            return line, data[head_end + 4:].decode(errors="replace"), time.monotonic() - start
        except OSError as e:
            return f"error {e}", "", time.monotonic() - start
        finally:
            s.close()

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(timeout=30)
        self.log.close()
        return rc


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def hold_connections(server, count):
    """Opens `count` connections: a third idle, a third with half a header sent, a third dripping
    a header a byte every 50 ms (a thread keeps dripping until the returned event is set)."""
    socks, drip = [], []
    for i in range(count):
        s = server.connect()
        if i % 3 == 1:
            s.sendall(b"POST /recommend HTTP/1.1\r\nHost: x\r\nContent-Le")
        elif i % 3 == 2:
            drip.append(s)
        socks.append(s)
    stop = threading.Event()

    def dripper():
        text = b"GET /v2/health/live HTTP/1.1\r\nX-Slow: " + b"a" * 4000
        at = 0
        while not stop.is_set() and at < len(text):
            for s in drip:
                try:
                    s.send(text[at:at + 1])
                except OSError:
                    pass
            at += 1
            stop.wait(0.05)

    t = threading.Thread(target=dripper, daemon=True)
    t.start()
    return socks, stop, t


def stall(server):
    socks, stop, dripper = hold_connections(server, 1000)
    try:
        time.sleep(0.5)  # every connection accepted and waiting
        results = [server.recommend() for _ in range(100)]
    finally:
        stop.set()
        dripper.join(timeout=10)
    times = [t for _, t in results]
    bad = [r for r in results if r[0] != 200]
    check(not bad, f"with 1000 slow connections open, {len(bad)} of 100 requests failed: {bad[:3]}")
    check(max(times) < BOUND, f"with 1000 slow connections open a request took {max(times):.2f} s")
    summary = (f"1000 idle/slow connections: 100 requests, p50 {percentile(times, 50) * 1e3:.2f} "
               f"ms, p99 {percentile(times, 99) * 1e3:.2f} ms, max {max(times) * 1e3:.2f} ms")
    for s in socks:
        s.close()
    return summary


def content_length(server):
    lines = []
    for value, status in [("99999999999", 413), ("70000", 413), ("-5", 400), ("12abc", 400),
                          ("", 400)]:
        line, body, seconds = server.raw(
            b"POST /recommend HTTP/1.1\r\nHost: x\r\nContent-Length: " + value.encode() +
            b"\r\n\r\n")
        check(line.startswith(f"HTTP/1.1 {status} ") and '"error"' in body and seconds < BOUND,
              f"Content-Length '{value}': expected {status} within {BOUND} s, got '{line}' {body} "
              f"after {seconds:.2f} s")
        lines.append(f"Content-Length '{value}': {line} in {seconds * 1e3:.1f} ms")
    # The body is refused for its size alone: the 413 names --max-body.
    line, body, _ = server.raw(b"POST /recommend HTTP/1.1\r\nHost: x\r\nContent-Length: "
                               b"99999999999\r\n\r\n")
    check("over 65536 bytes (--max-body)" in body, f"413 body: {body}")
    # Expect: 100-continue: the server says go ahead, then answers the request.
    s = server.connect()
    try:
        body = json.dumps({"items": ["m0"], "k": 2}).encode()
        s.sendall(b"POST /recommend HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n")
        first = s.recv(4096)
        check(first.startswith(b"HTTP/1.1 100 Continue"), f"Expect: 100-continue got {first!r}")
        s.sendall(body)
        answer = b""
        while b'"scores"' not in answer:
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
        check(answer.startswith(b"HTTP/1.1 200") or b"HTTP/1.1 200" in answer,
              f"after 100 Continue: {answer[:80]!r}")
    finally:
        s.close()
    return lines


def timeouts():
    """--header-timeout 1: half a header gets 408 and is closed within a few seconds;
    --idle-timeout 1: a silent connection is closed."""
    s = Server("--header-timeout", "1", "--idle-timeout", "1", "-q", name="timeouts")
    try:
        start = time.monotonic()
        line, body, seconds = s.raw(b"POST /recommend HTTP/1.1\r\nHost: x\r\n")
        check(line.startswith("HTTP/1.1 408 ") and "--header-timeout" in body and seconds < 4,
              f"header timeout: '{line}' {body} after {seconds:.2f} s")
        c = s.connect()
        start = time.monotonic()
        try:
            got = c.recv(100)
        except OSError as e:
            got = str(e).encode()
        waited = time.monotonic() - start
        c.close()
        check(got == b"" and 0.5 < waited < 4, f"idle timeout: {got!r} after {waited:.2f} s")
        status, _ = s.recommend()
        check(status == 200, f"after timeouts: {status}")
    finally:
        s.stop()


def connection_bound():
    """--max-connections 20: with 20 open, the next connection gets 503 and is closed; once they
    close, requests are served again."""
    s = Server("--max-connections", "20", "-q", name="bound")
    try:
        held = [s.connect() for _ in range(20)]
        time.sleep(0.3)
        line, body, seconds = s.raw(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        check(line.startswith("HTTP/1.1 503 ") and "--max-connections" in body and seconds < BOUND,
              f"over --max-connections: '{line}' {body} after {seconds:.2f} s")
        for c in held:
            c.close()
        deadline = time.time() + 5
        status = None
        while time.time() < deadline and status != 200:
            status, _ = s.recommend()
            time.sleep(0.05)
        check(status == 200, f"after the connections closed: {status}")
    finally:
        s.stop()


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    s = Server("-q", name="slow")
    try:
        summary = stall(s)
        lines = content_length(s)
        status, _ = s.recommend()
        check(status == 200, f"the server stopped serving: {status}")
    finally:
        check(s.stop() == 0, "nn-serve exit status")
    if not BASIC:
        timeouts()
        connection_bound()
    if REPORT:
        print(summary)
        print("\n".join(lines))
    if failures:
        raise SystemExit(f"serve_slow_clients_check: {len(failures)} failures")
    print(f"serve_slow_clients_check: OK ({summary})")


if __name__ == "__main__":
    main()
