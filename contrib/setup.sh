#!/usr/bin/env bash
# Installs every build and test dependency (Debian 12, as root), then
# bootstraps, configures and builds fileserverd in _build/.
#
#   bash contrib/setup.sh            install + build
#   bash contrib/setup.sh run [DIR]  ... then serve DIR (default: .) on 127.0.0.1:8080
#   bash contrib/setup.sh check      ... then run the whole test suite (make check)
#
# Idempotent: packages already present are not reinstalled, configure
# runs once, and make only rebuilds what changed.
# Environment: BUILD_DIR (default _build), CONFIGURE_FLAGS (extra flags).
set -euo pipefail

orig=$PWD
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/_build}
mode=${1:-build}

# Build: compiler, autotools, and one -dev package per library.
pkgs_build="build-essential autoconf automake libtool pkg-config
  liburing-dev libevent-dev libmicrohttpd-dev libgnutls28-dev libinih-dev zlib1g-dev libxxhash-dev
  check libsubunit-dev libtevent-dev libtalloc-dev libsystemd-dev"
# Tests and benchmarks: real clients, peers, the FUSE test filesystem,
# a browser for the listing page, a cross compiler with qemu-user so
# that the aarch64 context switch runs too (contrib/cross/), and clang
# for the libFuzzer targets (its fuzzer runtime is only a Recommends).
pkgs_test="libfuse3-dev fuse3 curl wget wrk nginx lighttpd valgrind
  rclone chromium nodejs python3 procps iproute2 xz-utils logrotate slowhttptest
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  clang libclang-rt-14-dev
  sshfs openssh-client openssh-sftp-server socat openssl systemd
  haproxy strace"

missing=()
for p in $pkgs_build $( [ "$mode" = check ] && echo $pkgs_test ); do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "setup: missing packages: ${missing[*]}; run as root to install them" >&2
		exit 1
	fi
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# nginx and lighttpd must not grab port 80 or keep running: the
	# benchmarks start their own instances on loopback ports.
	printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
	rm -f /usr/sbin/policy-rc.d
fi

cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	autoreconf -fi
fi
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ]; then
	"$top/configure" --enable-werror ${CONFIGURE_FLAGS:-}
fi
make -j"$(nproc)"

case "$mode" in
build) ;;
run)
	shift || true
	root=$(cd "$orig" && realpath "${1:-.}")
	echo "setup: serving $root at http://127.0.0.1:8080/"
	exec "$build/fileserverd" --root "$root"
	;;
check)
	# playwright-core for the browser test, pinned by t/browser's lock
	# file; without it that test skips (77).
	if [ ! -d "$top/t/browser/node_modules/playwright-core" ] && command -v npm >/dev/null; then
		(cd "$top/t/browser" && npm ci --no-audit --no-fund --loglevel=error) ||
			echo "setup: npm ci failed: the browser test will be skipped" >&2
	fi
	make -j"$(nproc)" check
	;;
*)
	echo "usage: $0 [build|run [DIR]|check]" >&2
	exit 2
	;;
esac
