#!/usr/bin/env bash
# test/bench/run.sh: "make bench".  Measures uidgen against what a PostgreSQL
# user would use instead (sequences, identity, UUIDs), side by side in one
# run, and reports every figure and its ratios:
#
#   1. generation cost in one backend     4. index locality of bulk loads
#   2. scaling over concurrent backends   5. connection churn (pgbench -C)
#   3. insert tps with pgbench
#
# Like scripts/test.sh it runs on a fresh Debian 12, as root or not: it builds
# uidgen into a private copy of PostgreSQL 15 (or of the server PG_CONFIG
# names: make bench PG_CONFIG=/path/to/pg_config) and benchmarks on a
# throwaway cluster.  On a server with core uuidv7() (PostgreSQL 18 on) it is
# measured too, beside gen_random_uuid(); results of a server other than 15
# go to pgNN.* (pgNN-quick.* for --quick) rather than latest.*.  Progress goes to stderr; the results go to test/bench/results/
# (latest.md, latest.png and the raw samples, latest.tsv) and the Markdown is
# printed on stdout at the end.  A full run also refreshes the Performance
# section of test/bench/README.md.
#
#   test/bench/run.sh [--quick] [--out DIR]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/bench/common.sh
. "$here/common.sh"

usage() {
	cat <<-EOF
		usage: test/bench/run.sh [--quick] [--out DIR]
		  --quick    a smoke run (~2 minutes) with small sizes: checks that the
		             benchmark works; its figures are not meant to be quoted
		  --out DIR  where the results go (default: test/bench/results)
	EOF
}

bench_args "$@"

# The server's major version (server_major) names the results of servers
# other than 15.  Any gnuplot that can write PNG will do.
bench_packages
command -v gnuplot >/dev/null || REQUIRED_PACKAGES+=(gnuplot-nox)

# Sizes.  A full run takes 10-15 minutes on 2 cores; --quick about 2.
#
# gen_rows stays at or below 5,120,000: the default layout has 512 IDs a
# millisecond per backend, uid_next() runs far faster, so the cached
# generator borrows future milliseconds, and 5,120,000 IDs are the 10 s it
# may borrow (uidgen.max_borrow) before it sleeps.  Every measurement runs in
# a new backend, so none inherits the time borrowed by another.
if [ $quick -eq 1 ]; then
	name=quick
	[ "$server_major" = "$PG_MAJOR" ] || name=pg$server_major-quick
	gen_rows=200000 gen_rounds=5
	scale_seconds=0.3 scale_rounds=1
	insert_seconds=2 insert_rounds=1
	churn_seconds=2 churn_rounds=1
	load_rows=100000
else
	name=latest
	[ "$server_major" = "$PG_MAJOR" ] || name=pg$server_major
	gen_rows=5000000 gen_rounds=5
	scale_seconds=1.5 scale_rounds=3
	insert_seconds=3 insert_rounds=6
	churn_seconds=4 churn_rounds=5
	load_rows=2000000
fi
load_clients=8
# How the load_rows rows arrive, as CLIENTS:ROWS-PER-STATEMENT: one statement;
# load_clients clients with one statement each; and load_clients clients
# with 100 rows a transaction, as an application inserting in small batches.
load_modes=("1:$load_rows" "$load_clients:$((load_rows / load_clients))" "$load_clients:100")
insert_clients=(1 2 8)
cores=$(nproc)
churn_clients=$cores

# clock_timestamp() is not something to use instead of uid_next(), but it
# reads the same clock (CLOCK_REALTIME) through the same function-call
# machinery: the floor under the cost of any generator that reads the clock.
gen_keys=(bare random clock nextval_c1 nextval_c1000 uuid uid_cached uid_default uid_batch)
insert_keys=(identity uid uuid)
load_keys=(identity uid_ms uid_s uuid uuidv7)

# The layout of the seconds database: UidGenerator's 28/22/13 shape.  Its own
# epoch (2016-05-20) ran out on 2024-11-20, so this one starts at 2026-01-01.
seconds_layout="28, 22, 13, '2026-01-01 00:00:00+00', 'second'"

