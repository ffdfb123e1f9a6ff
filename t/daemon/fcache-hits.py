# python3 fcache-hits.py PORT ROOT PATH...: fetches each PATH twice on
# one connection and prints how many second fetches the small-file cache
# answered: the file was not opened for it (an inotify watch of our own
# on the file sees every open) and the body is the file's bytes.
import ctypes, http.client, os, sys

IN_OPEN = 0x20
libc = ctypes.CDLL(None, use_errno=True)
ifd = libc.inotify_init1(os.O_NONBLOCK)
if ifd < 0:
    sys.exit("inotify_init1: " + os.strerror(ctypes.get_errno()))
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)


def get(path):
    conn.request("GET", "/" + path)
    return conn.getresponse().read()


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
