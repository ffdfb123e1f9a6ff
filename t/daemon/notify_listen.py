"""notify_listen.py SOCKET DAEMON_OUT SECONDS: plays systemd's side of
sd_notify(3). Binds a unix datagram socket at SOCKET and prints, for
every datagram, the sender's pid and each assignment on a line:
    msg PID READY=1
When a datagram says READY=1, it reads the port the daemon printed on
its standard output (DAEMON_OUT) and makes one HTTP request there at
once, printing "probe STATUS" (or "probe error ..."): a service manager
starts dependent units as soon as READY=1 arrives. Exits after STOPPING=1
has come and the socket stays quiet for a moment, or after SECONDS."""
import os, re, socket, struct, sys, time, http.client

path, out_file, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o777)  # as /run/systemd/notify: the daemon may have dropped root
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
print("listening", flush=True)

def probe():
    m = re.search(r"http://127\.0\.0\.1:(\d+)/", open(out_file).read())
    if not m:
        return "error no port printed before READY=1"
    try:
        c = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=5)
        c.request("GET", "/.notify-probe")
        return str(c.getresponse().status)
    except OSError as e:
        return "error %s" % e

end = time.monotonic() + limit
stopping = False
while time.monotonic() < end:
    s.settimeout(0.5 if stopping else max(0.01, end - time.monotonic()))
    try:
        data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    except socket.timeout:
        if stopping:
            break
        continue
    pid = 0
    for level, kind, body in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = struct.unpack("iII", body[:12])[0]
    lines = data.decode("utf-8", "replace").split("\n")
    for line in lines:
        print("msg %d %s" % (pid, line), flush=True)
    if "READY=1" in lines:
        print("probe " + probe(), flush=True)
    if "STOPPING=1" in lines:
        stopping = True