# ---- as root: run as postgres on a copy, then bring the results back -------

# refresh_readme_from DIR: puts DIR/latest.md into the Performance section of
# test/bench/README.md.
refresh_readme_from() { refresh_readme "$1/latest.md" bench 's/](latest\.png)/](results\/latest.png)/'; }

ensure_packages "${REQUIRED_PACKAGES[@]}"
if [ "$(id -u)" -eq 0 ]; then
	dest=${out:-$here/results}
	args=()
	[ $quick -eq 0 ] || args+=(--quick)
	status=0
	rerun_for_results "$dest" test/bench/run.sh "${args[@]}" || status=$?
	if [ $status -eq 0 ] && [ "$name" = latest ] && [ -z "$out" ]; then
		refresh_readme_from "$dest"
	fi
	exit $status
fi

# ---- as anyone else: build, start a cluster, measure ----------------------

bench_workspace uidgen-bench
data=$scratch/data

cleanup() {
	local status=$?
	stop_cluster "$bindir" "$data"
	if [ $status -ne 0 ] && [ -f "$data/server.log" ]; then
		echo "--- server log (tail)" >&2
		tail -30 "$data/server.log" >&2
	fi
	[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$scratch"
}
trap cleanup EXIT

q() { psql -X -qAt -v ON_ERROR_STOP=1 "$@"; }

# sample SECTION KEY PARAM METRIC ROUND VALUE: one measurement, for report.sql.
sample() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$samples"; }

# meta NAME VALUE: how the run was made, for the report's text.
meta() { sample meta "$1" 0 value 0 "$2"; }
meta_value() { awk -F'\t' -v name="$1" '$1 == "meta" && $2 == name { print $6 }' "$samples"; }

build() {
	log "building uidgen into a private copy of $("$PG_CONFIG" --version)"
	(cd "$top" && make -s -j"$cores" PG_CONFIG="$PG_CONFIG" && make -s install PG_CONFIG="$PG_CONFIG") \
		>"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; die "build failed"; }
}

# common.sh: measuring_conf, and room for the loads' clients.
tune_cluster() {
	{
		measuring_conf
		echo "max_connections = $((load_clients + 4 * cores + 20))"
	} >>"$data/postgresql.conf"
	restart_cluster "$data"
}

# Database bench has the default layout (41/13/9 milliseconds); bench_sec
# UidGenerator's seconds layout.  Each needs its own database: the layout is
# fixed at the first uid_next() in a database.
prepare_databases() {
	q -c "CREATE DATABASE bench" -c "CREATE DATABASE bench_sec"
	q -d bench -f "$here/setup.sql" >/dev/null
	q -d bench_sec -c "CREATE EXTENSION uidgen" -c "SELECT uid_configure($seconds_layout)" >/dev/null
	q -d bench_sec -f "$here/setup.sql" >/dev/null
	if [ "$has_uuidv7" = t ]; then
		q -d bench -c "CREATE TABLE IF NOT EXISTS bench.ins_uuidv7_core (
				id uuid PRIMARY KEY DEFAULT pg_catalog.uuidv7(), v int NOT NULL
			) WITH (autovacuum_enabled = off)" >/dev/null
	fi
}

checkpoint() { q -d "${1:-postgres}" -c CHECKPOINT; }

# ---- 1. generation cost and 2. scaling ------------------------------------

gen_expr() {
	case $1 in
		bare) echo 'g' ;;
		random) echo 'random()' ;;
		clock) echo 'clock_timestamp()' ;;
		nextval_c1) echo "nextval('bench.seq_cache1')" ;;
		nextval_c1000) echo "nextval('bench.seq_cache1000')" ;;
		uuid) echo 'gen_random_uuid()' ;;
		uid_cached | uid_default) echo 'uid_next()' ;;
		uuidv7_core) echo 'pg_catalog.uuidv7()' ;;
		*) die "no expression for $1" ;;
	esac
}

