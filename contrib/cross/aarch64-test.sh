#!/bin/sh
# contrib/cross/aarch64-test.sh: cross-build the fibril core (scheduler,
# stacks, the aarch64 assembly switch, and the portable ucontext one)
# with its Check-free test, t/fibril/test_fibril_core.c, and run it under
# qemu-user. Nothing here needs an aarch64 machine or an arm64 Check.
#
# Needs (Debian 12): gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
# Exit 0 pass, 1 fail, 77 skip (a tool missing).
#
# Run by `make check` (TESTS in fibril/fibril.mk), or by hand:
#   sh contrib/cross/aarch64-test.sh
set -u

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
CC=${AARCH64_CC:-aarch64-linux-gnu-gcc}
QEMU=${AARCH64_QEMU:-}
SYSROOT=${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}

if ! command -v "$CC" >/dev/null 2>&1; then
	echo "aarch64-test: $CC not found (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross): skip"
	exit 77
fi
if [ -z "$QEMU" ]; then
	for q in qemu-aarch64 qemu-aarch64-static; do
		if command -v "$q" >/dev/null 2>&1; then
			QEMU=$q
			break
		fi
	done
fi
if [ -z "$QEMU" ]; then
	echo "aarch64-test: qemu-aarch64 not found (apt-get install qemu-user): skip"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/aarch64-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# first.h includes config.h: the core needs none of configure's answers
# but the choice of switch, which is passed on the command line.
: > "$tmp/config.h"

S=$top_srcdir
CFLAGS="-std=gnu11 -O2 -g -Wall -Wextra -Werror -I$tmp -I$S -I$S/fibril -I$S/fibril/include"
CORE="$S/fibril/sched.c $S/fibril/stack.c"
TEST="$S/t/fibril/test_fibril_core.c"
rc=0

# A static binary needs no loader path; the sysroot is passed anyway for
# a toolchain whose libc has no static archive.
build_and_run() {
	name=$1
	shift
	if ! $CC $CFLAGS "$@" $CORE $TEST -o "$tmp/$name" -static -lm; then
		echo "FAIL: $name: cross build"
		rc=1
		return
	fi
	# 20,000 fibrils instead of 100,000: qemu-user translates each
	# first touch of a stack page slowly
	if FIBRIL_CORE_MANY=20000 "$QEMU" -L "$SYSROOT" "$tmp/$name"; then
		echo "PASS: $name (aarch64 under $QEMU)"
	else
		echo "FAIL: $name (aarch64 under $QEMU)"
		rc=1
	fi
}

build_and_run core-asm "$S/fibril/switch_aarch64.S"
build_and_run core-ucontext -DFIBRIL_SWITCH_UCONTEXT=1 "$S/fibril/switch_ucontext.c"
exit $rc
