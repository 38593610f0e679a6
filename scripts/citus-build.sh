#!/usr/bin/env bash
# scripts/citus-build.sh PG_CONFIG CITUS_SOURCE: builds Citus against the
# PostgreSQL whose pg_config PG_CONFIG is, once per machine, into the cache
# of scripts/pg-build.sh, and prints the directory Citus was installed into.
#
#   PG_CONFIG     a pg_config, typically of a build of scripts/pg-build.sh
#   CITUS_SOURCE  citus-13.2.2.tar.gz ("git archive" of a Citus release
#                 tag, or GitHub's release tarball), or a directory holding
#                 one (the newest version if several)
#
# The build goes to citus-VERSION-pgVERSION in the cache (/var/cache/uidgen
# as root, ~/.cache/uidgen otherwise; see build_cache in scripts/lib.sh).
# It is installed there with "make install DESTDIR=...", so the directory
# printed holds the PostgreSQL installation's own paths below it (lib,
# share/extension): the installation itself is left as it was, and
# make_pg_tree links these files into the relocated copy that a test run
# makes (scripts/test.sh, CITUS_INSTALL).  As pg-build.sh does, a finished
# build is marked with the tarball's SHA-256, the configure options and the
# installation's paths, and one that did not finish is thrown away.
#
# Without libcurl (only Citus's anonymous usage reports use it), lz4 and
# zstd (only compression of columnar tables): with them off Citus needs
# nothing beyond what building PostgreSQL needs (make, gcc).
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || die "usage: $0 PG_CONFIG CITUS_SOURCE"
pg_config=$1
"$pg_config" --version >/dev/null 2>&1 || die "PG_CONFIG=$pg_config does not run"
tarball=$(source_tarball CITUS_SOURCE "$2" 'citus-[0-9]+\.[0-9]+\.[0-9]+\.tar\.(gz|bz2|xz)' citus-X.Y.Z.tar.gz)

version=$(basename "$tarball" | sed -nE 's/^citus-([0-9]+\.[0-9]+\.[0-9]+)\.tar\.(gz|bz2|xz)$/\1/p')
[ -n "$version" ] || die "not a Citus source tarball name: $(basename "$tarball")"
pg_version=$("$pg_config" --version | awk '{ print $2 }')

prefix=$(build_cache)/citus-$version-pg$pg_version
configure_options=(--without-libcurl --without-lz4 --without-zstd)

build_citus() {
	./configure PG_CONFIG="$pg_config" "${configure_options[@]}" &&
		make -j"$(nproc 2>/dev/null || echo 2)" &&
		make install DESTDIR="$prefix"
}
# Citus's files go to the installation's paths under DESTDIR: those paths
# are part of what was built.
build_once "Citus $version for PostgreSQL $pg_version" "$prefix" \
	"$(sha256sum "$tarball" | cut -d' ' -f1) ${configure_options[*]} $("$pg_config" --pkglibdir --sharedir | tr '\n' ' ')" \
	"$tarball" build_citus
echo "$prefix"
