"""nn-serve's gRPC front against its HTTP endpoint, with Triton's clients (tests/tools/serve_grpc.sh
runs it in a work dir holding network.nc, net2.nc and features.idx; the interpreter must have
tritonclient[grpc,http] and numpy). One server, both ports:
  - health: ServerLive/Ready, ModelReady, grpc.health.v1.Health/Check SERVING (NOT_FOUND for a
    service it does not know); a Health/Watch stream sees SERVING, then NOT_SERVING when
    SIGTERM drains the server, and ends when it exits;
  - server and model metadata, Triton's model config and statistics: gRPC's equal HTTP's;
  - inference: the same rows through tritonclient.grpc (raw bytes, and typed fp32_contents) and
    through HTTP's JSON give equal FP32 scores, bit for bit, also under 16 concurrent clients of
    each protocol; so does HTTP with the binary tensor extension (tritonclient.http);
  - refusals: gRPC's message is HTTP's, under the code that means HTTP's status;
  - statistics and metrics count exactly the requests sent;
  - a reload (SIGHUP) shows in gRPC's metadata and answers; SIGTERM drains and exits 0.
Usage: serve_grpc_check.py <tool-dir>"""
import concurrent.futures
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import grpc
import numpy as np
import tritonclient.grpc as tg
import tritonclient.http as th
from tritonclient.grpc import service_pb2, service_pb2_grpc
from tritonclient.utils import InferenceServerException

TOOLS = sys.argv[1]
MODEL = "tiny"
MAX_ROWS = 8
MAX_BODY = 65536
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return ok


