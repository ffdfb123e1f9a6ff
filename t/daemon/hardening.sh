# The installed daemon is built hardened, as Debian's dpkg-buildflags
# would build it: a position-independent executable (ELF type DYN), full
# RELRO (a GNU_RELRO segment and BIND_NOW), the stack protector
# (__stack_chk_fail) and _FORTIFY_SOURCE (glibc's __*_chk functions).
# The static link of the in-tree libraries must keep all of it.
set -u
: "${top_builddir:?run through make check}"
FSD=$top_builddir/fileserverd
[ -x "$FSD" ] || { echo "no $FSD"; exit 99; }
command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf not installed"; exit 77; }
! grep -q '^#define FSD_NO_HARDENING 1' "$top_builddir/config.h" ||
	{ echo "SKIP: configured with --disable-hardening"; exit 77; }

fails=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; fails=$((fails + 1)); }
has() { if printf '%s\n' "$3" | grep -Eq -- "$2"; then ok "$1"; else not_ok "$1"; fi; }

has "PIE: ELF type DYN" 'Type: +DYN' "$(readelf -hW "$FSD")"
dyn=$(readelf -dW "$FSD")
has "PIE: FLAGS_1 has PIE" 'FLAGS_1.*PIE' "$dyn"
has "full RELRO: BIND_NOW" '\(FLAGS\).*BIND_NOW|FLAGS_1.*NOW' "$dyn"
has "full RELRO: GNU_RELRO segment" '^ *GNU_RELRO ' "$(readelf -lW "$FSD")"
syms=$(readelf --dyn-syms -W "$FSD")
has "stack protector: __stack_chk_fail" ' __stack_chk_fail(@|$)' "$syms"
nofortify=
if ! grep -q '^#define FSD_NO_FORTIFY 1' "$top_builddir/config.h"; then
	has "fortify: __*_chk functions" ' __(snprintf|vsnprintf|memcpy|strcpy|printf|fprintf|read)_chk(@|$)' "$syms"
else
	echo "# _FORTIFY_SOURCE not used in this build (sanitizers or no optimisation)"
	nofortify=--nofortify
fi
# devscripts' checker, where it is installed, must agree. Control-flow
# protection is not asked of it: the hand-written context switch has no
# IBT/SHSTK note (and must not claim shadow-stack safety), so the linked
# daemon never has one.
if command -v hardening-check >/dev/null 2>&1; then
	out=$(hardening-check --nocfprotection $nofortify "$FSD" 2>&1) && ok "hardening-check passes" ||
		not_ok "hardening-check: $out"
fi

echo "# $fails failed"
[ "$fails" = 0 ]
