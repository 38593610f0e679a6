#!/usr/bin/env bash
# scripts/build-deb.sh: "make deb".  Builds the Debian packages of debian/,
# postgresql-VERSION-uidgen for each PostgreSQL server whose development
# files (postgresql-server-dev-VERSION) are installed, into build/deb/.
#
# The build runs on a copy of the working tree in build/deb/src, so that
# dpkg-buildpackage neither writes beside the checkout nor cleans it:
# debian/control is generated there by "pg_buildext updatecontrol" for the
# installed server versions, then "dpkg-buildpackage -us -uc -b" builds
# (unsigned, binary only) and runs debian/tests/installcheck against the
# packages' files unless DEB_BUILD_OPTIONS has nocheck.  As root, the
# build dependencies missing are installed with apt-get; otherwise they are
# named.  Prints the paths of the .deb files built.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
cd "$top"

# What reading debian/ takes; the rest comes from debian/control below.
ensure_packages dpkg-dev postgresql-server-dev-all

version=$(dpkg-parsechangelog -l debian/changelog -S Version)
upstream=${version%-*}
control_version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" uidgen.control)
[ "$upstream" = "$control_version" ] ||
	die "debian/changelog's version $version is not uidgen.control's default_version $control_version"

out=$top/build/deb
src=$out/src/uidgen-$upstream
rm -rf "$out"
mkdir -p "$src"
copy_tree "$top" "$src"
cd "$src"

# Every server version whose development files are installed.
export PG_SUPPORTED_VERSIONS=installed
pg_buildext updatecontrol
log "building postgresql-{$(pg_buildext supported-versions | paste -sd,)}-uidgen $version"

if ! dpkg-checkbuilddeps >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		dpkg-checkbuilddeps || true
		die "missing build dependencies (above); as root: apt-get build-dep $src"
	fi
	log "installing the build dependencies (log: ${out#"$top"/}/apt.log)"
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get update -qq && apt-get build-dep -y -qq --no-install-recommends "$src"; } >"$out/apt.log" 2>&1 ||
		{ tail -30 "$out/apt.log" >&2; die "installing the build dependencies failed"; }
fi

build_log=$out/build.log
log "dpkg-buildpackage -us -uc -b (log: ${build_log#"$top"/})"
if ! dpkg-buildpackage -us -uc -b >"$build_log" 2>&1; then
	tail -80 "$build_log" >&2
	die "the package build failed (log above; whole log in $build_log)"
fi

# dpkg-buildpackage writes beside the source directory.
mv "$out"/src/*.deb "$out"/src/*.buildinfo "$out"/src/*.changes "$out"/
ls "$out"/*.deb
