#!/usr/bin/env bash
# test/bench/scope.sh: "make bench-scope".  The targets of the server-wide
# generator (uidgen.scope), for scope = server and scope = backend, each
# against its baseline measured in the same run:
#
#   1. churn: a new connection per transaction that takes one ID (pgbench -C),
#      time per connection ≤ 1.05× the same with an identity column
#   2. 8 clients inserting 100 rows a transaction at once: the primary key's
#      leaf density ≥ 88 % (identity as the reference)
#   3. ≤ 30 ns per ID above a bare generate_series
#   4. IDs/s of 2 backends at once ≥ 1.8× those of 1
#   5. insert tps at 1, 2 and 8 clients within 5 % of identity
#
# It builds uidgen into a private copy of PostgreSQL 15 (or of the server
# PG_CONFIG names), starts two throwaway clusters on 127.0.0.1, one with
# uidgen.scope = server (uidgen preloaded) and one with uidgen.scope =
# backend (loaded by the first call, as 1.0 is), and measures both in interleaved rounds, every
# figure of uidgen paired with its baseline of the same round and cluster;
# the report gives medians.  As root it runs as postgres on a copy of the
# tree.  Progress goes to stderr; the Markdown table goes to stdout and to
# test/bench/results/scope.md (samples: scope.tsv); a full run on 15 also
# refreshes its section of test/bench/README.md.
#
#   test/bench/scope.sh [--quick] [--out DIR]     ROUNDS=N sets the rounds
set -euo pipefail

usage() {
	cat <<-EOF
		usage: test/bench/scope.sh [--quick] [--out DIR]
		  --quick    a smoke run (about 2 minutes): one round, small sizes; its
		             figures are not meant to be quoted
		  --out DIR  where the results go (default: test/bench/results)
		  ROUNDS=N   (environment) rounds to run: 6 by default, 1 with --quick
		  UIDGEN_PRELOAD=server|both|none  (environment) which cluster preloads
		             uidgen: the server-scope one (default), both, neither
	EOF
}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/bench/common.sh
. "$here/common.sh"

bench_args "$@"
bench_packages

# Sizes.  A full run takes about 13 minutes on 2 cores, --quick about 2.
if [ $quick -eq 1 ]; then
	name=scope-quick
	rounds=${ROUNDS:-1}
	churn_seconds=2 insert_seconds=1
	dense_rows=100000
	id_rows=200000 id_reps=1
	scale_rows=400000
else
	name=scope
	rounds=${ROUNDS:-6}
	churn_seconds=4 insert_seconds=3
	dense_rows=1000000
	id_rows=5000000 id_reps=3
	scale_rows=4000000
fi
[ "$server_major" = "$PG_MAJOR" ] || name=pg$server_major-$name
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
cores=$(nproc)
churn_clients=$cores
dense_clients=8 dense_batch=100
insert_clients=(1 2 8)
scopes=(server backend)
preload=${UIDGEN_PRELOAD:-server}
case $preload in server | both | none) ;; *) die "UIDGEN_PRELOAD must be server, both or none" ;; esac
keys=(uid identity)

ensure_packages "${REQUIRED_PACKAGES[@]}"
bench_as_root test/bench/scope.sh scope bench-scope

# ---- as anyone else: build, start two clusters, measure -------------------

bench_workspace uidgen-bench-scope
declare -A port postmaster keeper

cleanup() { stop_clusters $? "${scopes[@]}"; }
trap cleanup EXIT

