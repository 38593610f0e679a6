#!/usr/bin/env bash
# scripts/test.sh: "make test".  Builds uidgen, installs it into a private
# copy of PostgreSQL, and runs every kind of test the project has: GoogleTest
# unit tests, pg_regress, isolation specs and Perl TAP tests.  Ends with one
# line "N passed, N failed" and exits non-zero when anything failed or when
# no test ran.
#
# The tests run as parallel jobs (scripts/jobs.sh): the unit tests, pg_regress
# and the isolation specs (each on a throwaway cluster of its own) and every
# TAP file, TEST_JOBS at a time (default 6: most of them wait on servers,
# not on the CPU).  Each job prints one line as it ends, with its time; a
# failing one prints the tail of its logs right there.  TESTS='032 033'
# runs only the jobs whose names contain one of the words (unit, regress,
# isolation, or a TAP file's name); REPEAT=N runs each TAP file N times,
# the copies at once, each in a directory of its own (tmp_check/rN), to
# shake out what depends on timing.  UIDGEN_STRESS=1 (make test-stress)
# keeps one core busy with a loop for the whole run, to show that nothing
# depends on the machine's speed.
#
# The server is Debian 12's PostgreSQL 15, or the installation whose
# pg_config PG_CONFIG names (make test PG_CONFIG=/path/to/pg_config); either
# way uidgen is installed only into a relocated copy of it.  CITUS_INSTALL,
# a directory of scripts/citus-build.sh for that server, adds Citus to the
# copy (scripts/test-all.sh sets it for 17): test/t/040_citus.pl skips
# without it.  PARTMAN_INSTALL, a directory of scripts/partman-build.sh,
# adds pg_partman 5 the same way (for 17 and 18): test/t/051_partman5.pl
# skips without it.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"
# shellcheck source=scripts/jobs.sh
. "$top/scripts/jobs.sh"

install_or_rerun_as_postgres scripts/test.sh "$@"

cd "$top"
started=$SECONDS
source_config=$(source_pg_config)
scratch=$(mktemp -d /tmp/uidgen-test.XXXXXX)

busy_pid=""
if [ -n "${UIDGEN_STRESS:-}" ]; then
	# A loop that keeps one core busy; the tests share the other one with it.
	bash -c 'while :; do :; done' &
	busy_pid=$!
fi

