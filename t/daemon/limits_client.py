#!/usr/bin/env python3
"""Hostile clients for t/daemon/limits*.sh, all bounded in time.

  trickle PORT N SECONDS [SRC]
      N connections (from SRC, default 127.0.0.1) each send a request
      head one byte every 0.5 s, never finishing it. Prints one line per
      connection when it ends: "closed AT FIRST-LINE" (AT: seconds after
      the start, FIRST-LINE: what the server said, or "-"), or
      "open SECONDS" if still open at the end. Prints "ready" (stderr)
      once all are connected.
  slowread PORT PATH SECONDS RATE
      One GET of PATH with a 4 KiB receive buffer, read at RATE bytes a
      second. Prints "closed AT BYTES" when the server ends the
      connection before the body is complete, else "open BYTES" or
      "complete BYTES".
"""
import socket
import sys
import time


def trickle(port, n, secs, src):
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
    socks, got, done = [], {}, {}
    t0 = time.monotonic()
    for _ in range(n):
        s = socket.socket()
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        socks.append(s)
        got[s] = b""
    print("ready", file=sys.stderr, flush=True)
    pos = 0
    while time.monotonic() - t0 < secs and len(done) < n:
        for s in socks:
            if s in done:
                continue
            try:
                s.send(head[pos:pos + 1])
            except OSError:
                pass
            try:
                while True:
                    b = s.recv(4096)
                    if not b:
                        raise ConnectionResetError
                    got[s] += b
            except BlockingIOError:
                pass
            except OSError:
                done[s] = time.monotonic() - t0
        pos += 1
        time.sleep(0.5)
    for s in socks:
        first = got[s].split(b"\r\n", 1)[0].decode("latin-1") or "-"
        if s in done:
            print("closed %.1f %s" % (done[s], first))
        else:
            print("open %.1f %s" % (time.monotonic() - t0, first))
        s.close()


def slowread(port, path, secs, rate):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(1)
    t0, total, length = time.monotonic(), 0, None
    buf = b""
    while time.monotonic() - t0 < secs:
        try:
            b = s.recv(max(1, min(65536, rate // 4)))
        except socket.timeout:
            continue
        except OSError:
            b = b""
        if not b:
            print("closed %.1f %d" % (time.monotonic() - t0, total))
            return
        total += len(b)
        if length is None:
            buf += b
            if b"\r\n\r\n" in buf:
                h = buf.split(b"\r\n\r\n")[0].decode("latin-1").lower()
                for line in h.split("\r\n"):
                    if line.startswith("content-length:"):
                        length = int(line.split(":")[1]) + len(h) + 4
        if length is not None and total >= length:
            print("complete %d" % total)
            return
        time.sleep(len(b) / rate)
    print("open %d" % total)


if __name__ == "__main__":
    if sys.argv[1] == "trickle":
        trickle(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
                sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1")
    else:
        slowread(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
