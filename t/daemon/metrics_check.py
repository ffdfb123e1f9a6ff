# python3 metrics_check.py COMMAND ...: the checks of t/daemon/metrics*.sh.
# Prints "ok - ..." / "not ok - ..." lines; exits with the number of
# failures.
#
#   selftest                 the exposition parser refuses what it must
#   counters URL SURL ROOT   counters move as requests are made (URL: the
#                            files, SURL: a status listener; ROOT: files)
#   endpoints SURL           /metrics parses, /status is JSON, methods
#   drain URL PID BIG LOG    /healthz flips to 503 while the worker drains
#                            (LOG: the daemon's error log, to see it stop)
import http.client, json, math, os, re, signal, socket, sys, time, urllib.error, urllib.request

fails = 0


def check(name, cond, detail=""):
    global fails
    if cond:
        print("ok - " + name)
    else:
        fails += 1
        print("not ok - " + name + (": " + detail if detail else ""))


# ---- the text exposition format, version 0.0.4 ----

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
SAMPLE = re.compile(r"^(" + NAME + r")(\{(.*)\})?[ \t]+(\S+)([ \t]+-?[0-9]+)?[ \t]*$")
LABEL_PAIR = re.compile(r'\s*(' + LABEL + r')="((?:[^"\\\n]|\\[\\"n])*)"\s*(,|$)')
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


class Bad(Exception):
    pass


def value(s):
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    try:
        return float(s)
    except ValueError:
        raise Bad("bad value " + repr(s))


def labels(s):
    out, pos = {}, 0
    while pos < len(s):
        m = LABEL_PAIR.match(s, pos)
        if not m or m.end() == pos:
            raise Bad("bad labels " + repr(s))
        if m.group(1) in out:
            raise Bad("label %s twice" % m.group(1))
        out[m.group(1)] = m.group(2)
        pos = m.end()
    return out


def family_of(name, types):
    """the family a sample belongs to: its own name, or a histogram's
    or summary's for the _bucket/_sum/_count suffixes"""
    if name in types:
        return name
    for suf in ("_bucket", "_sum", "_count"):
        if name.endswith(suf) and types.get(name[: -len(suf)]) in ("histogram", "summary"):
            return name[: -len(suf)]
    raise Bad("sample %s has no TYPE before it" % name)


def parse(text):
    """{(name, frozenset(labels.items())): value}; raises Bad on any
    breach of the format's rules"""
    if not text.endswith("\n"):
        raise Bad("the last line does not end with a newline")
    types, helps, samples, done, order = {}, {}, {}, set(), []
    current = None
    for line in text.split("\n")[:-1]:
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not re.fullmatch(NAME, name):
                    raise Bad("bad name in " + repr(line))
                if parts[1] == "TYPE":
                    if name in types:
                        raise Bad("TYPE of %s twice" % name)
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise Bad("bad TYPE line " + repr(line))
                    if name in done or any(family_of_safe(n, types) == name for n in order):
                        raise Bad("TYPE of %s after its samples" % name)
                    types[name] = parts[3]
                else:
                    if name in helps:
                        raise Bad("HELP of %s twice" % name)
                    helps[name] = parts[3] if len(parts) == 4 else ""
            continue
        m = SAMPLE.match(line)
        if not m:
            raise Bad("bad sample line " + repr(line))
        name, lab = m.group(1), labels(m.group(3) or "")
        fam = family_of(name, types)
        if fam != current:
            if fam in done:
                raise Bad("samples of %s are not together" % fam)
            if current:
                done.add(current)
            current = fam
        if types[fam] == "counter" and not name.endswith("_total"):
            raise Bad("counter %s does not end in _total" % name)
        key = (name, frozenset(lab.items()))
        if key in samples:
            raise Bad("sample %s%s twice" % (name, lab))
        samples[key] = value(m.group(4))
        order.append(name)
    for fam, t in types.items():
        if t == "histogram":
            check_histogram(fam, samples)
    return samples


def family_of_safe(name, types):
    try:
        return family_of(name, types)
    except Bad:
        return None


