#!/usr/bin/env bash
# test/bench/durable.sh: "make bench-durable".  Inserts with durability on,
# as DBAs compare ID schemes: fsync, full_page_writes and synchronous_commit
# on, tables and primary keys larger than shared_buffers, checkpoints during
# every measured window.  Side by side in one run, the order rotating from
# round to round:
#
#   identity       bigint GENERATED ALWAYS AS IDENTITY (a sequence, CACHE 1)
#   uid_backend    DEFAULT uid_next(), uidgen.scope = backend
#   uid_server     DEFAULT uid_next(), uidgen.scope = server
#   uuid           DEFAULT gen_random_uuid()
#   uuidv7         DEFAULT uuidv7() (core, PostgreSQL 18 on; only where it is)
#   snowflake      DEFAULT snowflake.nextval(...), pgEdge's snowflake 2.x,
#                  built from the source tarball SNOWFLAKE_TARBALL names
#
# 1, 8 and 32 pgbench clients (-M prepared) inserting 1 row and 100 rows a
# transaction for a fixed time each; per window: tps and rows/s, WAL bytes
# per row, full-page images per 1,000 rows, checkpoints, p50/p99 latency,
# and the primary key's growth; at the end, each primary key's size and leaf
# density.  Every figure also as a ratio to identity measured in the same
# round; medians over the rounds.
#
# It builds uidgen (and snowflake) into a private copy of PostgreSQL 15 (or
# of the server PG_CONFIG names) and starts one throwaway cluster on
# 127.0.0.1.  As root it runs as postgres on a copy of the tree.  Progress
# goes to stderr; the Markdown goes to stdout and to
# test/bench/results/durable.md (samples: durable.tsv, chart: durable.png);
# --quick writes quick-durable.*, a server other than 15 pgNN-durable.*.
#
#   test/bench/durable.sh [--quick] [--out DIR]     ROUNDS=N sets the rounds
set -euo pipefail

usage() {
	cat <<-EOF
		usage: test/bench/durable.sh [--quick] [--out DIR]
		  --quick    a smoke run (about 5 minutes): one round, short windows,
		             1 and 8 clients; its figures are not meant to be quoted
		  --out DIR  where the results go (default: test/bench/results)
		  ROUNDS=N   (environment) rounds to run: 5 by default, 1 with --quick
		  SNOWFLAKE_TARBALL=FILE  (environment) a source tarball of pgEdge's
		             snowflake 2.x; without it snowflake is not measured
	EOF
}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/bench/common.sh
. "$here/common.sh"

bench_args "$@"
bench_packages
command -v gnuplot >/dev/null || REQUIRED_PACKAGES+=(gnuplot-nox)

# Sizes.  A full run takes about 25 minutes on 2 cores (5 rounds of 30
# windows on 15, of 36 on 18), --quick about 4.  Each window lasts window_seconds and
# starts right after a checkpoint; the benchmark requests another every
# checkpoint_every seconds inside it (see "Checkpoints" below).
if [ $quick -eq 1 ]; then
	name=quick-durable
	default_rounds=1
	window_seconds=6 checkpoint_every=3
	base_rows=300000
	clients_list=(1 8)
else
	name=durable
	default_rounds=5
	window_seconds=8 checkpoint_every=4
	base_rows=1000000
	clients_list=(1 8 32)
fi
rounds=${ROUNDS:-$default_rounds}
[ "$server_major" = "$PG_MAJOR" ] || name=pg$server_major-$name
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
batches=(1 100)
cores=$(nproc)
# The payload: 100 characters that differ from row to row, so that the row
# is about as wide as a typical narrow table's (key, a few columns).
payload="rpad(md5(random()::text), 100, md5(random()::text))"

# The rerun as postgres starts elsewhere: the tarball's path must not be
# relative to this directory.
if [ -n "${SNOWFLAKE_TARBALL:-}" ] && [ -f "$SNOWFLAKE_TARBALL" ]; then
	SNOWFLAKE_TARBALL=$(cd "$(dirname "$SNOWFLAKE_TARBALL")" && pwd)/$(basename "$SNOWFLAKE_TARBALL")
	export SNOWFLAKE_TARBALL
fi

ensure_packages "${REQUIRED_PACKAGES[@]}"
bench_as_root test/bench/durable.sh durable bench-durable

# ---- as anyone else: build, start the cluster, measure --------------------

bench_workspace uidgen-bench-durable
declare -A port
cluster=main
data=$scratch/data-$cluster

cleanup() { stop_clusters $? "$cluster"; }
trap cleanup EXIT