# gen_statement KEY ROWS: the statement that makes ROWS values of KEY, timed
# on the server by bench.run().
gen_statement() {
	local key=$1 rows=$2 chunk
	if [ "$key" = uid_batch ]; then
		# uid_next_batch() makes at most 1,000,000 IDs a call.
		chunk=$((rows < 1000000 ? rows : 1000000))
		[ $((rows % chunk)) -eq 0 ] || die "rows ($rows) must be a multiple of $chunk"
		echo "SELECT started, finished FROM bench.run(\$q\$SELECT count(f) FROM public.uid_next_batch($chunk) f\$q\$, $((rows / chunk)));"
	else
		echo "SELECT started, finished FROM bench.run(\$q\$SELECT count(f) FROM (SELECT $(gen_expr "$key") AS f FROM generate_series(1, $rows) g) s\$q\$);"
	fi
}

# gen_session KEY ROWS [START]: one new backend makes ROWS values of KEY, after
# a warm-up (which also registers a uid worker) and, given START (Unix
# seconds), after waiting for it.  Prints "started finished".
gen_session() {
	local key=$1 rows=$2 start=${3:-}
	{
		case $key in
			uid_default) echo "SET uidgen.generator = 'default';" ;;
			uid_*) echo "SET uidgen.generator = 'cached';" ;;
		esac
		gen_statement "$key" 10
		[ -z "$start" ] || echo "SELECT pg_catalog.pg_sleep_until(pg_catalog.to_timestamp($start));"
		gen_statement "$key" "$rows"
	} | q -F ' ' -d bench | tail -1
}

measure_generation() {
	local round key started finished
	meta gen_rows "$gen_rows"
	meta gen_rounds "$gen_rounds"
	for round in $(seq "$gen_rounds"); do
		log "1. generation cost: round $round of $gen_rounds (${gen_keys[*]})"
		for key in $(rotated "$round" "${gen_keys[@]}"); do
			read -r started finished < <(gen_session "$key" "$gen_rows")
			sample gen "$key" "$gen_rows" seconds "$round" "$(calc "$finished - $started")"
		done
	done
}

# 1, 2, then powers of two up to the number of cores, and that number.
backend_counts() {
	local k=1
	while [ $k -le "$cores" ] || [ $k -le 2 ]; do
		echo $k
		k=$((k * 2))
	done
	[ $((k / 2)) -eq "$cores" ] || [ "$cores" -le 2 ] || echo "$cores"
}

# median_per_row KEY: section 1's median seconds per row of KEY.
median_per_row() {
	awk -F'\t' -v key="$1" '$1 == "gen" && $2 == key { print $6 / $3 }' "$samples" | sort -g |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# scale_rows_for KEY: rows that keep one backend busy for about scale_seconds,
# so that every expression is timed over a similar span; at most gen_rows
# (the borrowing bound, above), and a multiple of uid_next_batch()'s calls.
scale_rows_for() {
	awk -v target="$scale_seconds" -v per_row="$(median_per_row "$1")" -v cap="$gen_rows" 'BEGIN {
		r = target / per_row
		if (r > cap) r = cap
		r = (r > 1000000) ? int(r / 1000000) * 1000000 : int(r / 1000) * 1000
		print (r < 10000) ? 10000 : r
	}'
}

measure_scaling() {
	local round key k i start pid span scale_rows
	local -a pids
	meta scale_seconds "$scale_seconds"
	meta scale_rounds "$scale_rounds"
	for round in $(seq "$scale_rounds"); do
		log "2. scaling: round $round of $scale_rounds, $(backend_counts | tr '\n' ' ')backends"
		for key in $(rotated "$round" "${gen_keys[@]}"); do
			scale_rows=$(scale_rows_for "$key")
			for k in $(backend_counts); do
				# Every backend connects and warms up, then all start together.
				start=$(calc "$(now) + 0.5 + 0.1 * $k")
				pids=()
				for i in $(seq "$k"); do
					gen_session "$key" "$scale_rows" "$start" >"$work/scale.$i" &
					pids+=($!)
				done
				for pid in "${pids[@]}"; do wait "$pid"; done
				span=$(cat "$work"/scale.[0-9]* | awk 'NR == 1 || $1 < s { s = $1 } NR == 1 || $2 > f { f = $2 } END { print f - s }')
				sample scale "$key" "$k" ids_per_s "$round" "$(calc "$k * $scale_rows / $span")"
				sample scale "$key" "$k" rows "$round" "$scale_rows"
				rm -f "$work"/scale.[0-9]*
			done
		done
	done
}

