#!/usr/bin/env bash
# scripts/nemesis.sh: "make nemesis".  Builds uidgen and the nemesis' load
# client into a private copy of PostgreSQL, as make test does, and runs
# test/nemesis/nemesis.pl: seeded random faults against a fleet on
# loopback, every ID checked (docs/nemesis.md).
#
#   scripts/nemesis.sh --seed N --minutes M --faults KINDS [--out DIR]
#
# The history and the servers' logs go to DIR (build/nemesis by default),
# which survives the run (as root too, where the work runs as postgres on a
# copy of the tree).  Exits non-zero when an assertion failed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

out=""
args=()
while [ $# -gt 0 ]; do
	case $1 in
		--out) out=$2; shift 2 ;;
		*) args+=("$1"); shift ;;
	esac
done
out=${out:-$top/build/nemesis}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# As root the work runs as postgres, which may not be able to enter this
# tree (a checkout under /root): it writes into a directory of its own, whose
# contents come here when it ends.
if [ "$(id -u)" -eq 0 ]; then
	prepare_to_run_as_postgres
	work_out=$(mktemp -d /tmp/uidgen-nemesis-out.XXXXXX)
	chown postgres: "$work_out"
	status=0
	rerun_as_postgres scripts/nemesis.sh --out "$work_out" "${args[@]}" || status=$?
	# This run's files only: an earlier run's clients and servers are not this one's.
	rm -rf "$out/ids" "$out/proxy" "$out/tmp_check"
	cp -a "$work_out"/. "$out"/
	rm -rf "$work_out"
	log "the history and the servers' logs are in $out"
	exit $status
fi
install_or_rerun_as_postgres scripts/nemesis.sh --out "$out" "${args[@]}"

cd "$top"
started=$SECONDS
scratch=$(mktemp -d /tmp/uidgen-nemesis.XXXXXX)
trap '[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$scratch"' EXIT

bindir=$(make_pg_tree "$scratch/pg")
export PG_CONFIG=$bindir/pg_config
export PATH=$bindir:$PATH
log "$("$PG_CONFIG" --version) (a relocated copy)"
log "building"
# The stalling resolver (test/shim/stall_getaddrinfo.c) goes into the
# members' postmasters when the run has slow_resolver.
build_and_install "$bindir" "$scratch/build.log" build/nemesis_client build/stall_getaddrinfo.so
log "built in $((SECONDS - started)) s; the history goes to $out/history.txt"

# What PostgreSQL::Test::Cluster expects of its caller (make prove-one):
# its modules, and TESTDIR, under which tmp_check keeps the servers' data
# (removed when every assertion passed) and logs.
pgxs=$("$PG_CONFIG" --pgxs)
rm -rf "$out/ids" "$out/proxy" "$out/tmp_check"
status=0
TESTDIR=$out PG_REGRESS="$(dirname "$pgxs")/../test/regress/pg_regress" perl -I "$(dirname "$pgxs")/../test/perl" test/nemesis/nemesis.pl \
	--out "$out" --client "$top/build/nemesis_client" --stall-shim "$top/build/stall_getaddrinfo.so" \
	--top "$top" "${args[@]}" || status=$?
log "make nemesis took $((SECONDS - started)) s; servers' logs in $out/tmp_check/log"
exit $status