# snowflake_build: builds pgEdge's snowflake into the private server from
# SNOWFLAKE_TARBALL, never from the network; on failure sets
# snowflake_missing to why and returns 1.
snowflake_missing=""
snowflake_build() {
	local src
	if [ -z "${SNOWFLAKE_TARBALL:-}" ]; then
		snowflake_missing="SNOWFLAKE_TARBALL is not set"
		return 1
	fi
	if [ ! -r "$SNOWFLAKE_TARBALL" ]; then
		snowflake_missing="SNOWFLAKE_TARBALL=$SNOWFLAKE_TARBALL is not a readable file"
		return 1
	fi
	mkdir -p "$work/snowflake"
	if ! tar -C "$work/snowflake" -xzf "$SNOWFLAKE_TARBALL" 2>"$work/snowflake.log"; then
		snowflake_missing="$(basename "$SNOWFLAKE_TARBALL") does not unpack"
		return 1
	fi
	src=$(find "$work/snowflake" -mindepth 1 -maxdepth 1 -type d | head -1)
	if [ -z "$src" ] || [ ! -f "$src/snowflake.control" ]; then
		snowflake_missing="$(basename "$SNOWFLAKE_TARBALL") holds no snowflake.control"
		return 1
	fi
	if ! (cd "$src" && make -s USE_PGXS=1 with_llvm=no PG_CONFIG="$PG_CONFIG" &&
		make -s USE_PGXS=1 with_llvm=no PG_CONFIG="$PG_CONFIG" install) >>"$work/snowflake.log" 2>&1; then
		tail -20 "$work/snowflake.log" >&2
		snowflake_missing="the build of $(basename "$SNOWFLAKE_TARBALL") failed (its log above, on stderr)"
		return 1
	fi
	snowflake_version=$(sed -nE "s/^default_version *= *'([^']*)'.*/\1/p" "$src/snowflake.control")
	log "built pgEdge snowflake $snowflake_version from $(basename "$SNOWFLAKE_TARBALL")"
}

# ---- the cluster ------------------------------------------------------------
#
# Durability on, as a production server runs: fsync (which start_cluster
# turns off for the tests; the later line wins), full_page_writes and
# synchronous_commit.  shared_buffers is 16 MB, so that every table and its
# primary key are larger than it from the first window (base_rows rows each
# before the first round): inserts meet evictions and reads, as on a server
# whose data outgrows its memory.
#
# Checkpoints: checkpoint_timeout cannot go below 30 s, and a window of 30 s
# or more for each of 30-36 windows a round would take an hour; a timed
# checkpoint would also fall into some windows and not others, and full-page
# images follow checkpoints.  So every window starts right after a
# CHECKPOINT and the benchmark requests one every checkpoint_every seconds
# inside it: each scheme meets the same checkpoints at the same moments.
# checkpoint_timeout = 30s stays as a bound (no window goes 30 s without
# one), and each window's count is recorded from the server's statistics.
#
# One cluster for every scheme, so that they share the same 16 MB; uidgen
# preloaded (scope server needs it on 15) and uidgen.scope switched by a
# reload before each uidgen window (a session keeps the scope of its first
# ID); the keepers of scope server stay (keeper_idle_timeout 0), as on a
# server that inserts all day.  Autovacuum is off on the tables, so that it
# runs in no window.  No JIT or parallel query.
start_durable_cluster() {
	start_cluster "$bindir" "$data"
	{
		echo "listen_addresses = '127.0.0.1'"
		echo "fsync = on"
		echo "full_page_writes = on"
		echo "synchronous_commit = on"
		echo "wal_compression = off"
		echo "shared_buffers = 16MB"
		echo "checkpoint_timeout = 30s"
		echo "max_wal_size = 1GB"
		echo "max_connections = $((${clients_list[-1]} + 20))"
		echo "jit = off"
		echo "max_parallel_workers_per_gather = 0"
		echo "shared_preload_libraries = 'uidgen'"
		echo "uidgen.keeper_idle_timeout = 0"
		echo "snowflake.node = 1"
	} >>"$data/postgresql.conf"
	restart_cluster "$data"
	port[$cluster]=$PGPORT
	postmaster=$(head -1 "$data/postmaster.pid")
	q "$cluster" -c "CREATE DATABASE bench"
	q "$cluster" -d bench -f "$here/setup.sql" >/dev/null
}

# sql [PSQL-ARGS...]: psql on database bench.
sql() { q "$cluster" -d bench "$@"; }