cleanup() {
	stop_all_jobs
	[ -z "$busy_pid" ] || kill "$busy_pid" 2>/dev/null || true
	[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$scratch"
}
trap cleanup EXIT

bindir=$(make_pg_tree "$scratch/pg" "$source_config" ${CITUS_INSTALL:+"$CITUS_INSTALL"} \
	${PARTMAN_INSTALL:+"$PARTMAN_INSTALL"})
export PG_CONFIG=$bindir/pg_config
export PATH=$bindir:$PATH

log "$("$PG_CONFIG" --version) (a relocated copy of $(dirname "$source_config"))"
[ -z "${CITUS_INSTALL:-}" ] || log "with Citus from $CITUS_INSTALL"
[ -z "${PARTMAN_INSTALL:-}" ] || log "with pg_partman from $PARTMAN_INSTALL"
[ -z "$busy_pid" ] || log "stress: a busy loop keeps one core occupied (pid $busy_pid)"
log "building"
build_and_install "$bindir" "$scratch/build.log" build/unit_tests build/uidgen_load build/stall_getaddrinfo.so
export UIDGEN_LOAD=$top/build/uidgen_load
export UIDGEN_STALL_SHIM=$top/build/stall_getaddrinfo.so
log "built in $((SECONDS - started)) s"

# ---- the jobs ---------------------------------------------------------------
# Each writes its output to its log and "PASSED FAILED" to its counts file.

job_unit() {	# job_unit COUNTS
	local status=0 log=$scratch/unit.log
	build/unit_tests --gtest_brief=1 >"$log" 2>&1 || status=$?
	cat "$log"
	local total failed passed
	total=$(sed -n 's/^\[==========\] \([0-9]*\) tests\? from .* ran\..*/\1/p' "$log")
	failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\?, listed below:.*/\1/p' "$log")
	failed=${failed:-0}
	passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$log")
	passed=${passed:-$(( ${total:-0} - failed ))}
	[ -n "$total" ] || failed=$((failed + 1))	# crashed before its summary
	[ "$status" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
	echo "$passed $failed" >"$1"
}

# pg_regress and pg_isolation_regress print one line a test: up to 15
# "test name ... ok" or "... FAILED"; from 16 on (TAP) "ok 1 - name" or
# "not ok 1 - name" ("+" for a test of a parallel group).
job_regress() {	# job_regress COUNTS KIND (regress or isolation)
	local kind=$2 data=$scratch/$2-data status=0 ok bad
	start_cluster "$bindir" "$data"
	if [ "$kind" = regress ]; then
		make -s installcheck PG_CONFIG="$PG_CONFIG" ISOLATION= TAP_TESTS= || status=$?
	else
		make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= TAP_TESTS= || status=$?
	fi
	stop_cluster "$bindir" "$data"
	if [ "$status" -ne 0 ]; then
		find "build/$kind" -name regression.diffs -exec cat {} + 2>/dev/null | head -200 || true
	fi
	# Count from what this job printed so far (its log is its stdout).
	ok=$(grep -cE '\.\.\. ok( |$)|^ok [0-9]+ +[-+] ' "$jobs_dir/$kind.log" || true)
	bad=$(grep -cE '\.\.\. (FAILED|failed)|^not ok [0-9]+ +[-+] ' "$jobs_dir/$kind.log" || true)
	[ "$status" -eq 0 ] || [ "$bad" -gt 0 ] || bad=1
	echo "$ok $bad" >"$1"
}

# One TAP file through prove, in the environment prove_installcheck gives
# it (make prove-one); all files share tmp_check and one directory of port
# reservations, so that files running at once never take the same port.
# Every make here names PG_CONFIG: a "make test PG_CONFIG=..." above us
# passes its own in MAKEFLAGS, which would name the installation we copied.
job_tap() {	# job_tap COUNTS FILE DIR (DIR for tmp_check, the top by default)
	local file=$2 dir=${3:-$top} status=0 total failed own_log log=${1%.counts}.log
	make -s prove-one PG_CONFIG="$PG_CONFIG" PROVE_TESTS="$file" TAP_DIR="$dir" || status=$?
	total=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\),.*/\1/p' "$log" | tail -1)
	failed=$({ grep -oE 'Failed: [0-9]+\)' "$log" || true; } | awk '{ n += $2 } END { print n + 0 }')
	total=${total:-0}
	# A file that died without failing an assertion still failed.  Its
	# message went to its own log only (PostgreSQL::Test::Utils sends
	# stderr there): printed into the job's, for the summary to name.
	if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
		failed=1
		own_log=$dir/tmp_check/log/regress_log_$(basename "$file" .pl)
		[ ! -f "$own_log" ] || grep -E ' line [0-9]+\.$' "$own_log" | tail -2 | sed 's/^/died: /' || true
	fi
	echo "$((total - failed > 0 ? total - failed : 0)) $failed" >"$1"
}

# The TAP file's own log, and its servers', for the report of a failure.
tap_logs() {	# tap_logs FILE [DIR]
	local name dir=${2:-.}
	name=$(basename "$1" .pl)
	ls "$dir"/tmp_check/log/regress_log_"$name" "$dir"/tmp_check/log/"$name"_*.log 2>/dev/null || true
}

# A check of the tree itself (scripts/check-*.sh): one test.
job_check() {	# job_check COUNTS COMMAND
	if $2; then echo "1 0" >"$1"; else echo "0 1" >"$1"; fi
}

job_name() { basename "$1" .pl; }

# Test 100 runs members of a test build that speaks protocol version 2
# (make MEMBER_PROTOCOL=2): built once (REPEAT runs share it) from a copy of
# the tree into a PostgreSQL copy of its own, so that this build's objects
# stay as they are.
job_tap_protocol2() {	# job_tap_protocol2 COUNTS FILE [DIR]
	local src=$scratch/protocol2-src built=$scratch/protocol2-install
	if ! (
		flock 9
		[ ! -s "$built" ] || exit 0
		mkdir -p "$src"
		copy_tree "$top" "$src"
		v2bindir=$(make_pg_tree "$scratch/pg-protocol2" "$source_config")
		make -C "$src" -s -j2 with_llvm=no MEMBER_PROTOCOL=2 PG_CONFIG="$v2bindir/pg_config" all install \
			>"$scratch/protocol2-build.log" 2>&1 || { cat "$scratch/protocol2-build.log"; exit 1; }
		dirname "$v2bindir" >"$built"
	) 9>"$scratch/protocol2.lock"; then
		echo "0 1" >"$1"
		return
	fi
	UIDGEN_PROTOCOL2_INSTALL=$(cat "$built") job_tap "$@"
}

rm -rf tmp_check
mkdir -p tmp_check/portlock build/regress build/isolation
export PG_TEST_PORT_DIR=$top/tmp_check/portlock

jobs_init "$scratch/jobs" "${TEST_JOBS:-6}"
jobs_dir=$scratch/jobs

selected() {	# selected NAME: whether TESTS (if set) asks for it
	local word
	[ -n "${TESTS:-}" ] || return 0
	for word in $TESTS; do
		[[ "$1" == *"$word"* ]] && return 0
	done
	return 1
}

# The fleet's longest scenario tests, listed in test/long-tests, run in
# make test-long (UIDGEN_LONG=only: those alone) and make test-all
# (UIDGEN_LONG=all), so that make test stays within six minutes on two
# cores.  TESTS names any test, long or not.
mapfile -t long_tests < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' test/long-tests)
is_long() {	# is_long FILE: whether test/long-tests lists the TAP file
	local name
	for name in "${long_tests[@]}"; do
		[ "$1" = "test/t/$name.pl" ] && return 0
	done
	return 1
}
wanted() {	# wanted NAME [FILE]: selected, and of the kind UIDGEN_LONG asks for
	selected "$1" || return 1
	[ -z "${TESTS:-}" ] || return 0
	case "${UIDGEN_LONG:-}" in
		all) return 0 ;;
		only) [ -n "${2:-}" ] && is_long "$2" ;;
		*) [ -z "${2:-}" ] || ! is_long "$2" ;;
	esac
}

