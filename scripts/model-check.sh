#!/usr/bin/env bash
# scripts/model-check.sh: checks the fleet protocol's Promela models (model/)
# exhaustively with SPIN, and each mutant and fault beyond the design's
# assumptions, which must yield a counterexample (model/README.md).
#
# One line per run as it ends (two at a time, MODEL_JOBS): model, defines,
# expected, got, states, seconds; then
# "N passed, N failed".  A model that passes, and a mutant or fault whose
# counterexample is found, pass; anything else fails.  Needs no PostgreSQL;
# works in a temporary directory, never in the source tree.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

ensure_packages spin gcc

src=$(pwd)/model
work=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-model.XXXXXX")
trap 'rm -rf "$work"' EXIT

# model  defines  expected (pass: no counterexample; fail: one is found)
# [pan's flags [the C compiler's]].  -DT_REVERSE makes pan try each step's
# options last to first: some mutants' counterexamples come after 10 to
# 2,500 times fewer states (others' after more); a run that passes stores
# the same states in either order.
RUNS=(
	"leases.pml|-DREGISTRY_FAULTS -DRMAX=6|pass"
	"leases.pml|-DMEMBER_FAULTS|pass"
	"leases.pml|-DBLOCK_SIZES -DRMAX=4|pass"
	"leases.pml|-DMEMBER_FAULTS -DAGENT_FORGETS_BLOCKS|fail||-DT_REVERSE"
	"leases.pml|-DMEMBER_FAULTS -DMEMBER_CLOCK_CAP|fail||-DT_REVERSE"
	"leases.pml|-DMEMBER_FAULTS -DRELEASE_BELOW_CAP|fail"
	"leases.pml|-DMEMBER_FAULTS -DRULES_LOWER_CEILING|fail"
	"leases.pml|-DBLOCK_SIZES -DRMAX=4 -DBLOCK_SIZE_CHANGE_WITH_BLOCKS|fail"
	"leases.pml|-DREGISTRY_FAULTS -DRMAX=6 -DQUARANTINE_NEEDS_BLOCKS|fail"
	"leases.pml|-DREGISTRY_FAULTS -DRMAX=6 -DREASSERT_REVIVES_STALE|fail||-DT_REVERSE"
	"leases.pml|-DREGISTRY_FAULTS -DRMAX=6 -DREASSERT_MOVES_OTHER_LIFE|fail"
	"leases.pml|-DREGISTRY_FAULTS -DRMAX=6 -DFAULT_UNNOTICED_RESTORE|fail"
	"leases.pml|-DREGISTRY_FAULTS -DRMAX=6 -DFAULT_REGISTRY_CLOCK_BACK|fail||-DT_REVERSE"
	"session.pml||pass"
	"session.pml|-DSESSION_BELOW_LAST|fail"
	"session.pml|-DREINSTALL_AT_CLOCK|fail"
	"claim_pool.pml||pass"
	"claim_pool.pml|-DNO_RECHECK|pass"
	"claim_pool.pml|-DLOCKS_BEFORE_MARK|pass"
	"claim_pool.pml|-DNO_RECHECK -DLOCKS_BEFORE_MARK|fail"
	"claim_pool.pml|-DNO_HANDOVER_WAIT|fail"
	"claim_pool.pml|-DFREE_MARK_IS_POOLED|fail"
	"claim_pool.pml|-DRETURN_AFTER_HANDOVER|fail"
	"join_move.pml|-DMOVE|pass"
	"join_move.pml|-DREJOIN|pass"
	"join_move.pml|-DMOVE -DNO_IMPORT|fail"
	"join_move.pml|-DMOVE -DNO_SEAL|fail"
	"join_move.pml|-DREJOIN -DTEXT_FORGETS_BLOCKS|fail"
	"join_move.pml|-DREJOIN -DSTALE_MEMBERSHIP_FLOOR|fail"
	"join_move.pml|-DREJOIN -DSESSION_BELOW_LAST|fail"
	"join_move.pml|-DMOVE -DFAULT_LOST_MOVE|fail"
	"layout.pml||pass"
	"layout.pml|-DFLEET|pass"
	"layout.pml|-DCONFIGURE_AFTER_CLAIM|fail"
	"layout.pml|-DREACH_AS_UNIT|fail"
	"layout.pml|-DFLEET -DREGISTRY_CONFIGURE_AFTER_LEASE|fail"
	"layout.pml|-DFLEET -DCONFIGURE_AFTER_CLAIM|fail"
)