# key_column SCHEME: the definition of each scheme's key column.
key_column() {
	case $1 in
		identity) echo "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY" ;;
		uid_backend | uid_server) echo "bigint PRIMARY KEY DEFAULT public.uid_next()" ;;
		uuid) echo "uuid PRIMARY KEY DEFAULT pg_catalog.gen_random_uuid()" ;;
		uuidv7) echo "uuid PRIMARY KEY DEFAULT pg_catalog.uuidv7()" ;;
		snowflake) echo "bigint PRIMARY KEY DEFAULT snowflake.nextval('bench.d_snowflake_id_seq')" ;;
		*) die "no key for $1" ;;
	esac
}

# set_scope SCOPE: uidgen.scope for the sessions that start from now on.
set_scope() {
	local tries=0
	[ "$(sql -c "SHOW uidgen.scope")" != "$1" ] || return 0
	sql -c "ALTER SYSTEM SET uidgen.scope = '$1'" -c "SELECT pg_reload_conf()" >/dev/null
	until [ "$(sql -c "SHOW uidgen.scope")" = "$1" ]; do
		tries=$((tries + 1))
		[ $tries -lt 100 ] || die "uidgen.scope did not become $1 after a reload"
		sleep 0.1
	done
}

scope_for() { case $1 in uid_backend) set_scope backend ;; uid_server) set_scope server ;; esac; }

# create_tables: one table a scheme, each filled with base_rows rows by its
# own default in one statement (as a table loaded once, then inserted into).
create_tables() {
	local scheme
	if [ -n "$snowflake_version" ]; then
		sql -c "CREATE EXTENSION snowflake" -c "CREATE SEQUENCE bench.d_snowflake_id_seq" >/dev/null
	fi
	for scheme in "${schemes[@]}"; do
		scope_for "$scheme"
		log "table bench.d_$scheme: $base_rows rows"
		sql -c "CREATE TABLE bench.d_$scheme (id $(key_column "$scheme"), payload text NOT NULL)
				WITH (autovacuum_enabled = off)" \
			-c "INSERT INTO bench.d_$scheme (payload) SELECT $payload FROM generate_series(1, $base_rows)" >/dev/null
		echo "INSERT INTO bench.d_$scheme (payload) VALUES ($payload);" >"$work/insert_${scheme}_1.sql"
		echo "INSERT INTO bench.d_$scheme (payload) SELECT $payload FROM generate_series(1, 100);" \
			>"$work/insert_${scheme}_100.sql"
	done
	sql -c CHECKPOINT
	for scheme in "${schemes[@]}"; do index_state "$scheme"; done
}

# checkpoints_query: the server's count of checkpoints (pg_stat_checkpointer
# from 17 on; num_done, which leaves out skipped ones, from 18 on).
checkpoints_query() {
	if [ "$server_major" -ge 18 ]; then
		echo "SELECT num_done FROM pg_catalog.pg_stat_checkpointer"
	elif [ "$server_major" -ge 17 ]; then
		echo "SELECT num_timed + num_requested FROM pg_catalog.pg_stat_checkpointer"
	else
		echo "SELECT checkpoints_timed + checkpoints_req FROM pg_catalog.pg_stat_bgwriter"
	fi
}

# counters: "WAL-position-in-bytes full-page-images checkpoints", the
# server's, in a new session (so no cached statistics snapshot).
counters() {
	sql -F ' ' -c "SELECT pg_catalog.pg_current_wal_lsn() - '0/0', (SELECT wal_fpi FROM pg_catalog.pg_stat_wal), ($(checkpoints_query))"
}

# index_state SCHEME: the primary key now, into leaf_pages, leaf_density and
# index_bytes (associative arrays by scheme).
declare -A leaf_pages leaf_density index_bytes
index_state() {
	local pages density bytes
	read -r pages density bytes < <(sql -F ' ' -c "SELECT leaf_pages, avg_leaf_density, index_size
		FROM public.pgstatindex('bench.d_$1_pkey')")
	leaf_pages[$1]=$pages leaf_density[$1]=$density index_bytes[$1]=$bytes
}

# Space for tuples on a leaf page: what pgstatindex's avg_leaf_density is a
# share of (a block less its page header and the B-tree's special space).
leaf_space=$((8192 - 24 - 16))

# leaf_bytes SCHEME: what a row takes on a leaf page of its primary key: an
# index tuple (an 8-byte header and the key, padded to 8 bytes) and its
# 4-byte line pointer.
leaf_bytes() { case $1 in uuid | uuidv7) echo 28 ;; *) echo 20 ;; esac; }

