#!/usr/bin/env python3
"""Checks of the listing cache (t/daemon/lcache.sh): a listing must
describe the directory as it is now (names, modes, sizes, mtimes).

  fresh URL DIR
      GET URL (an NDJSON listing); prints "ok N" when every entry of DIR
      (dotfiles hidden) is listed with its lstat's mode, size and mtime,
      and nothing else, else what differs (exit 1).
  race URL DIR SECONDS
      For SECONDS: one change to DIR or its entries (create, delete,
      rename, write in place, chmod, a write through a hard link outside
      DIR, an entry made in a subdirectory), then the listing, which
      must already show it; meanwhile a second client lists DIR without
      pause, so that fills and hits race with the changes. Prints
      "ok N changes" or the first stale listing (exit 1).
  fill URL DIR OUTSIDE ROUNDS
      DIR holds many files named fNNNNNN, some with hard links in
      OUTSIDE. ROUNDS times: a whole listing of DIR starts (it fills
      the cache), and after a delay swept across its duration one
      change is made to one entry; once the listing is done, the page
      of one entry at that place (?limit=1&after=, answered by the cache
      when it holds DIR) must show the change. Prints "ok N rounds" or
      the first stale page (exit 1).
"""
import json
import os
import random
import sys
import threading
import time
import urllib.request


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read()


def truth(d):
    out = {}
    for name in os.listdir(d):
        if name.startswith("."):
            continue
        try:
            st = os.lstat(os.path.join(d, name))
        except FileNotFoundError:
            continue
        out[name] = (st.st_mode, st.st_size, st.st_mtime_ns // 10**9,
                     st.st_mtime_ns % 10**9)
    return out


def listed(url):
    out = {}
    for line in fetch(url).decode().splitlines():
        e = json.loads(line)
        if "name" not in e:
            continue
        out[e["name"]] = (e.get("mode"), e.get("size"), e.get("mtime"),
                          e.get("mtime_ns"))
    return out


def diff(url, d):
    want, got = truth(d), listed(url)
    if want == got:
        return None
    lines = []
    for n in sorted(set(want) | set(got)):
        if want.get(n) != got.get(n):
            lines.append("%s: want %s, listed %s" % (n, want.get(n), got.get(n)))
    return "\n".join(lines)


def fresh(url, d):
    bad = diff(url, d)
    if bad:
        print(bad)
        return 1
    print("ok %d" % len(truth(d)))
    return 0


def race(url, d, secs):
    stop = threading.Event()
    errors = []
    outside = os.path.join(os.path.dirname(os.path.abspath(d)), "race-outside")
    os.makedirs(outside, exist_ok=True)
    for x in os.listdir(outside):
        os.unlink(os.path.join(outside, x))

    def hammer():
        while not stop.is_set():
            try:
                fetch(url)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
                return

    t = threading.Thread(target=hammer)
    t.start()
    rnd = random.Random(7)
    n = 0
    end = time.monotonic() + secs
    bad = None
    try:
        while time.monotonic() < end:
            names = sorted(x for x in os.listdir(d) if x.startswith("r"))
            op = rnd.randrange(8)
            if op == 0 or not names:
                open(os.path.join(d, "r%05d" % rnd.randrange(100000)), "w").close()
            elif op == 1:
                os.unlink(os.path.join(d, rnd.choice(names)))
            elif op == 2:
                os.rename(os.path.join(d, rnd.choice(names)),
                          os.path.join(d, "r%05d" % rnd.randrange(100000)))
            elif op == 3:
                with open(os.path.join(d, rnd.choice(names)), "a") as f:
                    f.write("x" * rnd.randrange(1, 50))
            elif op == 4:
                os.chmod(os.path.join(d, rnd.choice(names)), 0o600 + rnd.randrange(0o100))
            elif op == 5:
                # a hard link outside, written through that name only
                src = os.path.join(d, rnd.choice(names))
                ln = os.path.join(outside, "l%d" % n)
                os.link(src, ln)
                with open(ln, "a") as f:
                    f.write("y")
            elif op == 6:
                # an older link, written again (its inode may be listed)
                links = os.listdir(outside)
                if links:
                    with open(os.path.join(outside, rnd.choice(links)), "a") as f:
                        f.write("z")
            else:
                sub = os.path.join(d, "sub")
                os.makedirs(sub, exist_ok=True)
                open(os.path.join(sub, "e%d" % n), "w").close()
            n += 1
            bad = diff(url, d)
            if bad:
                break
    finally:
        stop.set()
        t.join()
    if bad:
        print("stale after change %d:\n%s" % (n, bad))
        return 1
    if errors:
        print("second client failed: %s" % errors[0])
        return 1
    print("ok %d changes" % n)
    return 0


