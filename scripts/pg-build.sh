#!/usr/bin/env bash
# scripts/pg-build.sh TARBALL: builds PostgreSQL from a source tarball, once
# per machine, into a cache that outlives a test run, and prints the path of
# its pg_config.
#
#   TARBALL   postgresql-17_17.11.orig.tar.bz2 (Debian's upstream tarball)
#             or postgresql-17.11.tar.bz2 / .tar.gz (postgresql.org's)
#
# The cache is /var/cache/uidgen as root, ${XDG_CACHE_HOME:-$HOME/.cache}/uidgen
# otherwise (UIDGEN_CACHE overrides both); each version goes to pg-VERSION in
# it.  A build that finished is marked with the tarball's SHA-256 and the
# configure options, so a different tarball of the same version, or other
# options, build again; a build that did not finish is thrown away.
#
# With OpenSSL, as Debian's and PGDG's packages are: without it
# pg_strong_random() reads /dev/urandom on every call, which makes
# gen_random_uuid() and uuidv7() several times slower than users see them.  Nothing is installed into the cache after it is
# built: "make test" installs uidgen into a relocated copy (scripts/lib.sh).
#
# Needs: make gcc bison flex perl libreadline-dev zlib1g-dev libssl-dev
# libipc-run-perl bzip2 (scripts/test-all.sh installs them as root).
set -euo pipefail

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 TARBALL"
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -f "$tarball" ] || die "no such file: $1"

version=$(basename "$tarball" | sed -nE 's/^postgresql-([0-9]+_)?([0-9]+\.[0-9]+)(\.orig)?\.tar\.(bz2|gz|xz)$/\2/p')
[ -n "$version" ] || die "not a PostgreSQL source tarball name: $(basename "$tarball")"

if [ -n "${UIDGEN_CACHE:-}" ]; then
	cache=$UIDGEN_CACHE
elif [ "$(id -u)" -eq 0 ]; then
	cache=/var/cache/uidgen
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/uidgen
fi
mkdir -p "$cache"
prefix=$cache/pg-$version
stamp=$prefix/.uidgen-built

# One build of a version at a time on this machine.
exec 9>"$cache/pg-$version.lock"
flock 9

configure_options=(--enable-tap-tests --without-icu --with-openssl)
sum="$(sha256sum "$tarball" | cut -d' ' -f1) ${configure_options[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && [ -x "$prefix/bin/pg_config" ]; then
	log "PostgreSQL $version: cached in $prefix"
	echo "$prefix/bin/pg_config"
	exit 0
fi

log "PostgreSQL $version: building into $prefix (a few minutes; once per machine)"
rm -rf "$prefix"
work=$(mktemp -d "$cache/build-$version.XXXXXX")
trap 'rm -rf "$work"' EXIT
build_log=$work/build.log
tar -C "$work" -xf "$tarball"
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'postgresql-*' | head -1)
[ -n "$src" ] || die "no source directory in $tarball"
jobs=$(nproc 2>/dev/null || echo 2)
(
	cd "$src"
	# The generated headers first: a parallel "make world-bin" does not
	# order them before src/common (seen: utils/errcodes.h missing).
	./configure --prefix="$prefix" "${configure_options[@]}" &&
		make -C src/backend generated-headers &&
		make -j"$jobs" world-bin &&
		make install-world-bin
) >"$build_log" 2>&1 || {
	tail -60 "$build_log" >&2
	rm -rf "$prefix"
	die "building PostgreSQL $version failed (log above)"
}
echo "$sum" >"$stamp"
log "PostgreSQL $version: built"
echo "$prefix/bin/pg_config"
