#!/usr/bin/env python3
"""Checks of the listing cache (t/daemon/lcache.sh): a listing must
describe the directory as it is now (names, modes, sizes, mtimes).

  fresh URL DIR
      GET URL (an NDJSON listing); prints "ok N" when every entry of DIR
      (dotfiles hidden) is listed with its lstat's mode, size and mtime,
      and nothing else, else what differs (exit 1).
  race URL DIR SECONDS [HAMMERS]
      For SECONDS: one change to DIR or its entries (create, delete,
      rename, write in place, chmod, a write through a hard link outside
      DIR, an entry made in a subdirectory), then the listing, which
      must already show it; meanwhile HAMMERS (1) other clients list DIR
      without pause, so that fills, patches and hits race with the
      changes. Prints
      "ok N changes" or the first stale listing (exit 1).
  churn URL DIR OUTSIDE STEPS SEED
      STEPS times: one to three changes to DIR (names made, removed,
      renamed within, over another, out to OUTSIDE and back in, two
      names exchanged, hidden and shown again, made again under the
      same name; writes, truncation, chmod, mtimes set; hard links from
      OUTSIDE written there; subdirectories made, filled and removed;
      symlinks), then the listing, which must show them. Prints "ok N
      changes" or the first stale listing (exit 1).
  fill URL DIR OUTSIDE ROUNDS
      DIR holds many files named fNNNNNN, some with hard links in
      OUTSIDE (1,100 or more). ROUNDS times: the cached listing
      dropped, a whole listing of DIR starts (it fills the cache), and
      after a delay swept across its duration one
      change is made to one entry; once the listing is done, the page
      of one entry at that place (?limit=1&after=, answered by the cache
      when it holds DIR) must show the change. Prints "ok N rounds" or
      the first stale page (exit 1).
  linkgap BASE_URL ROOT TRIALS
      ROOT/L cached as a listing, ROOT/other/f in the small-file cache
      (its inode watched), then a hard link of f made in L with 900
      subdirectories (a long patch), and while the listing that patches
      them runs, f written through its other name. The listing after
      must show the link's new size. Prints "ok N trials" or the first
      stale listing (exit 1).
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


def race(url, d, secs, hammers=1):
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

    ts = [threading.Thread(target=hammer) for _ in range(hammers)]
    for t in ts:
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
        for t in ts:
            t.join()
    if bad:
        print("stale after change %d:\n%s" % (n, bad))
        return 1
    if errors:
        print("second client failed: %s" % errors[0])
        return 1
    print("ok %d changes" % n)
    return 0


def exchange(a, b):
    """renameat2(RENAME_EXCHANGE): two names swap inodes at once."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        raise OSError(ctypes.get_errno(), "renameat2", a)