# latency_percentiles: "p50 p99" in ms of the transactions in the pgbench
# logs ($work/lat.*: client, transaction, latency in µs, ...); removes them.
latency_percentiles() {
	cat "$work"/lat.* | awk '{ print $3 }' | sort -n | awk '
		{ v[NR] = $1 }
		END {
			p50 = v[int(NR * 0.50 + 0.999999)]; p99 = v[int(NR * 0.99 + 0.999999)]
			printf "%.9g %.9g\n", p50 / 1000, p99 / 1000
		}'
	rm -f "$work"/lat.*
}

# window ROUND SCHEME CLIENTS BATCH: one measured window.
window() {
	local round=$1 scheme=$2 clients=$3 batch=$4 log=$work/pgbench.log
	local lsn0 fpi0 ck0 lsn1 fpi1 ck1 cpu0 cpu1 tps rows p50 p99 pages0 bytes0 i ckpid
	scope_for "$scheme"
	sql -c CHECKPOINT
	read -r lsn0 fpi0 ck0 < <(counters)
	cpu0=$(children_cpu "$postmaster")
	pages0=${leaf_pages[$scheme]} bytes0=${index_bytes[$scheme]}
	# The checkpoints inside the window, at fixed moments from its start.
	(
		for ((i = checkpoint_every; i < window_seconds; i += checkpoint_every)); do
			sleep "$checkpoint_every"
			sql -c CHECKPOINT
		done
	) &
	ckpid=$!
	tps=$(bench "$cluster" "$log" -M prepared -c "$clients" -j "$(threads_for "$clients")" \
		-T "$window_seconds" --log --log-prefix="$work/lat" -f "$work/insert_${scheme}_$batch.sql")
	wait "$ckpid"
	# common.sh: children_cpu waits until the window's backends have ended
	# (and with them flushed their WAL statistics), and gives the CPU time
	# they spent: steadier than tps on a machine whose disk others share.
	cpu1=$(children_cpu "$postmaster")
	read -r lsn1 fpi1 ck1 < <(counters)
	read -r p50 p99 < <(latency_percentiles)
	index_state "$scheme"
	rows=$(($(processed "$log") * batch))
	[ "$rows" -gt 0 ] || die "$scheme: no row inserted in a window of $window_seconds s"
	put() { sample insert "$scheme" "$batch" "$clients" "$1" "$round" "$2"; }
	put tps "$tps"
	put rows_per_s "$(calc "$tps * $batch")"
	put cpu_us_per_row "$(calc "($cpu1 - $cpu0) * 1000000 / $rows")"
	put wal_bytes_per_row "$(calc "($lsn1 - $lsn0) / $rows")"
	put fpi_per_1000_rows "$(calc "($fpi1 - $fpi0) * 1000 / $rows")"
	put checkpoints "$((ck1 - ck0))"
	put p50_ms "$p50"
	put p99_ms "$p99"
	put index_bytes_per_row "$(calc "(${index_bytes[$scheme]} - $bytes0) / $rows")"
	# The fill of the leaf space the window added: the bytes its rows put
	# into leaves over the leaf pages it added (not from avg_leaf_density,
	# whose two decimals over tens of thousands of pages are worth more than
	# the few pages a short window adds).
	put leaf_pages_added "$((${leaf_pages[$scheme]} - pages0))"
	if [ "${leaf_pages[$scheme]}" -gt "$pages0" ]; then
		put added_leaf_density "$(calc "100.0 * $rows * $(leaf_bytes "$scheme") / ((${leaf_pages[$scheme]} - $pages0) * $leaf_space)")"
	fi
}

# final_state: each table and primary key at the end of the run.
final_state() {
	local scheme
	for scheme in "${schemes[@]}"; do
		sql -F ' ' -c "SELECT (SELECT count(*) FROM bench.d_$scheme), pg_relation_size('bench.d_$scheme'),
				s.index_size, s.avg_leaf_density, s.leaf_fragmentation
			FROM public.pgstatindex('bench.d_${scheme}_pkey') s" | {
			read -r rows heap pk density frag
			sample final "$scheme" 0 0 rows 0 "$rows"
			sample final "$scheme" 0 0 table_bytes 0 "$heap"
			sample final "$scheme" 0 0 index_bytes 0 "$pk"
			sample final "$scheme" 0 0 leaf_density 0 "$density"
			sample final "$scheme" 0 0 leaf_fragmentation 0 "$frag"
			sample final "$scheme" 0 0 index_bytes_per_row 0 "$(calc "$pk / $rows")"
		}
	done
}