# MP-5, liveness (model/liveness.pml).  A fourth field gives pan's flags:
# -a searches the ltl claim's acceptance cycles (built without -DSAFETY).
# WAIT_BOUND runs are safety runs of the bound; 6 is one tick too short.
RUNS+=(
	"liveness.pml||pass|-a"
	"liveness.pml|-DWAIT_BOUND=7|pass"
	"liveness.pml|-DWAIT_BOUND=6|fail"
	"liveness.pml|-DQUARANTINE_NEVER_LIFTS|fail|-a"
	"liveness.pml|-DNO_RENEW_AFTER_RESTART|fail|-a"
	"liveness.pml|-DRENEW_AFTER_LAPSE|fail|-a"
	"liveness.pml|-DCOUNTER_WITHOUT_PROOF|fail|-a"
)

# Copies of the registry (model/copies.pml): one PostgreSQL tells apart (a
# new identity) and one it cannot (the counter witness); two lives to RMAX 7,
# and a third (a crash) to RMAX 5.
RUNS+=(
	"copies.pml||pass"
	"copies.pml|-DRMAX=5 -DCRASHES=1|pass"
	"copies.pml|-DCOPY_KEEPS_IDENTITY|fail"
	"copies.pml|-DNO_COUNTER_WITNESS|fail"
	"copies.pml|-DFAULT_UNSEEN_REVERT|fail"
	"copies.pml|-DFAULT_TWO_WRITABLE|fail"
)

# check_one N RUN: one run in its own directory; writes its line and verdict
check_one() {
	local n=$1 model defines expected panflags ccflags dir start got states errors ds kind safety=-DSAFETY opt=-O2
	IFS='|' read -r model defines expected panflags ccflags <<<"$2"
	[ -n "$panflags" ] && safety=
	# A counterexample comes after at most a million states, which take less
	# time than gcc -O2 takes over pan.c (2 to 4 s of a core): -O1 halves that.
	[ "$expected" = fail ] && opt=-O1
	dir=$work/$n
	mkdir -p "$dir"
	cp "$src/$model" "$dir/"
	start=$(date +%s%N)
	got=broken
	states=-
	# shellcheck disable=SC2086
	if (cd "$dir" && spin $defines -a "$model" >spin.log 2>&1 &&
		gcc $opt -w $safety -DCOLLAPSE -DMEMLIM=4096 $ccflags -o pan pan.c >gcc.log 2>&1); then
		# exhaustive: no bitstate; -m bounds the depth, which a run that
		# reaches it reports (then it is no proof, and counts as broken)
		(cd "$dir" && ./pan $panflags -m100000 -w24 >pan.log 2>&1)
		states=$(awk '/states, stored/ { print $1; exit }' "$dir/pan.log")
		errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$dir/pan.log" | head -1)
		if grep -q 'max search depth too small\|out of memory' "$dir/pan.log"; then
			got=broken
		elif [ "$errors" = 0 ]; then
			got=pass
		elif [ -n "$errors" ]; then
			got=fail
		fi
	fi
	ds=$((($(date +%s%N) - start) / 100000000))
	kind=model
	[ "$expected" = fail ] && kind=mutant
	case $defines in *-DFAULT_*) kind=fault ;; esac
	printf '%-12s %-62s %-6s expected %-4s got %-6s %10s states %4d.%d s\n' \
		"$model" "${defines:-(none)}${panflags:+ (pan $panflags)}${ccflags:+ (cc $ccflags)}" "$kind" "$expected" "$got" "${states:--}" $((ds / 10)) $((ds % 10)) \
		>"$dir/line"
	if [ "$got" = "$expected" ]; then
		echo pass >"$dir/verdict"
	else
		echo fail >"$dir/verdict"
		[ "$got" = broken ] && tail -5 "$dir"/*.log >"$dir/why" 2>&1
	fi
	cat "$dir/line"
}

# Two runs at a time (the first, the longest, beside all the others).
jobs_max=${MODEL_JOBS:-2}
n=0
for run in "${RUNS[@]}"; do
	n=$((n + 1))
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n
	done
	check_one "$n" "$run" &
done
wait

passed=0
failed=0
for i in $(seq 1 "$n"); do
	if [ "$(cat "$work/$i/verdict" 2>/dev/null)" = pass ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		cat "$work/$i/why" 2>/dev/null >&2
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