def start():
    log = open("grpc.log", "w")
    proc = subprocess.Popen(
        [os.path.join(TOOLS, "nn-serve"), "-n", "network.nc", "-i", "features.idx", "-o",
         "features.idx", "--port", "0", "--grpc-port", "0", "--max-rows", str(MAX_ROWS),
         "--max-body", str(MAX_BODY), "--watch-ms", "0", "-q"],
        stderr=log, stdout=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        text = open("grpc.log").read()
        h = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
        g = re.search(r"gRPC listening on 127\.0\.0\.1:(\d+)", text)
        if h and g:
            return proc, int(h.group(1)), int(g.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit("nn-serve did not start: " + open("grpc.log").read())


def http_json(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request(method, path, body=None if body is None else json.dumps(body).encode())
        r = c.getresponse()
        return r.status, json.loads(r.read().decode() or "null")
    finally:
        c.close()


def http_infer(port, rows, name="Input", datatype="FP32", model=MODEL):
    """HTTP JSON inference: (status, scores as float32 array or the error message)."""
    body = {"inputs": [{"name": name, "shape": list(rows.shape), "datatype": datatype,
                        "data": rows.ravel().tolist()}]}
    status, answer = http_json(port, "POST", f"/v2/models/{model}/infer", body)
    if status != 200:
        return status, answer["error"]
    out = answer["outputs"][0]
    return status, np.array(out["data"], dtype=np.float32).reshape(out["shape"])


def grpc_infer(client, rows, name="Input", model=MODEL, version=""):
    x = tg.InferInput(name, list(rows.shape), "FP32")
    x.set_data_from_numpy(rows)
    return client.infer(model, [x], model_version=version).as_numpy("Output")


def grpc_error(call):
    """The (code name, message) a call fails with, or None when it succeeds."""
    try:
        call()
    except InferenceServerException as e:
        return str(e.status()).replace("StatusCode.", ""), e.message()
    except grpc.RpcError as e:
        return e.code().name, e.details()
    return None


def health(port, service=""):
    """grpc.health.v1.Health/Check, by hand (HealthCheckRequest{service}; the answer's field 1
    is the status: 1 SERVING, 2 NOT_SERVING)."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        check_call = channel.unary_unary("/grpc.health.v1.Health/Check",
                                         request_serializer=lambda b: b,
                                         response_deserializer=lambda b: b)
        request = (b"\x0a" + bytes([len(service)]) + service.encode()) if service else b""
        try:
            answer = check_call(request, timeout=10)
        except grpc.RpcError as e:
            return e.code().name
        return {b"\x08\x01": "SERVING", b"\x08\x02": "NOT_SERVING"}.get(answer, repr(answer))


def watch(port, seen, first):
    """grpc.health.v1.Health/Watch of '' until the stream ends: every status it sends, then how
    it ended (OK, or the RPC's status code)."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_stream("/grpc.health.v1.Health/Watch",
                                    request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)
        try:
            for answer in call(b"", timeout=90):
                seen.append({b"\x08\x01": "SERVING", b"\x08\x02": "NOT_SERVING"}.get(
                    answer, repr(answer)))
                first.set()
            seen.append("OK")
        except grpc.RpcError as e:
            seen.append(e.code().name)
        first.set()


def main():
    proc, hport, gport = start()
    watched, first_status = [], threading.Event()
    client = tg.InferenceServerClient(f"127.0.0.1:{gport}")
    rng = np.random.default_rng(7)
    sent_ok = sent_fail = rows_ok = 0  # inference requests for this model, both protocols
    try:
        # Health and metadata.
        check(client.is_server_live() and client.is_server_ready(), "server live and ready")
        check(client.is_model_ready(MODEL), "model ready")
        check(health(gport) == "SERVING", "grpc.health.v1 '' SERVING")
        check(health(gport, "inference.GRPCInferenceService") == "SERVING",
              "grpc.health.v1 inference.GRPCInferenceService SERVING")
        check(health(gport, "nope") == "NOT_FOUND", "grpc.health.v1 of an unknown service")
        check(grpc_error(lambda: client.is_model_ready("other"))[0] == "NOT_FOUND",
              "ModelReady of another model: NOT_FOUND")
        sm = client.get_server_metadata(as_json=True)
        hsm = http_json(hport, "GET", "/v2")[1]
        check(sm["name"] == hsm["name"] == "nn-serve" and sm["version"] == hsm["version"] and
              sm["extensions"] == hsm["extensions"] and "statistics" in sm["extensions"],
              f"server metadata: gRPC {sm}, HTTP {hsm}")
        meta = client.get_model_metadata(MODEL, as_json=True)
        hmeta = http_json(hport, "GET", f"/v2/models/{MODEL}")[1]
        for t in meta["inputs"] + meta["outputs"]:
            t["shape"] = [int(d) for d in t["shape"]]  # protobuf's JSON writes int64 as strings
        check(meta == hmeta, f"model metadata: gRPC {meta}, HTTP {hmeta}")
        units = hmeta["inputs"][0]["shape"][1]
        config = client.get_model_config(MODEL, as_json=True)["config"]
        hconfig = http_json(hport, "GET", f"/v2/models/{MODEL}/config")[1]
        check(int(config["max_batch_size"]) == hconfig["max_batch_size"] == MAX_ROWS and
              config["input"][0]["data_type"] == hconfig["input"][0]["data_type"] == "TYPE_FP32" and
              [int(d) for d in config["input"][0]["dims"]] == hconfig["input"][0]["dims"] ==
              [units],
              f"model config: gRPC {config}, HTTP {hconfig}")

        # The same rows, both ways: equal bit for bit.
        for shape in [(1, units), (3, units), (MAX_ROWS, 5), (1, 1)]:
            rows = rng.random(shape, dtype=np.float32)
            got = grpc_infer(client, rows)
            status, want = http_infer(hport, rows)
            sent_ok += 2
            rows_ok += 2 * shape[0]
            check(status == 200 and got.dtype == np.float32 and got.shape == want.shape and
                  np.array_equal(got, want), f"rows of shape {shape}: gRPC and HTTP scores differ")
        # One row as a typed list (contents.fp32_contents), the other way the protocol allows.
        channel = grpc.insecure_channel(f"127.0.0.1:{gport}")
        stub = service_pb2_grpc.GRPCInferenceServiceStub(channel)
        rows = rng.random((2, units), dtype=np.float32)
        req = service_pb2.ModelInferRequest(model_name=MODEL, id="typed-1")
        t = req.inputs.add(name="Input", datatype="FP32", shape=[2, units])
        t.contents.fp32_contents.extend(rows.ravel().tolist())
        answer = stub.ModelInfer(req, timeout=30)
        typed = np.frombuffer(answer.raw_output_contents[0], dtype=np.float32).reshape(2, -1)
        sent_ok += 2
        rows_ok += 4
        check(answer.id == "typed-1" and answer.model_version == "1" and
              np.array_equal(typed, http_infer(hport, rows)[1]), "fp32_contents: scores differ")

        # HTTP with Triton's binary tensor extension (tritonclient.http's default): binary in,
        # binary out, and each mixed with JSON; the scores equal the JSON request's.
        hclient = th.InferenceServerClient(f"127.0.0.1:{hport}")
        rows = rng.random((3, units), dtype=np.float32)
        _, want = http_infer(hport, rows)
        sent_ok += 1
        rows_ok += 3
        for binary_in, binary_out in [(True, True), (True, False), (False, True)]:
            x = th.InferInput("Input", list(rows.shape), "FP32")
            x.set_data_from_numpy(rows, binary_data=binary_in)
            out = th.InferRequestedOutput("Output", binary_data=binary_out)
            got = hclient.infer(MODEL, [x], outputs=[out]).as_numpy("Output")
            sent_ok += 1
            rows_ok += 3
            check(got is not None and got.dtype == np.float32 and np.array_equal(got, want),
                  f"HTTP binary in {binary_in}, out {binary_out}: scores differ from JSON's")
        hclient.close()

        # Refusals: HTTP's message, the gRPC code of HTTP's status.
        good = rng.random((1, units), dtype=np.float32)
        cases = [
            ("unknown model", lambda: grpc_infer(client, good, model="other"),
             lambda: http_infer(hport, good, model="other"), "NOT_FOUND", 404, False),
            ("too many columns", lambda: grpc_infer(client, np.zeros((1, units + 1), np.float32)),
             lambda: http_infer(hport, np.zeros((1, units + 1), np.float32)),
             "INVALID_ARGUMENT", 400, True),
            ("unknown input", lambda: grpc_infer(client, good, name="In"),
             lambda: http_infer(hport, good, name="In"), "INVALID_ARGUMENT", 400, True),
            ("too many rows", lambda: grpc_infer(client, np.zeros((MAX_ROWS + 1, 2), np.float32)),
             lambda: http_infer(hport, np.zeros((MAX_ROWS + 1, 2), np.float32)),
             "RESOURCE_EXHAUSTED", 413, True),
        ]
        for what, by_grpc, by_http, code, status, counted in cases:
            g = grpc_error(by_grpc)
            h = by_http()
            check(g is not None and g[0] == code and h[0] == status and g[1] == h[1],
                  f"{what}: gRPC {g}, HTTP {h}")
            sent_fail += 2 if counted else 0
        # A datatype other than FP32 (FP64 through gRPC; a JSON FP64 tensor through HTTP).
        x = tg.InferInput("Input", [1, 2], "FP64")
        x.set_data_from_numpy(np.zeros((1, 2), np.float64))
        g = grpc_error(lambda: client.infer(MODEL, [x]))
        h = http_infer(hport, np.zeros((1, 2), np.float32), datatype="FP64")
        check(g is not None and g[0] == "INVALID_ARGUMENT" and h[0] == 400 and g[1] == h[1] and
              "is not served; use FP32" in g[1], f"FP64: gRPC {g}, HTTP {h}")
        sent_fail += 2
        # What only gRPC can get wrong: raw bytes that are not whole floats, raw beside typed.
        req = service_pb2.ModelInferRequest(model_name=MODEL)
        req.inputs.add(name="Input", datatype="FP32", shape=[1, 1])
        req.raw_input_contents.append(b"\x00\x00\x80")
        g = grpc_error(lambda: stub.ModelInfer(req, timeout=30))
        check(g is not None and g[0] == "INVALID_ARGUMENT" and "not a whole number" in g[1],
              f"3 raw bytes: {g}")
        req.raw_input_contents[0] = b"\x00\x00\x80\x3f"
        req.inputs[0].contents.fp32_contents.append(1.0)
        g = grpc_error(lambda: stub.ModelInfer(req, timeout=30))
        check(g is not None and g[0] == "INVALID_ARGUMENT" and "beside raw_input_contents" in g[1],
              f"raw and typed: {g}")
        # A message over --max-body: refused by gRPC itself.
        big = np.zeros((1, MAX_BODY // 4 + 16), np.float32)
        g = grpc_error(lambda: grpc_infer(client, big))
        check(g is not None and g[0] == "RESOURCE_EXHAUSTED", f"message over --max-body: {g}")
        g = grpc_error(lambda: grpc_infer(client, good, version="7"))
        check(g is not None and g[0] == "NOT_FOUND" and "no version '7'" in g[1],
              f"unknown version: {g}")

        # 16 clients of each protocol at once: every answer is the one the row gets alone.
        rows = [rng.random((1 + i % 3, units), dtype=np.float32) for i in range(32)]
        alone = [http_infer(hport, r)[1] for r in rows]
        sent_ok += len(rows)
        rows_ok += sum(r.shape[0] for r in rows)

        def by_grpc(i):
            c = tg.InferenceServerClient(f"127.0.0.1:{gport}")
            return [np.array_equal(grpc_infer(c, rows[i]), alone[i]) for _ in range(10)]

        def by_http(i):
            return [np.array_equal(http_infer(hport, rows[i])[1], alone[i]) for _ in range(10)]

        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            results = list(pool.map(by_grpc, range(16))) + list(pool.map(by_http, range(16, 32)))
        check(all(all(r) for r in results),
              "concurrent answers differ from the rows' answers alone")
        sent_ok += 320
        rows_ok += 10 * sum(r.shape[0] for r in rows)

        # Statistics: exactly what was sent, the same through both protocols.
        stats = client.get_inference_statistics(MODEL, as_json=True)["model_stats"][0]
        hstats = http_json(hport, "GET", f"/v2/models/{MODEL}/stats")[1]["model_stats"][0]
        s = stats["inference_stats"]
        hs = hstats["inference_stats"]
        count = lambda d, k: int(d[k].get("count", 0))
        check(count(s, "success") == count(hs, "success") == sent_ok and
              count(s, "fail") == count(hs, "fail") == sent_fail and
              int(stats["inference_count"]) == hstats["inference_count"] == rows_ok and
              all(count(s, k) == sent_ok for k in
                  ("queue", "compute_input", "compute_infer", "compute_output")) and
              int(stats["execution_count"]) == hstats["execution_count"] ==
              sum(count(b, "compute_infer") for b in hstats["batch_stats"]),
              f"statistics: sent {sent_ok} ok / {sent_fail} failed / {rows_ok} rows; "
              f"gRPC {stats}; HTTP {hstats}")
        # Metrics: the gRPC calls by method and code, and under their endpoints.
        c = http.client.HTTPConnection("127.0.0.1", hport, timeout=30)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        grpc_ok = int(re.search(
            r'nn_serve_grpc_requests_total\{method="ModelInfer",code="OK"\} (\d+)', text).group(1))
        infer_ok = int(re.search(r'nn_serve_requests_total\{endpoint="infer",code="200"\} (\d+)',
                                 text).group(1))
        check(grpc_ok == 4 + 1 + 160 and infer_ok == sent_ok,
              f"metrics: ModelInfer OK {grpc_ok}, infer 200 {infer_ok} (sent {sent_ok})")

        # A reload shows through gRPC: version 2, and version 1 is gone.
        os.replace("net2.nc", "network.nc")
        proc.send_signal(signal.SIGHUP)
        deadline = time.time() + 30
        while time.time() < deadline and client.get_model_metadata(MODEL).versions != ["2"]:
            time.sleep(0.05)
        rows = rng.random((2, units), dtype=np.float32)
        check(np.array_equal(grpc_infer(client, rows, version="2"), http_infer(hport, rows)[1]),
              "after the reload: gRPC and HTTP differ")
        g = grpc_error(lambda: grpc_infer(client, rows, version="1"))
        check(g is not None and g[0] == "NOT_FOUND", f"version 1 after the reload: {g}")
        # A health watcher sees SERVING now and NOT_SERVING when the server drains (below).
        watcher = threading.Thread(target=watch, args=(gport, watched, first_status), daemon=True)
        watcher.start()
        check(first_status.wait(10) and watched[:1] == ["SERVING"],
              f"grpc.health.v1 Watch: first status {watched}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = "killed after 60 s"
    check(code == 0, f"nn-serve exited {code} after SIGTERM: {open('grpc.log').read()}")
    if first_status.is_set():
        watcher.join(30)
        check(not watcher.is_alive() and "NOT_SERVING" in watched,
              f"grpc.health.v1 Watch across SIGTERM saw {watched}"
              f"{' and is still open' if watcher.is_alive() else ''}")
    if failures:
        raise SystemExit(f"{len(failures)} check(s) failed")
    print(f"serve_grpc_check: OK ({sent_ok} answered and {sent_fail} refused inference "
          "requests agree across gRPC and HTTP)")


if __name__ == "__main__":
    main()
