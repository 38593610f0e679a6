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

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -eq 1 ] || die "usage: $0 TARBALL"
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -f "$tarball" ] || die "no such file: $1"

version=$(basename "$tarball" | sed -nE 's/^postgresql-([0-9]+_)?([0-9]+\.[0-9]+)(\.orig)?\.tar\.(bz2|gz|xz)$/\2/p')
[ -n "$version" ] || die "not a PostgreSQL source tarball name: $(basename "$tarball")"

prefix=$(build_cache)/pg-$version
configure_options=(--enable-tap-tests --without-icu --with-openssl)

build_postgres() {
	# The generated headers first: a parallel "make world-bin" does not
	# order them before src/common (seen: utils/errcodes.h missing).
	./configure --prefix="$prefix" "${configure_options[@]}" &&
		make -C src/backend generated-headers &&
		make -j"$(nproc 2>/dev/null || echo 2)" world-bin &&
		make install-world-bin
}
build_once "PostgreSQL $version" "$prefix" "$(sha256sum "$tarball" | cut -d' ' -f1) ${configure_options[*]}" \
	"$tarball" build_postgres
echo "$prefix/bin/pg_config"