def churn_step(rnd, d, outside, n):
    """One change to @d; returns what it was."""
    def visible():
        return sorted(x for x in os.listdir(d) if not x.startswith(".")
                      and os.path.isfile(os.path.join(d, x))
                      and not os.path.islink(os.path.join(d, x)))
    names = visible()
    p = lambda x: os.path.join(d, x)  # noqa: E731
    op = rnd.randrange(20)
    if op == 0 or len(names) < 4:
        x = "c%d" % n
        with open(p(x), "w") as f:
            f.write("n" * rnd.randrange(0, 30))
        return "made " + x
    a, b = rnd.sample(names, 2)
    if op == 1:
        os.unlink(p(a))
        return "removed " + a
    if op == 2:
        os.rename(p(a), p("m%d" % n))
        return "renamed %s" % a
    if op == 3:
        os.rename(p(a), p(b))
        return "renamed %s over %s" % (a, b)
    if op == 4:
        os.rename(p(a), os.path.join(outside, "o%d" % n))
        return "moved out " + a
    if op == 5:
        gone = [x for x in os.listdir(outside) if x.startswith("o")]
        if gone:
            x = rnd.choice(gone)
            os.rename(os.path.join(outside, x), p("i%d" % n))
            return "moved in " + x
        return "nothing"
    if op == 6:
        exchange(p(a), p(b))
        return "exchanged %s and %s" % (a, b)
    if op == 7:
        os.rename(p(a), p("." + a))
        os.rename(p("." + a), p("h%d" % n))
        return "hidden and shown again " + a
    if op == 8:
        os.unlink(p(a))
        with open(p(a), "w") as f:
            f.write("again" * rnd.randrange(1, 5))
        return "made again " + a
    if op == 9:
        with open(p(a), "a") as f:
            f.write("x" * rnd.randrange(1, 50))
        return "appended to " + a
    if op == 10:
        os.truncate(p(a), rnd.randrange(0, 3))
        return "truncated " + a
    if op == 11:
        os.chmod(p(a), 0o600 + rnd.randrange(0o100))
        return "chmod " + a
    if op == 12:
        t = rnd.randrange(10**9, 2 * 10**9)
        os.utime(p(a), (t, t))
        return "mtime set " + a
    if op == 13:
        ln = os.path.join(outside, "l%d" % n)
        os.link(p(a), ln)
        with open(ln, "a") as f:
            f.write("y")
        return "linked out and written there " + a
    if op == 14:
        links = [x for x in os.listdir(outside) if x.startswith("l")]
        if links:
            with open(os.path.join(outside, rnd.choice(links)), "a") as f:
                f.write("z")
        return "an old link written"
    if op == 15:
        links = [x for x in os.listdir(outside) if x.startswith("l")]
        if links:
            x = rnd.choice(links)
            os.link(os.path.join(outside, x), p("k%d" % n))
            with open(os.path.join(outside, x), "a") as f:
                f.write("w")
            return "linked in " + x
        return "nothing"
    if op == 16:
        sub = p("s%d" % rnd.randrange(3))
        if os.path.isdir(sub) and rnd.randrange(2):
            for x in os.listdir(sub):
                os.unlink(os.path.join(sub, x))
            os.rmdir(sub)
            return "subdirectory removed"
        os.makedirs(sub, exist_ok=True)
        open(os.path.join(sub, "e%d" % n), "w").close()
        return "made in a subdirectory"
    if op == 17:
        open(p(".dot%d" % (n % 3)), "a").close()
        return "a hidden name"
    if op == 18:
        x = p("ln")
        if os.path.islink(x):
            os.unlink(x)
            return "symlink removed"
        if rnd.randrange(4):
            return "nothing"
        os.symlink(a, x)
        return "symlink made"
    os.rename(p(a), p(a + ".t"))
    os.rename(p(b), p(a))
    os.rename(p(a + ".t"), p(b))
    return "swapped %s and %s through a third name" % (a, b)


def churn(url, d, outside, steps, seed):
    rnd = random.Random(seed)
    os.makedirs(outside, exist_ok=True)
    done = []
    for n in range(steps):
        done = [churn_step(rnd, d, outside, n * 4 + k) for k in range(rnd.randrange(1, 4))]
        bad = diff(url, d)
        if bad:
            print("stale after step %d (%s):\n%s" % (n, "; ".join(done), bad))
            return 1
    print("ok %d changes" % steps)
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

    def drop():
        # (more names changed at once than a patch applies: the cached
        # listing goes, and with no name come or gone the next one fills)
        for x in names[:1100]:
            os.utime(os.path.join(d, x))
    for k in range(rounds):
        drop()
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


def linkgap(base, root, trials):
    lst, other = os.path.join(root, "L"), os.path.join(root, "other")
    url = base + "/L/?format=ndjson"
    for k in range(trials):
        for d in (lst, other):
            if os.path.isdir(d):
                for sub in os.listdir(d):
                    p = os.path.join(d, sub)
                    os.rmdir(p) if os.path.isdir(p) else os.unlink(p)
            else:
                os.mkdir(d)
        with open(os.path.join(other, "f"), "w") as f:
            f.write("a")
        fetch(url)
        fetch(url)                          # L cached
        for _ in range(2):
            fetch(base + "/other/f")        # f's inode watched
        os.link(os.path.join(other, "f"), os.path.join(lst, "0x"))
        for i in range(900):
            os.mkdir(os.path.join(lst, "d%04d" % i))
        for _ in range(2):
            fetch(base + "/other/f")        # cached again (the link dropped it)
        t = threading.Thread(target=fetch, args=(url,))
        t.start()
        time.sleep((k % 20) * 0.0005)
        with open(os.path.join(other, "f"), "a") as f:
            f.write("MORE DATA")
        fetch(base + "/other/f")            # the worker reads the event
        t.join()
        bad = diff(url, lst)
        if bad:
            print("trial %d: %s" % (k, bad))
            return 1
    print("ok %d trials" % trials)
    return 0


def main():
    cmd = sys.argv[1]
    if cmd == "fresh":
        return fresh(sys.argv[2], sys.argv[3])
    if cmd == "race":
        return race(sys.argv[2], sys.argv[3], float(sys.argv[4]),
                    int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    if cmd == "churn":
        return churn(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
                     int(sys.argv[6]))
    if cmd == "fill":
        return fill(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    if cmd == "linkgap":
        return linkgap(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    print("unknown command", cmd)
    return 2


if __name__ == "__main__":
    sys.exit(main())
