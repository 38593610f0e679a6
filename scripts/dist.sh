#!/usr/bin/env bash
# scripts/dist.sh: "make dist".  Writes the PGXN release of the commit
# checked out (HEAD), build/uidgen-VERSION.zip, with "git archive": every file
# git tracks, under the prefix uidgen-VERSION/.  VERSION is default_version
# in HEAD's uidgen.control; HEAD's META.json must pass scripts/check-meta.pl
# and carry the same version.  Uncommitted changes are not in the zip: it
# says so when there are some.  Prints the zip's path.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
cd "$top"

command -v git >/dev/null || die "make dist needs git (apt-get install git)"
git rev-parse --verify -q HEAD >/dev/null || die "make dist needs a git checkout with a commit"

name=uidgen
version=$(git show "HEAD:$name.control" | sed -n "s/^default_version = '\(.*\)'/\1/p")
[ -n "$version" ] || die "HEAD's $name.control has no default_version"

# The release's own META.json and control file, as committed.
check=$(mktemp -d /tmp/uidgen-dist.XXXXXX)
trap 'rm -rf "$check"' EXIT
git archive HEAD | tar -C "$check" -xf -
perl scripts/check-meta.pl "$check/META.json" "$check/$name.control" >/dev/null ||
	die "HEAD's META.json is not a valid release description (above)"

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
	log "note: uncommitted changes are not in the zip, which holds HEAD ($(git rev-parse --short HEAD))"
fi

mkdir -p build
zip=build/$name-$version.zip
rm -f "$zip"
git archive --format=zip --prefix="$name-$version/" -o "$zip" HEAD
log "wrote $zip ($name $version, $(git rev-parse --short HEAD))"
echo "$top/$zip"