# ---- 3. inserts and 5. churn ---------------------------------------------

# cpu_per_txn CPU-BEFORE LOG: microseconds of backend CPU per transaction
# (common.sh: children_cpu).
cpu_per_txn() { calc "($(children_cpu "$postmaster_pid") - $1) * 1000000 / $(processed "$2")"; }

write_insert_scripts() {
	local key
	for key in "${insert_keys[@]}"; do
		echo "INSERT INTO bench.ins_$key (v) VALUES (1);" >"$work/insert_$key.sql"
	done
}

# empty_table KEY: each run starts from an empty table and a fresh checkpoint.
empty_table() {
	q -d bench -c "TRUNCATE bench.ins_$1 RESTART IDENTITY" -c CHECKPOINT
}

measure_inserts() {
	local round clients key tps cpu
	meta insert_seconds "$insert_seconds"
	meta insert_rounds "$insert_rounds"
	write_insert_scripts
	for round in $(seq "$insert_rounds"); do
		for clients in "${insert_clients[@]}"; do
			log "3. inserts: round $round of $insert_rounds, $clients client(s), ${insert_keys[*]}"
			for key in $(rotated "$round" "${insert_keys[@]}"); do
				empty_table "$key"
				cpu=$(children_cpu "$postmaster_pid")
				tps=$(pgbench_tps "$work/insert.log" -n -M prepared -c "$clients" -j "$(threads_for "$clients")" \
					-T "$insert_seconds" -f "$work/insert_$key.sql" bench)
				sample insert "$key" "$clients" tps "$round" "$tps"
				sample insert "$key" "$clients" cpu_us "$round" "$(cpu_per_txn "$cpu" "$work/insert.log")"
				sample insert "$key" "$clients" leaf_density "$round" \
					"$(q -d bench -c "SELECT avg_leaf_density FROM public.pgstatindex('bench.ins_${key}_pkey')")"
			done
		done
	done
}

measure_churn() {
	local round key tps cpu connections=0
	meta churn_seconds "$churn_seconds"
	meta churn_rounds "$churn_rounds"
	meta churn_clients "$churn_clients"
	write_insert_scripts
	for round in $(seq "$churn_rounds"); do
		log "5. connection churn: round $round of $churn_rounds, ${insert_keys[*]}"
		for key in $(rotated "$round" "${insert_keys[@]}"); do
			empty_table "$key"
			cpu=$(children_cpu "$postmaster_pid")
			tps=$(pgbench_tps "$work/churn.log" -n -C -c "$churn_clients" -j "$(threads_for "$churn_clients")" \
				-T "$churn_seconds" -f "$work/insert_$key.sql" bench)
			sample churn "$key" "$churn_clients" tps "$round" "$tps"
			sample churn "$key" "$churn_clients" cpu_us "$round" "$(cpu_per_txn "$cpu" "$work/churn.log")"
			[ "$key" != uid ] || connections=$((connections + $(processed "$work/churn.log")))
		done
	done
	# Worker reuse keeps the registry small however many connections came and went.
	meta churn_connections "$connections"
	meta churn_workers "$(q -d bench -c "SELECT count(*) FROM uidgen.worker_node")"
}

# ---- 4. index locality ----------------------------------------------------

load_db() { [ "$1" = uid_s ] && echo bench_sec || echo bench; }

