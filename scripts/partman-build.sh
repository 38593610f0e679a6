#!/usr/bin/env bash
# scripts/partman-build.sh PG_CONFIG PARTMAN_SOURCE: builds pg_partman against
# the PostgreSQL whose pg_config PG_CONFIG is, once per machine, into the
# cache of scripts/pg-build.sh, and prints the directory pg_partman was
# installed into.
#
#   PG_CONFIG       a pg_config, typically of a build of scripts/pg-build.sh
#   PARTMAN_SOURCE  a pg_partman source tarball (pg_partman-5.2.4.tar.gz, or
#                   Debian's pg-partman_5.2.4.orig.tar.gz), or a directory
#                   holding one (the newest version if several)
#
# As scripts/citus-build.sh does for Citus: installed with "make install
# DESTDIR=..." into partman-VERSION-pgVERSION in the cache, so that
# make_pg_tree links its files into the relocated copy a test run makes
# (scripts/test.sh, PARTMAN_INSTALL), marked with the tarball's SHA-256 and
# the installation's paths.  pg_partman needs nothing beyond what building
# PostgreSQL needs (make, gcc).
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || die "usage: $0 PG_CONFIG PARTMAN_SOURCE"
pg_config=$1
"$pg_config" --version >/dev/null 2>&1 || die "PG_CONFIG=$pg_config does not run"
name_regex='(pg_partman-|pg-partman_)([0-9]+\.[0-9]+\.[0-9]+)(\.orig)?\.tar\.(gz|bz2|xz)'
tarball=$(source_tarball PARTMAN_SOURCE "$2" "$name_regex" pg_partman-X.Y.Z.tar.gz)

version=$(basename "$tarball" | sed -nE "s/^$name_regex\$/\\2/p")
[ -n "$version" ] || die "not a pg_partman source tarball name: $(basename "$tarball")"
pg_version=$("$pg_config" --version | awk '{ print $2 }')

prefix=$(build_cache)/partman-$version-pg$pg_version

build_partman() {
	make PG_CONFIG="$pg_config" -j"$(nproc 2>/dev/null || echo 2)" &&
		make PG_CONFIG="$pg_config" install DESTDIR="$prefix"
}
build_once "pg_partman $version for PostgreSQL $pg_version" "$prefix" \
	"$(sha256sum "$tarball" | cut -d' ' -f1) $("$pg_config" --pkglibdir --sharedir | tr '\n' ' ')" \
	"$tarball" build_partman
echo "$prefix"
