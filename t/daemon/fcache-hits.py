# python3 fcache-hits.py PORT ROOT PATH...: fetches each PATH twice on
# one connection and prints how many second fetches the small-file cache
# answered: the file was not opened for it (an inotify watch of our own
# on the file sees every open) and the body is the file's bytes. With
# RANGE=FIRST-LAST in the environment both fetches ask for those bytes
# only (206, and the body is that part of the file).
import ctypes, http.client, os, sys

IN_OPEN = 0x20
libc = ctypes.CDLL(None, use_errno=True)
ifd = libc.inotify_init1(os.O_NONBLOCK)
if ifd < 0:
    sys.exit("inotify_init1: " + os.strerror(ctypes.get_errno()))
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)


part = os.environ.get("RANGE")


def get(path):
    conn.request("GET", "/" + path, headers={"Range": "bytes=" + part} if part else {})
    r = conn.getresponse()
    body = r.read()
    return body if r.status == (206 if part else 200) else None


def opened():
    n = 0
    while True:
        try:
            n += len(os.read(ifd, 65536))
        except BlockingIOError:
            return n > 0


hits = wrong = 0
for path in sys.argv[3:]:
    full = os.path.join(sys.argv[2], path)
    wd = libc.inotify_add_watch(ifd, full.encode(), IN_OPEN)
    if wd < 0:
        sys.exit("inotify_add_watch %s: %s" % (full, os.strerror(ctypes.get_errno())))
    want = open(full, "rb").read()
    if part:
        first, last = (int(x) for x in part.split("-"))
        want = want[first:last + 1]
    opened()
    first = get(path)
    opened()
    second = get(path)
    if first != want or second != want:
        wrong += 1
    elif not opened():
        hits += 1
    libc.inotify_rm_watch(ifd, wd)
print("%d hits, %d wrong" % (hits, wrong))