load_key_column() {
	case $1 in
		identity) echo 'id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY' ;;
		uid_ms | uid_s) echo 'id bigint PRIMARY KEY DEFAULT public.uid_next()' ;;
		uuid) echo 'id uuid PRIMARY KEY DEFAULT pg_catalog.gen_random_uuid()' ;;
		uuidv7) echo 'id uuid PRIMARY KEY DEFAULT bench.uuidv7()' ;;
		uuidv7_core) echo 'id uuid PRIMARY KEY DEFAULT pg_catalog.uuidv7()' ;;
		*) die "no key column for $1" ;;
	esac
}

# set_max_borrow VALUE: server-wide (the setting is PGC_SIGHUP), for the
# backends started from now on.
set_max_borrow() {
	q -c "LOAD 'uidgen'" -c "ALTER SYSTEM SET uidgen.max_borrow = '$1'" -c "SELECT pg_reload_conf()" >/dev/null
	local tries=0
	until [ "$(q -c "LOAD 'uidgen'" -c "SHOW uidgen.max_borrow")" = "$1" ]; do
		tries=$((tries + 1))
		[ $tries -lt 50 ] || die "uidgen.max_borrow did not become $1"
		sleep 0.1
	done
}

# load KEY CLIENTS BATCH: load_rows rows into a new table keyed by KEY, by
# CLIENTS clients at once in statements of BATCH rows, and measures the result.
load() {
	local key=$1 clients=$2 batch=$3 db lsn t0 t1
	db=$(load_db "$key")
	# Autovacuum off: its WAL and timing would land in some loads and not others.
	q -d "$db" -c "DROP TABLE IF EXISTS bench.load" \
		-c "CREATE TABLE bench.load ($(load_key_column "$key"), v int NOT NULL) WITH (autovacuum_enabled = off)"
	checkpoint "$db"
	echo "INSERT INTO bench.load (v) SELECT g FROM generate_series(1, $batch) g;" >"$work/load.sql"
	lsn=$(q -d "$db" -c "SELECT pg_current_wal_insert_lsn()")
	t0=$(now)
	if [ "$clients" -eq 1 ] && [ "$batch" -eq "$load_rows" ]; then
		q -d "$db" -f "$work/load.sql"
	else
		pgbench_tps "$work/load.log" -n -c "$clients" -j "$(threads_for "$clients")" \
			-t $((load_rows / clients / batch)) -f "$work/load.sql" "$db" >/dev/null
	fi
	t1=$(now)
	# The mode is known by its rows per statement: param of every sample.
	sample load "$key" "$batch" clients 1 "$clients"
	sample load "$key" "$batch" seconds 1 "$(calc "$t1 - $t0")"
	q -d "$db" -F ' ' -c "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn'),
			pg_relation_size('bench.load_pkey'), s.avg_leaf_density, s.leaf_fragmentation
		FROM public.pgstatindex('bench.load_pkey') s" |
		while read -r wal size density fragmentation; do
			sample load "$key" "$batch" wal_bytes 1 "$wal"
			sample load "$key" "$batch" index_bytes 1 "$size"
			sample load "$key" "$batch" leaf_density 1 "$density"
			sample load "$key" "$batch" leaf_fragmentation 1 "$fragmentation"
		done
	[ "$(q -d "$db" -c "SELECT count(*) FROM bench.load")" -eq "$load_rows" ] || die "the $key load lost rows"
	q -d "$db" -c "DROP TABLE bench.load"
}

