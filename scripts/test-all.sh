#!/usr/bin/env bash
# scripts/test-all.sh DIR: "make test-all PG_SOURCES=DIR".  The whole suite
# (scripts/test.sh) on every PostgreSQL version uidgen supports: Debian 12's
# PostgreSQL 15, and each PostgreSQL source tarball in DIR (Debian's
# postgresql-NN_X.Y.orig.tar.bz2, or postgresql.org's postgresql-X.Y.tar.bz2),
# which scripts/pg-build.sh builds once per machine into a cache.  Prints
# each version's summary, then one line "N passed, N failed" for all of
# them, and exits non-zero when anything failed.
#
# As root it installs what is missing (PostgreSQL's build dependencies too),
# builds as root into /var/cache/uidgen and tests as postgres (scripts/test.sh
# does that); otherwise it builds into ~/.cache/uidgen.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

sources=${1:-}
[ -n "$sources" ] || die "usage: make test-all PG_SOURCES=DIR (a directory of PostgreSQL source tarballs)"
[ -d "$sources" ] || die "PG_SOURCES=$sources: not a directory"
sources=$(cd "$sources" && pwd)

# Newest tarball per major version, in version order.
mapfile -t tarballs < <(
	find "$sources" -maxdepth 1 -type f -regextype posix-extended \
		-regex '.*/postgresql-([0-9]+_)?[0-9]+\.[0-9]+(\.orig)?\.tar\.(bz2|gz|xz)' -printf '%f\n' |
		sed -nE 's/^postgresql-([0-9]+_)?(([0-9]+)\.[0-9]+)(\.orig)?\.tar\..*/\3 \2 &/p' |
		sort -k1,1n -k2,2V | awk '{ last[$1] = $3 } END { for (m in last) print m, last[m] }' |
		sort -n | cut -d' ' -f2
)
[ ${#tarballs[@]} -gt 0 ] || die "PG_SOURCES=$sources: no PostgreSQL source tarball (postgresql-*.tar.bz2)"

unset PG_CONFIG
# shellcheck disable=SC2046
ensure_packages $(required_packages) "${PG_BUILD_PACKAGES[@]}"

started=$SECONDS
versions=(15)
configs=("")
for t in "${tarballs[@]}"; do
	start=$SECONDS
	config=$("$top/scripts/pg-build.sh" "$sources/$t") || die "could not build PostgreSQL from $t"
	log "$t: $("$config" --version) ready in $((SECONDS - start)) s"
	versions+=("$("$config" --version | sed 's/^PostgreSQL //')")
	configs+=("$config")
done

passed=0
failed=0
report=()
for i in "${!configs[@]}"; do
	label=${versions[$i]}
	log "==== PostgreSQL $label: make test ===="
	out=$(mktemp /tmp/uidgen-test-all.XXXXXX)
	start=$SECONDS
	status=0
	PG_CONFIG=${configs[$i]} "$top/scripts/test.sh" 2>&1 | tee "$out" || status=$?
	[ "$label" != 15 ] || label=$(sed -nE 's/^==> PostgreSQL ([0-9.]+) .*/\1/p' "$out" | head -1)
	total=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out" | tail -1 || true)
	p=0 f=1		# no summary line: the run broke before its end
	if [ -n "$total" ]; then
		p=${total%% passed*}
		f=${total#*passed, }; f=${f%% failed}
	fi
	[ "$status" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	passed=$((passed + p))
	failed=$((failed + f))
	report+=("PostgreSQL ${label:-15}: $p passed, $f failed ($((SECONDS - start)) s)")
	while IFS= read -r line; do report+=("    $line"); done < <(grep -E '^(unit|regress|isolation|tap) +[0-9]+ passed' "$out" || true)
	rm -f "$out"
done

echo
echo "==== the matrix ($((SECONDS - started)) s) ===="
printf '%s\n' "${report[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
