# File names with spaces, '%', '?', '#', '+', quotes, unicode; the links
# a client builds for them reach the right file, byte-exact.
. "$top_srcdir/t/daemon/lib.sh"

D=$T/root
mkdir -p "$D/dir with space" "$D/ünï"
names=("with space.txt" "100%.txt" "what?.txt" "hash#tag.txt" "a+b.txt" "quote'\"s.txt"
       "ünïcödé-ファイル.txt" "semi;colon.txt" "amp&er=sand.txt" "%41.txt" "dir with space/in side.txt"
       "ünï/日本.txt" "tab	name.txt" "percent%2fslash.txt")
for n in "${names[@]}"; do printf 'content of %s\n' "$n" > "$D/$n"; done

# percent-encoded forms, computed once (python starts slowly under load)
mapfile -t encoded < <(python3 -c 'import sys, urllib.parse
for a in sys.argv[1:]: print(urllib.parse.quote(a, safe="/"))' "${names[@]}")

checks() {
	start_daemon --root "$D"
	local n u i
	for i in "${!names[@]}"; do
		n=${names[$i]}
		u=${encoded[$i]}
		curl -s -o "$T/got" "$URL/$u"
		if cmp -s "$T/got" "$D/$n"; then ok "GET /$u"; else not_ok "GET /$u (for '$n') differs: $(head -c 80 "$T/got")"; fi
	done
	# raw UTF-8 bytes in the target (not percent-encoded) are accepted too
	check "raw UTF-8 target" "content of ünï/日本.txt" "$(curl -s "$URL/ünï/日本.txt")"
	# '?' starts the query: unencoded it names another file
	check "unencoded ? is a query" 404 "$(code '/what?.txt')"
	check "encoded ? names the file" 200 "$(code '/what%3F.txt')"
	# '%' must be encoded; a literal "%41" in a name is reached as %2541
	check "%2541 names '%41.txt'" "content of %41.txt" "$(curl -s "$URL/%2541.txt")"
	check "%41 decodes to A" 404 "$(code '/%41.txt')"
	check "redirect keeps encoded names" "$URL/dir%20with%20space/" \
		"$(curl -s -o /dev/null -w '%{redirect_url}' "$URL/dir%20with%20space")"
	check "follow the redirect" "content of dir with space/in side.txt" \
		"$(curl -sL "$URL/dir%20with%20space" -o /dev/null -w '%{http_code}' >/dev/null; curl -s "$URL/dir%20with%20space/in%20side.txt")"
}

run_backends checks
