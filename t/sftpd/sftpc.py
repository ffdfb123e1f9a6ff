#!/usr/bin/env python3
"""A small SFTP v3 client for fsd-sftp's tests: raw packets on a TCP
connection, so that tests can pipeline, reorder, and send malformed
input that real clients never send.

  sftpc.py proto PORT ROOT        protocol checks against the files of ROOT
  sftpc.py slow PORT SLOWDIR N    a fast STAT answered while N connections
                                  list the slow directory SLOWDIR
  sftpc.py leave PORT SLOWDIR N   N connections start listings, open files
                                  and disconnect mid-way
  sftpc.py closes PORT DIR MOUNT N  N files of DIR (on a slowfs --slow-close
                                  mounted at MOUNT) closed at once; a fast
                                  STAT on another connection is answered
                                  while the closes are pending
  sftpc.py probe PORT PATH...     per path: STAT, OPEN+READ, OPENDIR results
  sftpc.py burst PORT ROOT FILE N  N READs of 255 KiB of FILE sent at once,
                                  more than the server queues: every
                                  reply arrives, with the file's bytes
  sftpc.py oomburst PORT FILE N   the same where the server cannot grow
                                  its reply buffer: the connection closes
Prints "ok - ..." / "not ok - ..." lines; exits 1 on any failure."""
import os, random, select, socket, stat, struct, sys, threading, time

FXP = dict(INIT=1, VERSION=2, OPEN=3, CLOSE=4, READ=5, WRITE=6, LSTAT=7,
           FSTAT=8, SETSTAT=9, OPENDIR=11, READDIR=12, REMOVE=13, MKDIR=14,
           REALPATH=16, STAT=17, RENAME=18, READLINK=19, STATUS=101,
           HANDLE=102, DATA=103, NAME=104, ATTRS=105)
OK, EOF, NO_SUCH_FILE, PERM, FAILURE, BAD_MESSAGE, _, _, UNSUPPORTED = range(9)
failures = 0


def report(ok, what):
    global failures
    print(("ok - " if ok else "not ok - ") + what, flush=True)
    if not ok:
        failures += 1