def page(url, after):
    """The entry listed right after @after (name order), or None."""
    q = "&" if "?" in url else "?"
    for line in fetch("%s%slimit=1&after=%s" % (url, q, after)).decode().splitlines():
        e = json.loads(line)
        if "name" in e:
            return e["name"], (e.get("mode"), e.get("size"), e.get("mtime"),
                               e.get("mtime_ns"))
    return None


def state(d, name):
    st = os.lstat(os.path.join(d, name))
    return name, (st.st_mode, st.st_size, st.st_mtime_ns // 10**9,
                  st.st_mtime_ns % 10**9)


def fill(url, d, outside, rounds):
    names = sorted(x for x in os.listdir(d) if x.startswith("f"))
    linked = sorted(os.listdir(outside))
    rnd = random.Random(11)
    # A large directory is cached from its second listing with no name
    # come or gone between: one listing first, so that the one timed
    # here and each round's are fills.
    fetch(url)
    t0 = time.monotonic()
    fetch(url)
    span = max(time.monotonic() - t0, 0.05)
    # (that fill was kept: a write in place drops it, no name changed)
    with open(os.path.join(d, names[0]), "a") as f:
        f.write("dropped\n")
    for k in range(rounds):
        i = rnd.randrange(1, len(names) - 1)
        op = k % 6
        target = names[i]
        live = [x for x in linked if x in names[1:-1]]
        if op == 0 and live:
            target = live[k % len(live)]
            i = names.index(target)
        done = threading.Event()
        errors = []

        def lister():
            try:
                fetch(url)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
            done.set()

        t = threading.Thread(target=lister)
        t.start()
        time.sleep(span * 1.2 * k / rounds)
        p = os.path.join(d, target)
        if op == 0:
            with open(os.path.join(outside, target), "a") as f:
                f.write("through the link outside\n")
        elif op == 1:
            os.chmod(p, 0o600 + k % 0o100)
        elif op == 2:
            open(p + "n", "w").close()
        elif op == 3:
            os.unlink(p)
        elif op == 4:
            os.rename(p, p + "r")
        else:
            with open(p, "a") as f:
                f.write("in place\n")
        t.join()
        if errors:
            print("the filling listing failed: %s" % errors[0])
            return 1
        # the changed entry, or for a new name the one made
        after = target if op == 2 else names[i - 1]
        nxt = min(x for x in os.listdir(d) if x > after and not x.startswith("."))
        want = state(d, nxt)
        got = page(url, after)
        if got != want:
            print("stale after round %d (op %d on %s at %.3f s): want %s, listed %s"
                  % (k, op, target, span * 1.2 * k / rounds, want, got))
            return 1
        names = sorted(x for x in os.listdir(d) if x.startswith("f"))
        if op in (2, 3, 4):
            fetch(url)      # a name came or went: listed once more
    print("ok %d rounds" % rounds)
    return 0


def main():
    cmd = sys.argv[1]
    if cmd == "fresh":
        return fresh(sys.argv[2], sys.argv[3])
    if cmd == "race":
        return race(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    if cmd == "fill":
        return fill(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    print("unknown command", cmd)
    return 2


if __name__ == "__main__":
    sys.exit(main())