# The longest first, as far as the last run on this machine knows them
# (jobs.sh keeps each job's time); new ones first of all.
mapfile -t tap_files < <(jobs_longest_first test/t/*.pl)

log "running the tests, ${TEST_JOBS:-6} jobs at a time; each line is a job that ended"
wanted layering && jobs_start layering "" job_check scripts/check-layering.sh
wanted meta && jobs_start meta "" job_check "make -s check-meta PG_CONFIG=$PG_CONFIG"
wanted boundary && jobs_start boundary "" job_check "perl scripts/check-boundary.pl"
wanted design-ids && jobs_start design-ids "" job_check "perl scripts/check-design-ids.pl"
wanted sql-assembled && jobs_start sql-assembled "" job_check "perl scripts/assemble-sql.pl --check"
wanted unit && jobs_start unit "" job_unit
wanted regress && jobs_start regress "" job_regress regress
wanted isolation && jobs_start isolation "" job_regress isolation
repeat=${REPEAT:-1}
for file in "${tap_files[@]}"; do
	wanted "$(job_name "$file")" "$file" || continue
	job=job_tap
	[ "$(job_name "$file")" != 100_registry_protocol_versions ] || job=job_tap_protocol2
	if [ "$repeat" -le 1 ]; then
		jobs_start "$(job_name "$file")" "tap_logs $file" $job "$file"
		continue
	fi
	for r in $(seq 1 "$repeat"); do
		mkdir -p "tmp_check/r$r"
		jobs_start "$(job_name "$file").r$r" "tap_logs $file tmp_check/r$r" $job "$file" "$top/tmp_check/r$r"
	done
done
jobs_finish

echo
jobs_summary
log "make test took $((SECONDS - started)) s"
jobs_closing_line
