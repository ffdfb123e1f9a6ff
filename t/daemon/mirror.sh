# `wget -r -np` mirror of a tree served by the daemon is byte-identical
# to the source (every directory has an index.html linking its entries).
. "$top_srcdir/t/daemon/lib.sh"
need wget diff

D=$T/root
mkdir -p "$D"
python3 - "$D" <<'PY'
import os, random, sys, urllib.parse, html
root = sys.argv[1]
rnd = random.Random(42)
def make(d, depth):
    entries = []
    for i in range(rnd.randint(2, 5)):
        name = ["file %d.txt", "data-%d.bin", "ünï-%d.html.txt", "x%%%d.dat"][i % 4] % i
        size = rnd.choice([0, 1, 827, 4096, 65536, 65537, 300000])
        with open(os.path.join(d, name), "wb") as f:
            f.write(bytes(rnd.getrandbits(8) for _ in range(size)))
        entries.append(name)
    if depth < 3:
        for i in range(rnd.randint(1, 3)):
            sub = "sub %d" % i if i % 2 else "dir%d" % i
            os.mkdir(os.path.join(d, sub))
            make(os.path.join(d, sub), depth + 1)
            entries.append(sub + "/")
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write("<!DOCTYPE html><html><body><ul>\n")
        for e in entries:
            f.write('<li><a href="%s">%s</a></li>\n' % (urllib.parse.quote(e), html.escape(e)))
        f.write("</ul></body></html>\n")
make(root, 0)
PY

checks() {
	start_daemon --root "$D"
	rm -rf "$T/mirror"
	mkdir -p "$T/mirror"
	(cd "$T/mirror" && wget -q -r -np -nH --restrict-file-names=nocontrol -e robots=off "$URL/")
	check "wget exit status" 0 "$?"
	if diff -r "$D" "$T/mirror" >"$T/diff" 2>&1; then ok "mirror identical (diff -r)"
	else not_ok "mirror differs: $(head -c 400 "$T/diff")"; fi
	check "files mirrored" "$(find "$D" -type f | wc -l)" "$(find "$T/mirror" -type f | wc -l)"
}

run_backends checks