def check_histogram(fam, samples):
    groups = {}
    for (name, lab), v in samples.items():
        if name == fam + "_bucket":
            d = dict(lab)
            if "le" not in d:
                raise Bad("%s without le" % name)
            le = value(d.pop("le"))
            groups.setdefault(frozenset(d.items()), []).append((le, v))
    if not groups:
        raise Bad("histogram %s has no buckets" % fam)
    for rest, buckets in groups.items():
        buckets.sort()
        if buckets[-1][0] != math.inf:
            raise Bad("histogram %s does not end in +Inf" % fam)
        for (a, va), (b, vb) in zip(buckets, buckets[1:]):
            if vb < va:
                raise Bad("histogram %s: bucket le=%g < le=%g" % (fam, b, a))
        count = samples.get((fam + "_count", rest))
        if count is None or samples.get((fam + "_sum", rest)) is None:
            raise Bad("histogram %s without _sum or _count" % fam)
        if count != buckets[-1][1]:
            raise Bad("histogram %s: +Inf %g != _count %g" % (fam, buckets[-1][1], count))


def selftest():
    good = ("# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 3\n"
            "# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
            "h_sum 0.5\nh_count 2\n")
    try:
        parse(good)
        check("parser takes a valid exposition", True)
    except Bad as e:
        check("parser takes a valid exposition", False, str(e))
    bad = {
        "sample without TYPE": "b 1\n",
        "counter without _total": "# TYPE c counter\nc 1\n",
        "buckets not cumulative": "# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
                                  "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "no +Inf bucket": "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
        "+Inf != _count": "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 2\n",
        "TYPE after samples": "# TYPE g gauge\ng 1\n# TYPE g gauge\n",
        "bad label": "# TYPE g gauge\ng{x=1} 1\n",
        "bad value": "# TYPE g gauge\ng one\n",
        "duplicate sample": "# TYPE g gauge\ng 1\ng 2\n",
        "family split": "# TYPE g gauge\n# TYPE f gauge\ng{a=\"1\"} 1\nf 1\ng{a=\"2\"} 1\n",
        "no final newline": "# TYPE g gauge\ng 1",
    }
    for what, text in bad.items():
        try:
            parse(text)
            check("parser refuses: " + what, False, "accepted")
        except Bad:
            check("parser refuses: " + what, True)


# ---- fetching ----

def fetch(url, method="GET"):
    """(status, headers, body); a fresh connection each time"""
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


class Scraper:
    """Scrapes /metrics and remembers what its own scrapes add to the
    counters: each is a GET answered 200 whose body was sent."""

    def __init__(self, surl):
        self.surl, self.n, self.bytes, self.last = surl, 0, 0, 0

    def scrape(self):
        st, h, body = fetch(self.surl + "/metrics")
        if st != 200:
            raise Bad("/metrics answered %d" % st)
        m = parse(body.decode())
        self.n += 1
        self.bytes += len(body)
        self.last = len(body)
        return m


def val(m, name, **lab):
    return m.get((name, frozenset(lab.items())), 0)


def settle(sc, base, want, what):
    """scrapes until `what` (name, labels) grew by exactly want(scrapes
    before) over base, for at most 5 s: a worker counts a request as it
    completes, which another worker's answer may not see yet"""
    deadline = time.time() + 5
    while True:
        before = sc.n
        m = sc.scrape()
        got = val(m, what[0], **what[1]) - val(base, what[0], **what[1])
        if got == want(before) or time.time() > deadline:
            return m, got, want(before)
        time.sleep(0.05)


