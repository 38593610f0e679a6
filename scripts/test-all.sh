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
#
# With CITUS_SOURCE (a Citus source tarball, or a directory holding one:
# make test-all ... CITUS_SOURCE=DIR), scripts/citus-build.sh builds Citus
# once per machine for PostgreSQL 17 and that version's run has it, for
# test/t/040_citus.pl.  Only 17: Citus 13.2 supports 15 to 17 but does not
# compile against Debian's 15.20, and 18 is beyond it.  With PARTMAN_SOURCE
# (a pg_partman source tarball, or a directory holding one),
# scripts/partman-build.sh builds pg_partman 5 for 17 and 18, for
# test/t/051_partman5.pl; 15's run uses Debian's pg_partman 4.7
# (test/t/050_partman.pl).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

sources=${1:-}
[ -n "$sources" ] || die "usage: make test-all PG_SOURCES=DIR (a directory of PostgreSQL source tarballs)"
[ -d "$sources" ] || die "PG_SOURCES=$sources: not a directory"
sources=$(cd "$sources" && pwd)
citus_source=${CITUS_SOURCE:-}
[ -z "$citus_source" ] || [ -e "$citus_source" ] || die "CITUS_SOURCE=$citus_source: no such file or directory"
citus_major=17
partman_source=${PARTMAN_SOURCE:-}
[ -z "$partman_source" ] || [ -e "$partman_source" ] || die "PARTMAN_SOURCE=$partman_source: no such file or directory"

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
citus_installs=("")
partman_installs=("")
for t in "${tarballs[@]}"; do
	start=$SECONDS
	config=$("$top/scripts/pg-build.sh" "$sources/$t") || die "could not build PostgreSQL from $t"
	log "$t: $("$config" --version) ready in $((SECONDS - start)) s"
	version=$("$config" --version | sed 's/^PostgreSQL //')
	citus=""
	if [ -n "$citus_source" ] && [ "${version%%.*}" = "$citus_major" ]; then
		start=$SECONDS
		citus=$("$top/scripts/citus-build.sh" "$config" "$citus_source") || die "could not build Citus for $version"
		log "Citus for $version ready in $((SECONDS - start)) s"
	fi
	partman=""
	if [ -n "$partman_source" ] && [ "${version%%.*}" -ge 17 ]; then
		start=$SECONDS
		partman=$("$top/scripts/partman-build.sh" "$config" "$partman_source") ||
			die "could not build pg_partman for $version"
		log "pg_partman for $version ready in $((SECONDS - start)) s"
	fi
	versions+=("$version")
	configs+=("$config")
	citus_installs+=("$citus")
	partman_installs+=("$partman")
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
	PG_CONFIG=${configs[$i]} CITUS_INSTALL=${citus_installs[$i]} PARTMAN_INSTALL=${partman_installs[$i]} UIDGEN_LONG=all \
		"$top/scripts/test.sh" 2>&1 | tee "$out" || status=$?
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
	while IFS= read -r line; do report+=("    $line"); done < <(grep -E '^((checks|unit|regress|isolation|tap) +[0-9]+ passed|failed: )' "$out" || true)
	rm -f "$out"
done

echo
echo "==== the matrix ($((SECONDS - started)) s) ===="
printf '%s\n' "${report[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