# ---- the report -----------------------------------------------------------

setting() { sql -c "SELECT setting || coalesce(unit, '') FROM pg_settings WHERE name = '$1'"; }

report() {
	local snowflake_line
	if [ -n "$snowflake_version" ]; then
		snowflake_line="- pgEdge snowflake $snowflake_version, built from \`$(basename "$SNOWFLAKE_TARBALL")\`, \`snowflake.node = 1\`, \`DEFAULT snowflake.nextval('bench.d_snowflake_id_seq')\`"
	else
		snowflake_line="- pgEdge snowflake: not measured ($snowflake_missing)"
	fi
	{
		report_head "uidgen benchmark: durable inserts" "$cluster" bench-durable
		echo "- one cluster on 127.0.0.1: \`fsync = $(setting fsync)\`, \`full_page_writes = $(setting full_page_writes)\`, \`synchronous_commit = $(setting synchronous_commit)\`, \`wal_compression = $(setting wal_compression)\`, \`shared_buffers = $(sql -c "SHOW shared_buffers")\`, \`checkpoint_timeout = $(sql -c "SHOW checkpoint_timeout")\`, \`max_wal_size = $(sql -c "SHOW max_wal_size")\`, jit and parallel query off, autovacuum off on the tables"
		echo "- each table: the key and a 100-character payload, $(printf "%'d" "$base_rows") rows loaded by its own default before the first round (larger than \`shared_buffers\`, table and primary key); the windows add to them"
		echo "- windows of $window_seconds s (\`pgbench -M prepared -T $window_seconds\`), at $(echo "${clients_list[*]}" | sed 's/ /, /g') clients, 1 and 100 rows a transaction; each window starts right after a \`CHECKPOINT\` and requests one every $checkpoint_every s inside it (checkpoint_timeout's 30 s minimum would not fit $((${#schemes[@]} * ${#clients_list[@]} * 2)) windows a round)"
		echo "- uidgen preloaded; \`uidgen.scope\` set by a reload before each uidgen window (\`uid_backend\`: backend, \`uid_server\`: server), both in this one cluster; \`uidgen.keeper_idle_timeout = 0\`"
		echo "$snowflake_line"
		[ "$has_uuidv7" = t ] || echo "- core \`uuidv7()\`: not measured (PostgreSQL $server_major has none; 18 has)"
		echo
		sql -v samples="$samples" -v dir="$work" -v schemes="${schemes[*]}" -f "$here/durable-report.sql"
	} >"$work/$name.md"
	gnuplot -e "dir='$work'; out='$work/$name.png'; title='uidgen $commit, durable inserts, PostgreSQL $server_major, $cores cores, $(date -u +%Y-%m-%d)$([ $quick -eq 1 ] && echo ', --quick')'; schemes='${schemes[*]}'" \
		"$here/durable.gp" 2>"$work/gnuplot.log" || { cat "$work/gnuplot.log" >&2; die "gnuplot failed"; }
	cp "$work/$name.md" "$work/$name.png" "$out/"
	cp "$samples" "$out/$name.tsv"
}

bench_build test/bench/durable.sh
# bench_build writes the command for scope.sh's default rounds.
command="$([ "$rounds" -eq "$default_rounds" ] || echo "ROUNDS=$rounds ")test/bench/durable.sh$([ $quick -eq 0 ] || echo ' --quick')"
snowflake_version=""
if ! snowflake_build; then
	log "pgEdge snowflake: not measured ($snowflake_missing)"
	echo "pgEdge snowflake: not measured ($snowflake_missing)"
fi
start_durable_cluster
schemes=(identity uid_backend uid_server uuid)
has_uuidv7=$(sql -c "SELECT to_regprocedure('pg_catalog.uuidv7()') IS NOT NULL")
[ "$has_uuidv7" = f ] || schemes+=(uuidv7)
[ -z "$snowflake_version" ] || schemes+=(snowflake)
log "schemes: ${schemes[*]}; port ${port[$cluster]}"
create_tables
for round in $(seq "$rounds"); do
	for batch in "${batches[@]}"; do
		for clients in "${clients_list[@]}"; do
			log "round $round of $rounds: $clients clients, $batch row(s) a transaction ($(minutes) minutes so far)"
			for scheme in $(rotated "$round" "${schemes[@]}"); do
				window "$round" "$scheme" "$clients" "$batch"
			done
		done
	done
done
final_state
report
bench_done durable bench-durable