def counters(url, surl, root):
    sc = Scraper(surl)
    base = sc.scrape()
    sizes = []
    names = sorted(f for f in os.listdir(root) if f.startswith("f"))
    for f in names:
        st, _, body = fetch(url + "/" + f)
        check("GET /%s is 200" % f, st == 200, str(st))
        sizes.append(len(body))
    pages = 0                   # error pages count as sent bytes too
    for p in ("/missing-1", "/missing-2"):
        pages += len(fetch(url + p)[2])
    st, _, listing = fetch(url + "/d/")
    check("listing answered", st == 200, str(st))
    n = len(names) + 1
    # the scrapes themselves are GETs answered 200 (all but the current)
    ok2 = ("fileserverd_requests_total", {"method": "GET", "status": "2xx"})
    m, got, want = settle(sc, base, lambda k: n + k, ok2)
    check("%d GETs count %d in the 2xx class" % (n, n), got == want,
          "grew by %d, expected %d" % (got, want))
    ok4 = {"method": "GET", "status": "4xx"}
    check("a 404 counts as 4xx", val(m, "fileserverd_requests_total", **ok4) -
          val(base, "fileserverd_requests_total", **ok4) == 2)
    sent = val(m, "fileserverd_sent_bytes_total") - val(base, "fileserverd_sent_bytes_total")
    want_b = sum(sizes) + pages + len(listing) + sc.bytes - sc.last
    check("bytes sent grow by the bodies", sent == want_b,
          "grew by %d, expected %d" % (sent, want_b))
    check("a listing counts", val(m, "fileserverd_listings_total") -
          val(base, "fileserverd_listings_total") == 1)
    cnt = val(m, "fileserverd_request_duration_seconds_count")
    tot = sum(v for (k, _), v in m.items() if k == "fileserverd_requests_total")
    check("latency histogram counts every answered request", cnt == tot, "%g != %g" % (cnt, tot))
    check("connections accepted counted",
          val(m, "fileserverd_connections_accepted_total") -
          val(base, "fileserverd_connections_accepted_total") >= n + 2)
    check("two workers summed", val(m, "fileserverd_workers") == 2)
    calls = {c: sum(val(m, "fileserverd_async_calls_total", backend=b, completion=c) -
                    val(base, "fileserverd_async_calls_total", backend=b, completion=c)
                    for b in ("uring", "pool")) for c in ("sync", "async")}
    check("file requests go through the async engine", calls["sync"] + calls["async"] > 0,
          str(calls))
    check("some calls completed synchronously (cached lookups)", calls["sync"] > 0, str(calls))
    made = val(m, "fileserverd_fibrils_created_total") - val(base, "fileserverd_fibrils_created_total")
    check("requests served on fibrils count them", made >= n, "%d < %d" % (made, n))
    # the small-file cache, on one connection (one worker's cache)
    m = cache_counts(url, sc, m, "/cached.txt", "small-file cache")
    # a large file: its first request fills the entry and is answered
    # from it, which is still the one miss
    return cache_counts(url, sc, m, "/cached-large.bin", "large file in the cache")


def cache_counts(url, sc, m, path, label):
    """GETs PATH three times on one connection (one worker's cache):
    one miss and two hits since the scrape M. Returns the scrape after."""
    c = http.client.HTTPConnection(url.split("//")[1].split(":")[0],
                                   int(url.rsplit(":", 1)[1]), timeout=10)
    for _ in range(3):
        c.request("GET", path)
        c.getresponse().read()
    c.close()
    m2 = sc.scrape()
    d = lambda k: val(m2, k) - val(m, k)
    check(label + ": 1 miss, 2 hits",
          (d("fileserverd_fcache_misses_total"), d("fileserverd_fcache_hits_total")) == (1, 2),
          "misses %d hits %d" % (d("fileserverd_fcache_misses_total"),
                                 d("fileserverd_fcache_hits_total")))
    return m2


