#!/usr/bin/env bash
# test/bench/compare.sh BASE_REV [ROUNDS]: what uid_next() costs per ID, and
# a new connection that takes one ID, in the working tree against BASE_REV,
# measured in one run.
#
#   test/bench/compare.sh HEAD~3        # 9 rounds (default)
#   test/bench/compare.sh 2252015 15
#
# Builds BASE_REV (git archive) and the working tree, each into its own
# private copy of PostgreSQL, starts a throwaway cluster for each, and in
# every round times, in a new session of each cluster (the order rotating),
# SELECT count(g) and SELECT count(uid_next()) over the same generate_series.
# The cost per ID is the difference, paired within the session, so a change
# of the machine's load between rounds lands on both sides alike.  Each round
# also times 200 connections that each take one ID (pgbench -C): the cost of
# registering and releasing a worker.  Prints the medians and the ratios.
# Like make test: Debian 12, as root or not.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

base_src= labels=
while [ $# -gt 0 ]; do
	case $1 in
		--base-src) base_src=$2; shift 2 ;;
		--labels) labels=$2; shift 2 ;;
		-h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) break ;;
	esac
done
base_rev=${1:?usage: test/bench/compare.sh BASE_REV [ROUNDS]}
rounds=${2:-9}
rows=2000000

# The base's source comes from git, which the copy made for postgres lacks.
if [ -z "$base_src" ]; then
	base_src=$(mktemp -d /tmp/uidgen-compare-base.XXXXXX)
	git -c safe.directory='*' -C "$top" archive "$base_rev" | tar -C "$base_src" -xf - ||
		die "cannot read revision $base_rev"
	chmod -R a+rX "$base_src"
	labels="$(git -c safe.directory='*' -C "$top" rev-parse --short "$base_rev") $(git -c safe.directory='*' -C "$top" describe --always --dirty)"
	trap 'rm -rf "$base_src"' EXIT
	status=0
	ensure_packages
	if [ "$(id -u)" -eq 0 ]; then
		rerun_as_postgres test/bench/compare.sh --base-src "$base_src" --labels "$labels" "$base_rev" "$rounds" ||
			status=$?
		exit $status
	fi
fi
read -r base_label head_label <<<"$labels"

scratch=$(mktemp -d /tmp/uidgen-compare.XXXXXX)
declare -A host port bindir
cleanup() {
	local side
	for side in base head; do
		[ -z "${bindir[$side]:-}" ] || stop_cluster "${bindir[$side]}" "$scratch/data-$side"
	done
	[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$scratch"
}
trap cleanup EXIT

for side in base head; do
	src=$top
	if [ $side = base ]; then
		src=$scratch/src-base
		cp -r "$base_src" "$src"
	fi
	bindir[$side]=$(make_pg_tree "$scratch/pg-$side")
	log "building $side"
	(cd "$src" && build_and_install "${bindir[$side]}" "$scratch/build-$side.log")
	start_cluster "${bindir[$side]}" "$scratch/data-$side"
	# No sleep at the borrowing bound: rounds borrow seconds ahead, and must not wait.
	printf "uidgen.max_borrow = '1h'\njit = off\n" >>"$scratch/data-$side/postgresql.conf"
	"${bindir[$side]}/pg_ctl" -D "$scratch/data-$side" -w reload >/dev/null
	host[$side]=$PGHOST
	port[$side]=$PGPORT
	psql -X -qAt -h "$PGHOST" -p "$PGPORT" -c 'CREATE EXTENSION uidgen'
done

# One session: register, then time the bare series and uid_next() over it.
# Prints "bare_ns_per_row uid_ns_per_id_above_bare".
measure() {
	local side=$1
	psql -X -qAt -F ' ' -v ON_ERROR_STOP=1 -h "${host[$side]}" -p "${port[$side]}" <<-SQL | tail -1
		SET client_min_messages = warning;
		CREATE FUNCTION pg_temp.seconds(q text) RETURNS float8 LANGUAGE plpgsql AS \$\$
		DECLARE started timestamptz := clock_timestamp(); ignored bigint;
		BEGIN EXECUTE q INTO ignored; RETURN extract(epoch FROM clock_timestamp() - started); END \$\$;
		SELECT count(uid_next()) FROM generate_series(1, 1000);
		SELECT pg_temp.seconds('SELECT count(g) FROM generate_series(1, $rows) g') AS bare,
		       pg_temp.seconds('SELECT count(uid_next()) FROM generate_series(1, $rows) g') AS uid \gset
		SELECT round((:bare * 1e9 / $rows)::numeric, 2), round(((:uid - :bare) * 1e9 / $rows)::numeric, 2);
	SQL
}

# ms per connection that connects, takes one ID and disconnects.
churn_script=$scratch/churn.sql
echo 'SELECT uid_next();' >"$churn_script"
churn() {
	local side=$1
	"${bindir[$side]}/pgbench" -n -C -c 1 -j 1 -t 200 -f "$churn_script" -h "${host[$side]}" -p "${port[$side]}" \
		postgres 2>/dev/null | awk '/^tps = / { printf "%.3f", 1000 / $3 }'
}

declare -A bare_ns uid_ns conn_ms
for round in $(seq "$rounds"); do
	order=(base head)
	[ $((round % 2)) -eq 0 ] && order=(head base)
	for side in "${order[@]}"; do
		read -r b u < <(measure "$side")
		c=$(churn "$side")
		bare_ns[$side]+="$b "
		uid_ns[$side]+="$u "
		conn_ms[$side]+="$c "
		log "round $round of $rounds, $side: a bare row $b ns, uid_next() above it $u ns, a connection $c ms"
	done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
bb=$(median <<<"${bare_ns[base]}") bh=$(median <<<"${bare_ns[head]}")
ub=$(median <<<"${uid_ns[base]}") uh=$(median <<<"${uid_ns[head]}")
cb=$(median <<<"${conn_ms[base]}") ch=$(median <<<"${conn_ms[head]}")
ratio() { awk -v h="$1" -v b="$2" 'BEGIN { printf "%.2f", h / b }'; }

cat <<-TABLE

	uid_next() against $base_rev, $rounds rounds of $rows IDs, medians (PostgreSQL $PG_MAJOR, $(nproc) cores)

	| | base $base_label | head $head_label | head / base |
	|---|---|---|---|
	| bare generate_series row, ns | $bb | $bh | |
	| uid_next() above a bare row, ns | $ub | $uh | $(ratio "$uh" "$ub")x |
	| a new connection that takes one ID (pgbench -C), ms | $cb | $ch | $(ratio "$ch" "$cb")x |

	every round, uid_next() above a bare row, ns, and a connection, ms:
	  base: ${uid_ns[base]}
	  head: ${uid_ns[head]}
	  base: ${conn_ms[base]}
	  head: ${conn_ms[head]}
TABLE
