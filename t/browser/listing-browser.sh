# The HTML listing in a real browser: headless Chromium (playwright-core
# from npm, the system's /usr/bin/chromium) opens the root listing,
# follows a link into a subdirectory, sorts by size by clicking the
# column header and checks the order; then loads a 100,000-entry page and
# reports how long it takes (printed, not asserted).
# Skips (77) without node, chromium, or playwright-core (node_modules
# here, or `npm ci` from the committed package-lock.json).
. "$top_srcdir/t/daemon/lib.sh"
slow_test  # a browser start and a 100,000-entry page

need node
[ -x /usr/bin/chromium ] || { echo "SKIP: /usr/bin/chromium not installed"; exit 77; }

# playwright-core: t/browser/node_modules in the source tree (setup.sh
# runs `npm ci` there), else installed into the build tree now.
SRC=$top_srcdir/t/browser
RUN=$top_builddir/t/browser
mkdir -p "$RUN"
if [ "$SRC" != "$RUN" ]; then
	cp "$SRC/listing-browser.mjs" "$SRC/package.json" "$SRC/package-lock.json" "$RUN/"
	[ -d "$SRC/node_modules/playwright-core" ] && [ ! -e "$RUN/node_modules" ] &&
		ln -s "$SRC/node_modules" "$RUN/node_modules"
fi
if [ ! -d "$RUN/node_modules/playwright-core" ]; then
	need npm
	( cd "$RUN" && npm ci --no-audit --no-fund >"$T/npm.log" 2>&1 ) ||
		{ echo "SKIP: npm ci failed:"; tail -3 "$T/npm.log"; exit 77; }
fi

D=$T/root
mkdir -p "$D/sub" "$D/big" "$D/other"
echo hello > "$D/readme.txt"
python3 - "$D" > "$T/expect.json" <<'PY'
import json, os, sys
d = sys.argv[1]
sizes = {}
for i, name in enumerate(["alpha", "bravo", "charlie", "delta", "echo",
                          "foxtrot", "golf", "hotel"]):
    n = (i * 5 + 3) % 8 * 1000 + i      # distinct, not in name order
    with open(os.path.join(d, "sub", name), "wb") as f:
        f.write(b"x" * n)
    sizes[name] = n
for i in range(100000):
    open(os.path.join(d, "big", "entry%06d.dat" % i), "w").close()
print(json.dumps({"sub": "sub", "sizes": sizes, "big": "big", "bign": 100000}))
PY

start_daemon --root "$D"
node "$RUN/listing-browser.mjs" "$URL" "$(cat "$T/expect.json")" "$T/profile" > "$T/node.out" 2>&1
rc=$?
cat "$T/node.out"
grep -q "^not ok" "$T/node.out" && fails=$((fails + 1))
[ $rc = 0 ] || { [ $fails = 0 ] && not_ok "browser script exited $rc"; }
stop_daemon
echo "# $fails failed"
[ "$fails" = 0 ]