# A cluster per scope, each session keeping the scope it starts with.  The
# settings of run.sh (common.sh: measuring_conf), and uidgen.max_borrow 1 h:
# a worker issues 512 IDs a millisecond in the default layout, the bursts of
# sections 3 and 4 many times that, borrowing seconds ahead, and the targets
# are about the cost of an ID, not about that bound (the report gives how far
# it went).  PostgreSQL 15 needs the library preloaded for scope server's
# shared memory; the backend cluster runs as 1.0 is run, uidgen loaded by a
# session's first call.  UIDGEN_PRELOAD=both preloads it there too, so that
# the setting is all that differs; UIDGEN_PRELOAD=none nowhere (17 and
# later: the DSM registry).
start_scope_cluster() {
	local scope=$1 data=$scratch/data-$1
	start_cluster "$bindir" "$data"
	{
		measuring_conf
		echo "listen_addresses = '127.0.0.1'"
		echo "uidgen.scope = '$scope'"
		echo "uidgen.max_borrow = '1h'"
		if [ "$preload" = both ] || { [ "$scope" = server ] && [ "$preload" = server ]; }; then
			echo "shared_preload_libraries = 'uidgen'"
		fi
	} >>"$data/postgresql.conf"
	restart_cluster "$data"
	port[$scope]=$PGPORT
	postmaster[$scope]=$(head -1 "$data/postmaster.pid")
	q "$scope" -c "CREATE DATABASE bench"
	q "$scope" -d bench -f "$here/setup.sql" >/dev/null
	# The first ID starts the server-wide generator (and its keeper).
	q "$scope" -d bench -c "SELECT public.uid_next()" >/dev/null
	keeper[$scope]=$(q "$scope" -d bench -c "SELECT CASE WHEN to_regclass('uidgen.server_generator') IS NOT NULL
		THEN (SELECT max(keeper_pid) FROM uidgen.server_generator) END" 2>/dev/null || true)
	log "scope $scope: port ${port[$scope]}, uidgen.scope = $(q "$scope" -d bench -c "SHOW uidgen.scope" 2>/dev/null || echo unknown)"
}

# cpu SCOPE: CPU seconds of the backends that have ended (common.sh:
# children_cpu) and of the keeper, which works for the server-wide generator.
cpu() {
	local scope=$1 pm k
	pm=$(children_cpu "${postmaster[$scope]}")
	k=${keeper[$scope]:-}
	if [ -n "$k" ] && [ -r "/proc/$k/stat" ]; then
		calc "$pm + $(sed 's/.*) //' "/proc/$k/stat" | awk -v hz="$clk_tck" '{ print ($12 + $13) / hz }')"
	else
		echo "$pm"
	fi
}

# empty SCOPE KEY: each run starts from an empty table and a fresh checkpoint.
empty() { q "$1" -d bench -c "TRUNCATE bench.ins_$2 RESTART IDENTITY" -c CHECKPOINT; }

write_scripts() {
	local key
	for key in "${keys[@]}"; do
		echo "INSERT INTO bench.ins_$key (v) VALUES (1);" >"$work/insert_$key.sql"
		echo "INSERT INTO bench.ins_$key (v) SELECT g FROM generate_series(1, $dense_batch) g;" >"$work/batch_$key.sql"
	done
}

# combos: every scope with every key, SCOPE:KEY, the order to rotate.
combos() {
	local scope key
	for scope in "${scopes[@]}"; do
		for key in "${keys[@]}"; do echo "$scope:$key"; done
	done
}

# ---- the measurements: one round of each ----------------------------------

# pgbench_run SECTION ROUND SCOPE:KEY CLIENTS SCRIPT PGBENCH-ARGS...: pgbench
# with SCRIPT (insert or batch) from an empty table; records its tps and the
# backend CPU per transaction (cpu).
pgbench_run() {
	local section=$1 round=$2 scope=${3%:*} key=${3#*:} clients=$4 script=$5 before tps
	shift 5
	empty "$scope" "$key"
	before=$(cpu "$scope")
	tps=$(bench "$scope" "$work/$section.log" -c "$clients" -j "$(threads_for "$clients")" "$@" \
		-f "$work/${script}_$key.sql")
	sample "$section" "$scope" "$key" "$clients" tps "$round" "$tps"
	sample "$section" "$scope" "$key" "$clients" cpu_us "$round" \
		"$(calc "($(cpu "$scope") - $before) * 1000000 / $(processed "$work/$section.log")")"
}

# 1. A new connection per transaction that inserts one row (pgbench -C).
churn() {
	local combo
	for combo in $(rotated "$1" $(combos)); do
		pgbench_run churn "$1" "$combo" "$churn_clients" insert -C -T "$churn_seconds"
	done
}

# 2. dense_clients clients inserting dense_batch rows a transaction at once,
# dense_rows in all, into an empty table: the primary key afterwards.
density() {
	local combo
	for combo in $(rotated "$1" $(combos)); do
		pgbench_run dense "$1" "$combo" "$dense_clients" batch -t $((dense_rows / dense_clients / dense_batch))
		q "${combo%:*}" -d bench -F ' ' -c "SELECT s.avg_leaf_density, pg_relation_size('bench.ins_${combo#*:}_pkey'),
				(SELECT count(*) FROM bench.ins_${combo#*:})
			FROM public.pgstatindex('bench.ins_${combo#*:}_pkey') s" | {
			read -r density size rows
			[ "$rows" -eq "$dense_rows" ] || die "$combo: $rows rows loaded, not $dense_rows"
			sample dense "${combo%:*}" "${combo#*:}" "$dense_clients" leaf_density "$1" "$density"
			sample dense "${combo%:*}" "${combo#*:}" "$dense_clients" index_bytes "$1" "$size"
		}
	done
}

# 4. 1 and 2 backends, started together, each making scale_rows values (of
# uid_next(), and of the bare series for what the machine itself scales to):
# values per second of all of them, from the first start to the last finish;
# and the same on the CPU: as if each backend had had a core of its own all
# along (the rows over the longest CPU time of a backend).
scaling() {
	local round=$1 scope expr key k i start pids
	for scope in $(rotated "$round" "${scopes[@]}"); do
		for key in $(rotated "$round" uid bare); do
			expr=g
			[ "$key" = bare ] || expr='public.uid_next()'
			for k in 1 2; do
				# Every backend connects and warms up, then all start together.
				start=$(calc "$(now) + 0.5 + 0.1 * $k")
				pids=()
				for i in $(seq "$k"); do
					statement "$expr" "$scale_rows" | session "$scope" "$start" >"$work/scale.$i" &
					pids+=($!)
				done
				for i in "${pids[@]}"; do wait "$i"; done
				cat "$work"/scale.[0-9]* | awk -v k="$k" -v rows="$scale_rows" '
					NR == 1 || $1 < s { s = $1 }
					NR == 1 || $2 > f { f = $2 }
					NR == 1 || $3 > c { c = $3 }
					END { printf "%.9g %.9g\n", k * rows / (f - s), k * rows / c }' | {
					read -r wall cpu
					sample scale "$scope" "$key" "$k" ids_per_s "$round" "$wall"
					sample scale "$scope" "$key" "$k" cpu_ids_per_s "$round" "$cpu"
				}
				rm -f "$work"/scale.[0-9]*
			done
		done
	done
}

# 5. One row a transaction, -M prepared, at 1, 2 and 8 clients.
inserts() {
	local clients combo
	for clients in "${insert_clients[@]}"; do
		for combo in $(rotated "$1" $(combos)); do
			pgbench_run insert "$1" "$combo" "$clients" insert -M prepared -T "$insert_seconds"
		done
	done
}

# ---- the report -----------------------------------------------------------

preload_words() {
	case $preload in
		server) echo "uidgen preloaded (\`shared_preload_libraries\`) in the server cluster only, loaded by the first call in the backend cluster, as 1.0 is run" ;;
		both) echo "both with \`shared_preload_libraries = 'uidgen'\`" ;;
		none) echo "uidgen loaded by the first call in both (\`UIDGEN_PRELOAD=none\`)" ;;
	esac
}