def s(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack(">I", len(b)) + b


class Conn:
    def __init__(self, port, init=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.next_id = 1
        if init:
            self.raw(struct.pack(">BI", FXP["INIT"], 3))
            t, payload = self.packet()
            assert t == FXP["VERSION"] and struct.unpack(">I", payload[:4])[0] == 3

    def raw(self, body):
        self.sock.sendall(struct.pack(">I", len(body)) + body)

    def send(self, kind, payload=b""):
        rid = self.next_id
        self.next_id += 1
        self.raw(struct.pack(">BI", FXP[kind], rid) + payload)
        return rid

    def packet(self):
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack(">I", self.buf[:4])[0]
                if len(self.buf) >= 4 + n:
                    p = self.buf[4:4 + n]
                    self.buf = self.buf[4 + n:]
                    return p[0], p[1:]
            d = self.sock.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d

    def reply(self):
        t, p = self.packet()
        return t, struct.unpack(">I", p[:4])[0], p[4:]

    def call(self, kind, payload=b""):
        rid = self.send(kind, payload)
        t, got, p = self.reply()
        assert got == rid, (got, rid)
        return t, p

    def closed(self, timeout=10):
        """True if the server closes the connection within timeout."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def close(self):
        self.sock.close()


def status(p):
    return struct.unpack(">I", p[:4])[0]


def attrs(p):
    flags, = struct.unpack(">I", p[:4])
    off, a = 4, {}
    if flags & 1:
        a["size"], = struct.unpack(">Q", p[off:off + 8]); off += 8
    if flags & 2:
        a["uid"], a["gid"] = struct.unpack(">II", p[off:off + 8]); off += 8
    if flags & 4:
        a["mode"], = struct.unpack(">I", p[off:off + 4]); off += 4
    if flags & 8:
        a["atime"], a["mtime"] = struct.unpack(">II", p[off:off + 8]); off += 8
    return a, off


def names(p):
    n, = struct.unpack(">I", p[:4])
    off, out = 4, []
    for _ in range(n):
        l, = struct.unpack(">I", p[off:off + 4]); name = p[off + 4:off + 4 + l]; off += 4 + l
        l, = struct.unpack(">I", p[off:off + 4]); longname = p[off + 4:off + 4 + l]; off += 4 + l
        a, k = attrs(p[off:]); off += k
        out.append((name.decode(errors="surrogateescape"), longname.decode(errors="replace"), a))
    return out


def listdir(c, path):
    t, p = c.call("OPENDIR", s(path))
    if t != FXP["HANDLE"]:
        return None, status(p)
    h = p[4:4 + struct.unpack(">I", p[:4])[0]]
    out = []
    while True:
        t, p = c.call("READDIR", s(h))
        if t == FXP["STATUS"]:
            st = status(p)
            break
        out += names(p)
    c.call("CLOSE", s(h))
    return out, st


def proto(port, root):
    c = Conn(port)
    report(True, "INIT answered with VERSION 3")
    st = os.lstat(os.path.join(root, "a.txt"))
    t, p = c.call("STAT", s("/a.txt"))
    report(t == FXP["ATTRS"] and attrs(p)[0]["size"] == st.st_size and
           attrs(p)[0]["mtime"] == int(st.st_mtime), "STAT gives size and mtime")
    t, p = c.call("LSTAT", s("link"))
    report(t == FXP["ATTRS"] and stat.S_ISLNK(attrs(p)[0]["mode"]), "LSTAT of a symlink")
    t, p = c.call("STAT", s("link"))
    report(t == FXP["ATTRS"] and stat.S_ISREG(attrs(p)[0]["mode"]), "STAT follows a symlink")
    t, p = c.call("READLINK", s("/link"))
    report(t == FXP["NAME"] and names(p)[0][0] == "a.txt", "READLINK")
    t, p = c.call("REALPATH", s("/x/../y/./z//"))
    report(t == FXP["NAME"] and names(p)[0][0] == "/y/z", "REALPATH is lexical")
    t, p = c.call("REALPATH", s("../../.."))
    report(t == FXP["NAME"] and names(p)[0][0] == "/", "REALPATH never leaves the root")
    t, p = c.call("STAT", s("/../../../../etc/passwd"))
    report(t == FXP["STATUS"] and status(p) == NO_SUCH_FILE, "/../etc/passwd is ROOT/etc/passwd")
    t, p = c.call("STAT", s("esc"))
    report(t == FXP["STATUS"] and status(p) == PERM, "an escaping symlink is refused")
    t, p = c.call("STAT", s("missing"))
    report(t == FXP["STATUS"] and status(p) == NO_SUCH_FILE, "missing file")

    # OPEN / READ / FSTAT / CLOSE
    data = open(os.path.join(root, "big.bin"), "rb").read()
    t, p = c.call("OPEN", s("big.bin") + struct.pack(">II", 1, 0))
    h = s(p[4:4 + struct.unpack(">I", p[:4])[0]])
    got, off, ids = {}, 0, {}
    while off < len(data) + 40000:    # pipelined, answered in any order
        ids[c.send("READ", h + struct.pack(">QI", off, 32768))] = off
        off += 32768
    eofs = 0
    for _ in range(len(ids)):
        t, rid, p = c.reply()
        if t == FXP["DATA"]:
            got[ids[rid]] = p[4:4 + struct.unpack(">I", p[:4])[0]]
        elif t == FXP["STATUS"] and status(p) == EOF:
            eofs += 1
    body = b"".join(got[k] for k in sorted(got))
    report(body == data and eofs >= 1, "pipelined READs give the file, then EOF")
    # Only the first page in the page cache: a read that stops there must
    # go on (sshfs takes a short DATA for the end of the file).
    fd = os.open(os.path.join(root, "big.bin"), os.O_RDONLY)
    os.fdatasync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.pread(fd, 4096, 0)
    os.close(fd)
    t, p = c.call("READ", h + struct.pack(">QI", 0, 65536))
    report(t == FXP["DATA"] and p[4:] == data[:65536], "a READ partly in the page cache is whole")
    t, p = c.call("READ", h + struct.pack(">QI", 0, 10 ** 9))
    report(t == FXP["DATA"] and 0 < struct.unpack(">I", p[:4])[0] <= 256 * 1024,
           "an oversized READ is shortened")
    t, p = c.call("FSTAT", h)
    report(t == FXP["ATTRS"] and attrs(p)[0]["size"] == len(data), "FSTAT")
    t, p = c.call("CLOSE", h)
    report(t == FXP["STATUS"] and status(p) == OK, "CLOSE")
    t, p = c.call("READ", h + struct.pack(">QI", 0, 10))
    report(t == FXP["STATUS"] and status(p) == FAILURE, "a closed handle is invalid")

    # read-only
    t, p = c.call("OPEN", s("new.txt") + struct.pack(">II", 0x1a, 0))
    report(t == FXP["STATUS"] and status(p) == PERM and
           not os.path.exists(os.path.join(root, "new.txt")), "OPEN for writing is refused")
    for kind, payload in (("REMOVE", s("a.txt")), ("MKDIR", s("d2") + struct.pack(">I", 0)),
                          ("RENAME", s("a.txt") + s("b.txt"))):
        t, p = c.call(kind, payload)
        report(t == FXP["STATUS"] and status(p) == PERM, kind + " is refused")
    report(os.path.exists(os.path.join(root, "a.txt")), "nothing was removed")

    # directories
    ents, st = listdir(c, "/many")
    want = sorted(os.listdir(os.path.join(root, "many")) + [".", ".."])
    report(ents is not None and sorted(e[0] for e in ents) == want and st == EOF,
           "OPENDIR/READDIR list every entry, then EOF (%d)" % len(want))
    import re
    ls = re.compile(r"^[-dlcbps][-rwxsStT]{9} +\d+ \d+ +\d+ +(\d+) [A-Z][a-z]{2} [ \d]\d ( \d{4}|\d\d:\d\d) (.*)$")
    good = ents is not None
    for e in ents or []:
        m = ls.match(e[1])
        size = os.lstat(os.path.join(root, "many", e[0])).st_size
        good = good and m is not None and m.group(3) == e[0] and int(m.group(1)) == size
    report(good, "long names read as ls -l (mode, links, owner, group, size, date, name)")
    ents, st = listdir(c, "/a.txt")
    report(ents is None and st == NO_SUCH_FILE, "OPENDIR of a file fails")

    # out of order: a READDIR of the many-entry directory and STATs behind it
    t, p = c.call("OPENDIR", s("many"))
    dh = s(p[4:4 + struct.unpack(">I", p[:4])[0]])
    first = [c.send("READDIR", dh), c.send("READDIR", dh)]
    stats = [c.send("STAT", s("a.txt")) for _ in range(50)]
    seen = []
    for _ in range(52):
        t, rid, p = c.reply()
        seen.append(rid)
    report(sorted(seen) == sorted(first + stats), "52 pipelined requests all answered")
    report(seen.index(first[0]) < seen.index(first[1]), "READDIRs of one handle answered in order")
    c.call("CLOSE", dh)

    # malformed requests: an error, and the connection goes on
    t, p = c.call("STAT", struct.pack(">I", 1000) + b"abc")
    report(t == FXP["STATUS"] and status(p) == BAD_MESSAGE, "string longer than the packet")
    t, p = c.call("STAT", s(b"a\0b"))
    report(t == FXP["STATUS"] and status(p) == BAD_MESSAGE, "NUL inside a path")
    t, p = c.call("READ", b"\0\0")
    report(t == FXP["STATUS"] and status(p) == BAD_MESSAGE, "truncated READ")
    t, p = c.call("READ", s("12345678") + struct.pack(">QI", 0, 1))
    report(t == FXP["STATUS"] and status(p) == FAILURE, "unknown handle")
    t, p = c.call("OPEN", s("a.txt") + struct.pack(">II", 1, 0x80000000) + struct.pack(">I", 0xffffffff))
    report(t == FXP["STATUS"] and status(p) == BAD_MESSAGE, "attribute extension count beyond the packet")
    rid = c.next_id
    c.raw(struct.pack(">BI", 250, rid))
    t, got, p = c.reply()
    report(t == FXP["STATUS"] and got == rid and status(p) == UNSUPPORTED, "unknown type")
    t, p = c.call("STAT", s("a.txt"))
    report(t == FXP["ATTRS"], "the connection still serves")

    # fuzz: random packets of every type; every one gets a reply
    rnd = random.Random(int(os.environ.get("SFTPD_FUZZ_SEED", "1")))
    ok = True
    for i in range(300):
        kind = rnd.choice([3, 4, 5, 7, 8, 11, 12, 16, 17, 19, rnd.randrange(256)])
        if kind in (1, 2):
            continue
        body = bytes(rnd.randrange(256) for _ in range(rnd.randrange(40)))
        if rnd.random() < 0.5:
            body = s(rnd.choice(["a.txt", "many", "/", "..", "link", "x" * 300])) + body
        rid = c.next_id
        c.next_id += 1
        c.raw(struct.pack(">BI", kind, rid) + body)
        try:
            t, got, p = c.reply()
        except EOFError:
            ok = False
            break
        ok = ok and got == rid
    report(ok, "300 random packets, each answered")

    # framing errors close only that connection
    for what, data in (("length 0", struct.pack(">I", 0)),
                       ("length 2^32-1", struct.pack(">I", 0xffffffff) + b"x" * 100),
                       ("length 3", struct.pack(">IBBB", 3, 17, 0, 0))):
        d = Conn(port)
        d.sock.sendall(data)
        report(d.closed(), "packet " + what + " closes the connection")
        d.close()
    d = Conn(port, init=False)
    d.raw(struct.pack(">BI", FXP["STAT"], 1) + s("a.txt"))
    report(d.closed(), "a first packet other than INIT closes the connection")
    d.close()
    d = Conn(port)
    d.sock.sendall(struct.pack(">I", 5000) + b"\x11" * 100)   # then gone
    d.close()
    t, p = c.call("STAT", s("a.txt"))
    report(t == FXP["ATTRS"], "the server outlives them")
    c.close()


def slow(port, slowdir, n):
    # On one connection: a READDIR first, a STAT behind it, the STAT first
    # (the first one: later scans of the directory may join a finished one).
    c = Conn(port)
    t, p = c.call("OPENDIR", s(slowdir))
    h = s(p[4:4 + struct.unpack(">I", p[:4])[0]])
    t0 = time.time()
    rd = c.send("READDIR", h)
    st = c.send("STAT", s("fast.txt"))
    order = [c.reply()[1]]
    t1 = time.time()
    order.append(c.reply()[1])
    t2 = time.time()
    print("# first reply after %.3f s, second after %.3f s" % (t1 - t0, t2 - t0))
    report(order == [st, rd], "one connection answers out of order (STAT before READDIR)")
    c.close()
    fast = Conn(port)
    conns = [Conn(port) for _ in range(n)]
    handles = []
    # All at once: each scan starts when its OPENDIR completes, and its
    # first batch takes a getdents and a window of stats, each delayed.
    for c in conns:
        c.send("OPENDIR", s(slowdir))
    for c in conns:
        t, _, p = c.reply()
        if t != FXP["HANDLE"]:
            report(False, "OPENDIR %s: status %d" % (slowdir, status(p)))
            return
        handles.append(s(p[4:4 + struct.unpack(">I", p[:4])[0]]))
    for c, h in zip(conns, handles):
        c.send("READDIR", h)
    t0 = time.time()
    t, p = fast.call("STAT", s("fast.txt"))
    print("# STAT answered in %.3f s" % (time.time() - t0))
    pending = [c for c in conns if not select.select([c.sock], [], [], 0)[0]]
    report(t == FXP["ATTRS"], "STAT of a fast path answered")
    report(len(pending) == n, "... while %d of %d slow READDIRs were still pending" % (len(pending), n))
    for c in conns:
        c.reply()
    total = len(os.listdir(os.environ["SFTPD_BACK"])) + 2
    for c in conns[1:2]:
        ents, stt = listdir(c, slowdir)
        report(ents is not None and len(ents) == total and stt == EOF,
               "the slow listing is whole (%s of %d)" % (len(ents) if ents else None, total))
    for c in conns + [fast]:
        c.close()


def ahead(port, path):
    # A READDIR whose entries are at hand (the rest of a batch) and a STAT
    # sent behind it in one segment: the STAT is answered first, the NAME
    # reply being built in a turn of its own. Twice: once mid-batch, once
    # with the directory's last entries.
    c = Conn(port)
    c.call("STAT", s("a.txt"))  # in the dentry cache: answered inline
    t, p = c.call("OPENDIR", s(path))
    h = s(p[4:4 + struct.unpack(">I", p[:4])[0]])
    t, p = c.call("READDIR", h)
    got = len(names(p)) if t == FXP["NAME"] else 0
    for round in (1, 2):
        rd, st = c.next_id, c.next_id + 1
        c.next_id += 2
        c.sock.sendall(b"".join(
            struct.pack(">I", len(b)) + b for b in (
                struct.pack(">BI", FXP["READDIR"], rd) + h,
                struct.pack(">BI", FXP["STAT"], st) + s("a.txt"))))
        replies = [c.reply() for _ in range(2)]
        order = [r[1] for r in replies]
        report(order == [st, rd], "round %d: STAT answered before the READDIR "
               "ahead of it (order %s, READDIR %d, STAT %d)" % (round, order, rd, st))
        for t, rid, p in replies:
            if rid == rd and t == FXP["NAME"]:
                got += len(names(p))
    while True:
        t, p = c.call("READDIR", h)
        if t != FXP["NAME"]:
            break
        got += len(names(p))
    report(t == FXP["STATUS"] and status(p) == EOF and got == len(os.listdir(
        os.path.join(os.environ["SFTPD_ROOT"], path.lstrip("/")))) + 2,
        "the listing is whole (%d entries)" % got)
    c.close()


def leave(port, slowdir, n):
    for i in range(n):
        c = Conn(port)
        t, p = c.call("OPENDIR", s(slowdir))
        h = s(p[4:4 + struct.unpack(">I", p[:4])[0]]) if t == FXP["HANDLE"] else b""
        c.send("READDIR", h)
        c.send("OPEN", s("fast.txt") + struct.pack(">II", 1, 0))
        c.send("STAT", s(slowdir + "/e0001"))
        if i % 2:
            c.send("OPENDIR", s(slowdir))
        time.sleep(0.02)
        c.close()
    report(True, "%d connections left mid-listing" % n)


def staggered(port, slowdir, n, gap_ms):
    # n listings of one slow directory on n connections, started gap_ms
    # apart, each read to its end: every listing must be whole.
    total = len(os.listdir(os.path.join(os.environ["SFTPD_ROOT"], slowdir.lstrip("/")))) + 2
    got = [None] * n

    def lister(i):
        time.sleep(i * gap_ms / 1000.0)
        c = Conn(port)
        got[i] = listdir(c, slowdir)
        c.close()

    threads = [threading.Thread(target=lister, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    whole = sum(1 for g in got if g and g[0] is not None and len(g[0]) == total and g[1] == EOF)
    report(whole == n, "%d of %d staggered listings whole (%d entries)" % (whole, n, total))


def flushes(mount):
    for line in open(os.path.join(mount, ".slowfs-stats")):
        k, v = line.split()
        if k == "flush":
            return int(v)
    return 0


def closes(port, d, mount, n):
    c, fast = Conn(port), Conn(port)
    files = sorted(os.listdir(mount))[:n]
    ids = [c.send("OPEN", s(d + "/" + f) + struct.pack(">II", 1, 0)) for f in files]
    handles = {}
    for _ in ids:
        t, rid, p = c.reply()
        if t != FXP["HANDLE"]:
            report(False, "OPEN: status %d" % status(p))
            return
        handles[rid] = s(p[4:4 + struct.unpack(">I", p[:4])[0]])
    before = flushes(mount)
    t0 = time.time()
    for rid in ids:
        c.send("CLOSE", handles[rid])
    # Once the server has started a close, a close run on its loop would
    # hold it there for the file system's delay, n times over.
    while flushes(mount) == before and time.time() - t0 < 10:
        time.sleep(0.001)
    t1 = time.time()
    t, p = fast.call("STAT", s("fast.txt"))
    t2 = time.time()
    pending = not select.select([c.sock], [], [], 0)[0]
    print("# first close reached the file system after %.3f s; STAT answered in %.3f s"
          % (t1 - t0, t2 - t1))
    report(t == FXP["ATTRS"], "STAT of a fast path answered")
    report(pending, "... while %d slow CLOSEs were pending" % n)
    sts = [status(c.reply()[2]) for _ in ids]
    t3 = time.time()
    print("# %d CLOSEs answered after %.3f s" % (n, t3 - t0))
    report(sts == [OK] * n, "every CLOSE answered OK once its close is done")
    report(flushes(mount) - before == n, "each file closed once (%d flushes)" % (flushes(mount) - before))
    t, p = c.call("READ", handles[ids[0]] + struct.pack(">QI", 0, 10))
    report(t == FXP["STATUS"] and status(p) == FAILURE, "a closed handle is invalid")
    # A client that goes away while its CLOSEs wait for the file system:
    # the closes go on without it.
    ids = [c.send("OPEN", s(d + "/" + f) + struct.pack(">II", 1, 0)) for f in files]
    hs = [c.reply()[2] for _ in ids]
    before = flushes(mount)
    for p in hs:
        c.send("CLOSE", s(p[4:4 + struct.unpack(">I", p[:4])[0]]))
    while flushes(mount) == before and time.time() - t3 < 10:
        time.sleep(0.001)
    c.close()
    t, p = fast.call("STAT", s("fast.txt"))
    report(t == FXP["ATTRS"], "a client gone with its CLOSEs pending: the server goes on")
    fast.close()


def probe(port, paths):
    """Prints, per path, what STAT, READ of the file and OPENDIR give."""
    c = Conn(port)
    for path in paths:
        t, p = c.call("STAT", s(path))
        st = "attrs" if t == FXP["ATTRS"] else "status%d" % status(p)
        t, p = c.call("OPEN", s(path) + struct.pack(">II", 1, 0))
        if t == FXP["HANDLE"]:
            h = s(p[4:4 + struct.unpack(">I", p[:4])[0]])
            t, p = c.call("READ", h + struct.pack(">QI", 0, 100))
            rd = "data" if t == FXP["DATA"] else "status%d" % status(p)
            c.call("CLOSE", h)
        else:
            rd = "status%d" % status(p)
        ents, d = listdir(c, path)
        ls = "list%d" % len(ents) if ents is not None else "status%d" % d
        print("%s %s %s %s" % (path, st, rd, ls))
    c.close()


READ_MAX = 255 * 1024


def send_burst(c, path, n):
    """Opens path, then sends n READs of it in one write; their ids."""
    t, p = c.call("OPEN", s(path) + struct.pack(">II", 1, 0))
    assert t == FXP["HANDLE"], (t, p)
    h = s(p[4:4 + struct.unpack(">I", p[:4])[0]])
    ids = list(range(c.next_id, c.next_id + n))
    c.next_id += n
    c.sock.sendall(b"".join(
        struct.pack(">I", len(b)) + b for b in (
            struct.pack(">BI", FXP["READ"], rid) + h + struct.pack(">QI", 0, READ_MAX)
            for rid in ids)))
    return ids


def burst(port, root, path, n):
    # The replies of n READs outgrow what a connection queues: parsing
    # stops with requests left in the input, and must resume as the
    # client reads, though nothing more comes in.
    with open(os.path.join(root, path.lstrip("/")), "rb") as f:
        want = f.read(READ_MAX)
    c = Conn(port)
    ids = send_burst(c, path, n)
    c.sock.settimeout(10)
    got, bad = set(), 0
    try:
        while len(got) < n:
            t, rid, p = c.reply()
            got.add(rid)
            if t != FXP["DATA"] or p[4:] != want:
                bad += 1
    except (socket.timeout, EOFError) as e:
        print("# %s after %d replies" % (type(e).__name__, len(got)))
    report(got == set(ids) and bad == 0,
           "%d READs of 255 KiB sent at once: %d answered, %d wrong" % (n, len(got), bad))
    c.close()


def oomburst(port, path, n):
    c = Conn(port)
    send_burst(c, path, n)
    got = 0
    c.sock.settimeout(10)
    try:
        while got < n:
            c.reply()
            got += 1
        closed = False
    except (EOFError, ConnectionResetError):
        closed = True
    except socket.timeout:
        closed = False
    report(closed, "a reply buffer that cannot grow closes the connection "
           "(after %d of %d replies)" % (got, n))
    c.close()


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "probe":
        probe(port, sys.argv[3:])
    elif cmd == "proto":
        proto(port, sys.argv[3])
    elif cmd == "slow":
        slow(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "ahead":
        ahead(port, sys.argv[3])
    elif cmd == "leave":
        leave(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "burst":
        burst(port, sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif cmd == "oomburst":
        oomburst(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "staggered":
        staggered(port, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "closes":
        closes(port, sys.argv[3], sys.argv[4], int(sys.argv[5]))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
