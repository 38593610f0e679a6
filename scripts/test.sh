#!/usr/bin/env bash
# scripts/test.sh: "make test".  Builds uidgen, installs it into a private
# copy of PostgreSQL, and runs every kind of test the project has: GoogleTest
# unit tests, pg_regress, isolation specs and Perl TAP tests.  Ends with one
# line "N passed, N failed" and exits non-zero when anything failed or when
# no test ran.
#
# The server is Debian 12's PostgreSQL 15, or the installation whose
# pg_config PG_CONFIG names (make test PG_CONFIG=/path/to/pg_config); either
# way uidgen is installed only into a relocated copy of it.  CITUS_INSTALL,
# a directory of scripts/citus-build.sh for that server, adds Citus to the
# copy (scripts/test-all.sh sets it for 17): test/t/040_citus.pl skips
# without it.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

install_or_rerun_as_postgres scripts/test.sh "$@"

cd "$top"
source_config=$(source_pg_config)
scratch=$(mktemp -d /tmp/uidgen-test.XXXXXX)
bindir=$(make_pg_tree "$scratch/pg" "$source_config" ${CITUS_INSTALL:+"$CITUS_INSTALL"})
export PG_CONFIG=$bindir/pg_config
export PATH=$bindir:$PATH
data=$scratch/data

cleanup() {
	stop_cluster "$bindir" "$data"
	[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$scratch"
}
trap cleanup EXIT

passed=0
failed=0
summary=()
record() {	# record KIND PASSED FAILED
	passed=$((passed + $2))
	failed=$((failed + $3))
	summary+=("$(printf '%-10s %4d passed, %d failed' "$1" "$2" "$3")")
}

log "$("$PG_CONFIG" --version) (a relocated copy of $(dirname "$source_config"))"
[ -z "${CITUS_INSTALL:-}" ] || log "with Citus from $CITUS_INSTALL"
log "building"
build_and_install "$bindir" "$scratch/build.log"
make -s WERROR=1 build/unit_tests build/uidgen_load PG_CONFIG="$PG_CONFIG" >>"$scratch/build.log" 2>&1 ||
	{ cat "$scratch/build.log"; die "building the test programs failed"; }
export UIDGEN_LOAD=$top/build/uidgen_load

log "unit tests (GoogleTest)"
build/unit_tests --gtest_brief=1 2>&1 | tee "$scratch/unit.log" || true
unit_passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$scratch/unit.log")
unit_failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\?, listed below:.*/\1/p' "$scratch/unit.log")
unit_total=$(sed -n 's/^\[==========\] \([0-9]*\) tests\? from .* ran\..*/\1/p' "$scratch/unit.log")
unit_failed=${unit_failed:-0}
unit_passed=${unit_passed:-$(( ${unit_total:-0} - unit_failed ))}
[ -n "$unit_total" ] || unit_failed=$((unit_failed + 1))	# crashed before its summary
record unit "$unit_passed" "$unit_failed"

# pg_regress and pg_isolation_regress print one line a test: up to 15
# "test name ... ok" or "... FAILED"; from 16 on (TAP) "ok 1 - name" or
# "not ok 1 - name" ("+" for a test of a parallel group).
count_regress() {	# count_regress KIND LOG STATUS
	local ok bad
	ok=$(grep -cE '\.\.\. ok( |$)|^ok [0-9]+ +[-+] ' "$2" || true)
	bad=$(grep -cE '\.\.\. (FAILED|failed)|^not ok [0-9]+ +[-+] ' "$2" || true)
	[ "$3" -eq 0 ] || [ "$bad" -gt 0 ] || bad=1
	record "$1" "$ok" "$bad"
	if [ "$3" -ne 0 ]; then
		find build/regress build/isolation -name regression.diffs -exec cat {} + 2>/dev/null | head -200 || true
	fi
}

log "starting a throwaway cluster"
start_cluster "$bindir" "$data"

log "pg_regress"
status=0
make -s installcheck PG_CONFIG="$PG_CONFIG" ISOLATION= TAP_TESTS= >"$scratch/regress.log" 2>&1 || status=$?
cat "$scratch/regress.log"
count_regress regress "$scratch/regress.log" $status

log "isolation"
status=0
make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= TAP_TESTS= >"$scratch/isolation.log" 2>&1 || status=$?
cat "$scratch/isolation.log"
count_regress isolation "$scratch/isolation.log" $status

stop_cluster "$bindir" "$data"

log "TAP (prove)"
status=0
make -s prove_installcheck PG_CONFIG="$PG_CONFIG" >"$scratch/tap.log" 2>&1 || status=$?
cat "$scratch/tap.log"
# prove's summary: "Files=3, Tests=45, ..." and, per failing file, "Failed: N".
tap_total=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$scratch/tap.log" | tail -1)
tap_failed=$({ grep -oE 'Failed: [0-9]+\)' "$scratch/tap.log" || true; } | awk '{ n += $2 } END { print n + 0 }')
tap_failed=${tap_failed:-0}
tap_total=${tap_total:-0}
if [ "$status" -ne 0 ] && [ "$tap_failed" -eq 0 ]; then
	tap_failed=1	# a test file died without failing an assertion
fi
record tap $((tap_total - tap_failed > 0 ? tap_total - tap_failed : 0)) "$tap_failed"
if [ "$status" -ne 0 ]; then
	for f in tmp_check/log/regress_log_*; do
		[ -f "$f" ] && { echo "--- $f (tail)"; tail -40 "$f"; }
	done
fi

echo
printf '%s\n' "${summary[@]}"
if [ "$passed" -eq 0 ]; then
	echo "no test ran"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