# generator_state: the server cluster's uidgen.server_generator at the end,
# as a Markdown line.
generator_state() {
	q server -d bench <<-'SQL'
		SELECT to_regclass('uidgen.server_generator') IS NOT NULL AS has_view \gset
		\if :has_view
		SELECT '- `uidgen.server_generator` at the end: '
		       || coalesce(string_agg(format('worker %s, %s IDs issued in %s chunks, %s dropped, %s ms ahead of '
		                                     'the clock (%s ms reserved ahead), %s waits, %s private workers',
		                                     worker, ids_issued, chunks, ids_dropped, ahead_ms, reserved_ahead_ms,
		                                     waits, private_workers), '; '), 'no row')
		  FROM uidgen.server_generator;
		\else
		SELECT '- `uidgen.server_generator`: no such view (a uidgen without the server-wide generator)';
		\endif
	SQL
}

report() {
	{
		report_head "uidgen benchmark: server-wide generator (uidgen.scope)" backend bench-scope
		echo "- two clusters on 127.0.0.1, \`uidgen.scope = server\` and \`uidgen.scope = backend\`, $(preload_words); each: shared_buffers 512MB, synchronous_commit off, fsync off, jit off, no parallel query, \`uidgen.max_borrow\` 1h"
		echo "- uidgen's settings in the server cluster: $(q server -d bench -c "SELECT string_agg(format('\`%s = %s%s\`', name, setting, coalesce(unit, '')), ', ' ORDER BY name) FROM pg_settings WHERE name LIKE 'uidgen.%'")"
		generator_state
		echo
		q backend -v samples="$samples" -v dense_rows="$dense_rows" -v id_reps="$id_reps" -f "$here/scope-report.sql"
	} >"$work/$name.md"
	cp "$work/$name.md" "$out/"
	cp "$samples" "$out/$name.tsv"
}

bench_build test/bench/scope.sh
for scope in "${scopes[@]}"; do start_scope_cluster "$scope"; done
write_scripts
for round in $(seq "$rounds"); do
	log "round $round of $rounds: 1. churn"
	churn "$round"
	log "round $round of $rounds: 2. density"
	density "$round"
	log "round $round of $rounds: 3. per-ID cost"
	per_id "$round" "${scopes[@]}"
	log "round $round of $rounds: 4. scaling"
	scaling "$round"
	log "round $round of $rounds: 5. inserts"
	inserts "$round"
done
report
bench_done scope bench-scope