def endpoints(surl):
    st, h, body = fetch(surl + "/metrics")
    check("/metrics is 200", st == 200, str(st))
    check("/metrics content type", h.get("Content-Type", "").startswith(
        "text/plain; version=0.0.4"), h.get("Content-Type"))
    m = {}
    try:
        m = parse(body.decode())
        check("/metrics parses as Prometheus text (%d samples)" % len(m), len(m) > 20)
    except Bad as e:
        check("/metrics parses as Prometheus text", False, str(e))
    st, h, body = fetch(surl + "/status")
    check("/status is 200 JSON", st == 200 and h.get("Content-Type") == "application/json")
    try:
        j = json.loads(body)
        sync = sum(v for (k, lab), v in m.items()
                   if k == "fileserverd_async_calls_total" and ("completion", "sync") in lab)
        allc = sum(v for (k, lab), v in m.items() if k == "fileserverd_async_calls_total")
        share = j["async"]["sync_share"]
        if allc:
            check("/status reports the synchronous share (%.3f)" % share,
                  abs(share - sync / allc) < 1e-6, "%r vs %g/%g" % (share, sync, allc))
        else:
            check("/status: no share before any call", share is None, repr(share))
        per = sum(w["requests"] for w in j["workers"]["list"])
        check("/status: the total is the workers' sum", j["requests"]["total"] == per,
              "%d != %d" % (j["requests"]["total"], per))
    except (ValueError, KeyError) as e:
        check("/status parses as JSON", False, str(e))
    st, _, body = fetch(surl + "/healthz")
    check("/healthz is 200 ok", (st, body) == (200, b"ok\n"), "%d %r" % (st, body))
    st, _, body = fetch(surl + "/metrics", "HEAD")
    check("HEAD /metrics: 200, no body", (st, body) == (200, b""))
    st, h, _ = fetch(surl + "/metrics", "DELETE")
    check("DELETE /metrics: 405 with Allow", st == 405 and "GET" in h.get("Allow", ""))
    st, _, _ = fetch(surl + "/metrics?x=1")
    check("a query string is ignored", st == 200)


def drain(surl, pid, big, log):
    """A slow download holds the worker in its drain; connections
    accepted before SIGTERM (their request heads begun, so that the
    server, which accepts once data came in, holds them) ask /healthz
    after it, one by one, until one finds the worker draining: the stop
    reaches the worker some time after the signal."""
    host, port = surl.split("//")[1].split(":")
    port = int(port)
    c = http.client.HTTPConnection(host, port, timeout=10)
    c.request("GET", "/healthz")
    r = c.getresponse()
    check("/healthz before the stop: 200 ok", (r.status, r.read()) == (200, b"ok\n"))
    c.close()
    dl = socket.create_connection((host, port))
    dl.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    dl.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
    dl.settimeout(10)
    got = dl.recv(4096)
    check("download started", got.startswith(b"HTTP/1.1 200"), repr(got[:40]))
    asks = []
    for _ in range(10):
        a = socket.create_connection((host, port))
        a.settimeout(10)
        a.sendall(b"GET /healthz HTTP/1.1\r\n")
        asks.append(a)
    time.sleep(0.3)
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 5
    while time.time() < deadline and "stopping" not in open(log, errors="replace").read():
        time.sleep(0.02)
    seen = []
    for a in asks:
        try:
            a.sendall(b"Host: x\r\n\r\n")
            st, _, body, _ = read_response(a)
            seen.append(st)
            if st == 503:
                check("/healthz while draining: 503 draining", body == b"draining\n", repr(body))
                break
        except (Bad, OSError) as e:
            seen.append(str(e))
        time.sleep(0.05)
    else:
        check("/healthz while draining: 503", False, "answers: %r" % seen)
    for a in asks:
        a.close()
    dl.close()


def read_response(s, buf=b""):
    """(status, headers, body, leftover) of one Content-Length response"""
    while b"\r\n\r\n" not in buf:
        b = s.recv(65536)
        if not b:
            raise Bad("closed before a response head")
        buf += b
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    st = int(lines[0].split()[1])
    hdr = dict(l.split(":", 1) for l in lines[1:])
    hdr = {k.lower(): v.strip() for k, v in hdr.items()}
    n = int(hdr.get("content-length", "0"))
    while len(buf) < n:
        if n > 1 << 20:
            time.sleep(0.002)
        b = s.recv(65536)
        if not b:
            raise Bad("closed after %d of %d body bytes" % (len(buf), n))
        buf += b
    return st, hdr, buf[:n], buf[n:]


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "selftest":
        selftest()
    elif cmd == "counters":
        counters(*sys.argv[2:5])
    elif cmd == "endpoints":
        endpoints(sys.argv[2])
    elif cmd == "drain":
        drain(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    sys.exit(min(fails, 100))
