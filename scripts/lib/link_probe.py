"""Measures a TCP path the way scripts/check_scaling_netns.sh needs it checked: the round trip of
a 1-byte message (TCP_NODELAY, median of many) and the rate of a bulk transfer.

  python3 link_probe.py serve PORT            # echo 1-byte messages, then sink a bulk transfer
  python3 link_probe.py probe HOST PORT MB    # prints "rtt_us <median> rate_MBps <MB/s>"

The server answers one client and exits."""
import socket
import statistics
import sys
import time


def serve(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(1)
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:  # echo phase: 1-byte messages; b"E" ends it
        b = c.recv(1)
        if not b or b == b"E":
            break
        c.sendall(b)
    total = 0
    while True:  # bulk phase: count bytes until the client closes its side, then acknowledge
        b = c.recv(1 << 20)
        if not b:
            break
        total += len(b)
    c.sendall(str(total).encode())
    c.close()


def probe(host, port, megabytes):
    for _ in range(100):  # the server may still be starting
        try:
            c = socket.create_connection((host, port), timeout=30)
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit(f"link_probe: cannot connect to {host}:{port}")
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    for _ in range(200):
        t = time.perf_counter()
        c.sendall(b"x")
        c.recv(1)
        rtts.append(time.perf_counter() - t)
    c.sendall(b"E")
    block = b"\0" * (1 << 20)
    n = int(megabytes)
    # warm-up megabytes open the congestion window; the rate is timed over the rest
    warm = max(1, n // 8)
    for _ in range(warm):
        c.sendall(block)
    t = time.perf_counter()
    for _ in range(n):
        c.sendall(block)
    c.shutdown(socket.SHUT_WR)
    got = int(c.recv(64).decode())
    seconds = time.perf_counter() - t
    if got != (n + warm) << 20:
        sys.exit(f"link_probe: the server received {got} bytes of {(n + warm) << 20}")
    print(f"rtt_us {statistics.median(rtts) * 1e6:.0f} rate_MBps {n * (1 << 20) / seconds / 1e6:.0f}")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        probe(sys.argv[2], int(sys.argv[3]), sys.argv[4])
