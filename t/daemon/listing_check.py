#!/usr/bin/env python3
"""Client-side checks of fileserverd's directory listings (t/daemon/listing*.sh).

Every subcommand prints "ok ..." and exits 0, or prints what differs and
exits 1. Names are compared as bytes, exactly.

  match URL DIR [--dotfiles]     the listing at URL (any format, from the
                                 query or Accept) names exactly DIR's entries
  order URL DIR KEY ORDER [--dirs-first]
                                 the order is by KEY (name|size|mtime), ORDER
                                 (asc|desc), ties by name as lookup.h states
  pages URL DIR                  follow Link: rel="next" from URL; every name
                                 of DIR exactly once, in name order
  raw URL [HEADER...]            HTTP/1.1 GET on a socket, de-chunked by hand:
                                 prints status, ETag (header or trailer), body
                                 length, and whether the body was chunked
  links URL DIR                  every href of the HTML listing fetches the
                                 file it names (byte-exact)
"""
import html.parser
import json
import os
import socket
import stat
import sys
import urllib.parse
import urllib.request


def fetch(url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read(), r.headers


class Rows(html.parser.HTMLParser):
    """hrefs of the entry links, in page order: every <a> outside <h1>
    (breadcrumbs) whose href is relative and not a query (the column
    headers and the next-page link), whatever the row markup is."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.in_h1 = False
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "h1":
            self.in_h1 = True
        elif tag == "a" and not self.in_h1:
            a = dict(attrs)
            h = a.get("href")
            if h and not h.startswith(("?", "/", "#")) and "rel" not in a:
                self.hrefs.append(h)

    def handle_endtag(self, tag):
        if tag == "h1":
            self.in_h1 = False


def json_name(o, key="name"):
    if key + "_pct" in o:
        return urllib.parse.unquote_to_bytes(o[key + "_pct"])
    return o[key].encode("utf-8")


def parse(body, ctype):
    """[(name bytes, entry dict or None)] in listing order."""
    ctype = (ctype or "").split(";")[0].strip()
    if ctype == "application/json":
        doc = json.loads(body)
        return [(json_name(e), e) for e in doc["entries"]], doc
    if ctype == "application/x-ndjson":
        out = []
        for line in body.split(b"\n"):
            if line:
                e = json.loads(line)
                out.append((json_name(e), e))
        return out, None
    p = Rows()
    p.feed(body.decode("utf-8"))  # the page must be valid UTF-8
    out = []
    for h in p.hrefs:
        if h == "../":
            continue
        b = urllib.parse.unquote_to_bytes(h)
        out.append((b[:-1] if b.endswith(b"/") else b, None))
    return out, None


def dir_names(d, dotfiles=False):
    return sorted(n for n in os.listdir(os.fsencode(d))
                  if dotfiles or not n.startswith(b"."))


def cmd_match(url, d, *flags):
    body, h = fetch(url)
    got, _ = parse(body, h.get("Content-Type"))
    names = [n for n, _ in got]
    want = dir_names(d, "--dotfiles" in flags)
    if sorted(names) == want and len(set(names)) == len(names):
        print("ok %d %s" % (len(names), h.get("Content-Type")))
        return 0
    missing = sorted(set(want) - set(names))[:5]
    extra = sorted(set(names) - set(want))[:5]
    print("mismatch: %d listed, %d in dir; missing %r extra %r dup %d" %
          (len(names), len(want), missing, extra, len(names) - len(set(names))))
    return 1


def cmd_order(url, d, key, order, *flags):
    body, h = fetch(url)
    got, _ = parse(body, h.get("Content-Type"))
    names = [n for n, _ in got]
    db = os.fsencode(d)
    st = {n: os.lstat(os.path.join(db, n)) for n in dir_names(d)}

    # lookup.h: names A-Z; size and mtime largest/newest first, ties by
    # name A-Z; order=desc (names) or asc (size, mtime) reverses all.
    if key == "name":
        k = lambda n: n
    elif key == "size":
        k = lambda n: (-st[n].st_size, n)
    else:
        k = lambda n: (-st[n].st_mtime_ns, n)
    exp = sorted(st, key=k)
    if (key == "name") == (order == "desc"):
        exp.reverse()
    if "--dirs-first" in flags:
        exp = [n for n in exp if stat.S_ISDIR(st[n].st_mode)] + \
              [n for n in exp if not stat.S_ISDIR(st[n].st_mode)]
    if names == exp:
        print("ok %d in %s %s order" % (len(names), key, order))
        return 0
    for i, (a, b) in enumerate(zip(names, exp)):
        if a != b:
            print("order differs at %d: got %r, expected %r" % (i, a, b))
            return 1
    print("order differs: %d listed, %d expected" % (len(names), len(exp)))
    return 1


def next_link(h):
    for v in h.get_all("Link") or []:
        for part in v.split(","):
            part = part.strip()
            if part.endswith('rel="next"'):
                return part[1:part.index(">")]
    return None


def cmd_pages(url, d):
    base = urllib.parse.urlsplit(url)
    seen = []
    pages = 0
    while url:
        body, h = fetch(url)
        got, doc = parse(body, h.get("Content-Type"))
        seen += [n for n, _ in got]
        pages += 1
        nxt = next_link(h)
        if doc is not None and (doc.get("next") is None) != (nxt is None):
            print("JSON next %r disagrees with Link %r" % (doc.get("next"), nxt))
            return 1
        url = urllib.parse.urlunsplit((base.scheme, base.netloc, "", "", "")) + nxt \
            if nxt else None
        if pages > 100000:
            print("too many pages")
            return 1
    want = dir_names(d)
    if seen == want:
        print("ok %d names in %d pages" % (len(seen), pages))
        return 0
    print("pages: %d names (%d distinct), dir has %d; first differences %r" %
          (len(seen), len(set(seen)), len(want),
           [x for x in zip(seen, want) if x[0] != x[1]][:3]))
    return 1


def cmd_raw(url, *hdrs):
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=60)
    path = u.path + ("?" + u.query if u.query else "")
    req = "GET %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n" % (
        path, u.netloc, "".join(h + "\r\n" for h in hdrs))
    s.sendall(req.encode("latin-1"))
    data = b""
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        data += b
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split()[1]
    fields = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        fields[k.strip().lower()] = v.strip()
    body, etag, chunked = rest, fields.get("etag", "-"), False
    trailer_etag = "-"
    if fields.get("transfer-encoding", "").lower() == "chunked":
        chunked = True
        body = b""
        while True:
            line, _, rest = rest.partition(b"\r\n")
            n = int(line.split(b";")[0], 16)
            if n == 0:
                break
            body += rest[:n]
            rest = rest[n + 2:]
        for ln in rest.decode("latin-1").split("\r\n"):
            k, _, v = ln.partition(":")
            if k.strip().lower() == "etag":
                trailer_etag = v.strip()
    print("status=%s etag=%s trailer_etag=%s chunked=%s len=%d" %
          (status, etag, trailer_etag, "yes" if chunked else "no", len(body)))
    return 0


def cmd_links(url, d):
    body, h = fetch(url)
    p = Rows()
    p.feed(body.decode("utf-8"))
    db = os.fsencode(d)
    n = 0
    for href in p.hrefs:
        if href == "../" or href.endswith("/"):
            continue
        # relative names under a URL ending in "/" (urljoin drops a
        # trailing ";", a name like "&amp;" percent-encoded ends in one)
        got, _ = fetch(url.split("?")[0] + href)
        name = urllib.parse.unquote_to_bytes(href)
        with open(os.path.join(db, name), "rb") as f:
            if f.read() != got:
                print("href %r: body differs" % href)
                return 1
        n += 1
    print("ok %d links fetched" % n)
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"match": cmd_match, "order": cmd_order, "pages": cmd_pages,
          "raw": cmd_raw, "links": cmd_links}[cmd]
    try:
        return fn(*args)
    except Exception as e:  # a failed check, never a crash of the test
        print("error: %s: %r" % (type(e).__name__, e))
        return 1


if __name__ == "__main__":
    sys.exit(main())