measure_loads() {
	local mode clients batch key
	meta load_rows "$load_rows"
	meta load_clients "$load_clients"
	for mode in "${load_modes[@]}"; do
		clients=${mode%%:*} batch=${mode#*:}
		[ $((load_rows % (clients * batch))) -eq 0 ] || die "$load_rows rows do not divide into $mode"
		for key in "${load_keys[@]}"; do
			log "4. index locality: $load_rows rows, $key, $clients client(s), $batch rows a statement"
			# The seconds layout issues 8,192 IDs a second a worker: a load of
			# millions would sleep for minutes at the default 10 s borrowing
			# bound, so it borrows up to an hour here (and says so).
			[ "$key" != uid_s ] || set_max_borrow 1h
			load "$key" "$clients" "$batch"
			[ "$key" != uid_s ] || set_max_borrow 10s
		done
	done
}

# ---- the report -----------------------------------------------------------

machine_section() {
	local cpu mem pg
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
	mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	pg=$(q -c "SELECT version()")
	cat <<-EOF
		## Machine and run

		- $(date -u '+%Y-%m-%d %H:%M UTC'), uidgen $(sed -n "s/^default_version = '\(.*\)'/\1/p" "$top/uidgen.control") (\`$commit\`), $([ $quick -eq 1 ] && echo '**--quick run: small sizes, figures not to be quoted**' || echo 'full run')
		- ${cores} cores (\`nproc\`), ${cpu:-unknown CPU}, $mem; load average before the run: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)
		- $pg
		- throwaway cluster: shared_buffers 512MB, synchronous_commit off, fsync off, jit off, no parallel query, max_wal_size 16GB, an explicit CHECKPOINT before each insert run and load
		- generation and scaling: one new backend per measurement, timed on the server; inserts, churn, loads: \`pgbench\` and \`psql\` over the Unix socket
	EOF
}

report() {
	log "writing the report"
	q -d bench -c "\\copy bench.sample FROM '$samples'"
	{
		echo "# uidgen benchmark"
		echo
		echo "Every figure below was measured in this run, side by side with its baselines; ratios compare medians of the same run. Reproduce with \`test/bench/run.sh\` (or \`make bench\`); \`--quick\` for a smoke run."
		echo
		echo "![uidgen benchmark](${name}.png)"
		echo
		machine_section
		echo
		echo "## Results"
		echo
		q -d bench -v dir="$work" -f "$here/report.sql"
		echo "## Notes"
		echo
		echo "- The default generator waits when a millisecond's 512 sequence numbers are used up (as UidGenerator's DefaultUidGenerator does), so in one backend it cannot go faster than 512,000 IDs/s; the cached generator borrows up to \`uidgen.max_borrow\` (10 s) ahead instead."
		echo "- The seconds layout (28/22/13, epoch 2026-01-01 because UidGenerator's own 2016 epoch ran out in 2024) issues 8,192 IDs a second per worker: for its loads this run raises \`uidgen.max_borrow\` to 1 h, or a 2,000,000-row statement would sleep for minutes."
		echo "- Worker IDs: $(meta_value churn_connections) churning uid connections, and the backends of sections 1-3 before them, left $(meta_value churn_workers) rows in \`uidgen.worker_node\`: released worker IDs are reused."
	} >"$work/$name.md"
	gnuplot -e "dir='$work'; out='$work/$name.png'; title='uidgen $commit, $cores cores, $(date -u +%Y-%m-%d)$([ $quick -eq 1 ] && echo ', --quick')'" \
		"$here/chart.gp" 2>"$work/gnuplot.log" || { cat "$work/gnuplot.log" >&2; die "gnuplot failed"; }
	cp "$work/$name.md" "$work/$name.png" "$out/"
	cp "$samples" "$out/$name.tsv"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(now)
build
log "starting a throwaway cluster"
start_cluster "$bindir" "$data"
tune_cluster
postmaster_pid=$(head -1 "$data/postmaster.pid")
# Core uuidv7() (PostgreSQL 18 on): what users of that server would pick
# instead of uid_next(), so it joins every section where UUIDs are measured.
has_uuidv7=$(q -c "SELECT to_regprocedure('pg_catalog.uuidv7()') IS NOT NULL")
if [ "$has_uuidv7" = t ]; then
	log "the server has uuidv7(): measuring it too"
	gen_keys+=(uuidv7_core)
	insert_keys+=(uuidv7_core)
	load_keys+=(uuidv7_core)
fi
prepare_databases
measure_generation
measure_scaling
measure_inserts
measure_churn
measure_loads
report
log "done in $(calc "($(now) - $started) / 60" | xargs printf '%.1f') minutes; results in $out"
if [ $default_out -eq 1 ] && [ "$name" = latest ]; then
	refresh_readme_from "$out"
fi
cat "$out/$name.md"
