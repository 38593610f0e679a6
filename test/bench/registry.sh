#!/usr/bin/env bash
# test/bench/registry.sh: "make bench-registry".  What a registry (uidgen
# 2.0, uidgen.registry) costs the sessions of a member server, each figure
# against its baseline measured in the same run:
#
#   1. a new connection and its first uid_next(), the server's reserve of
#      workers warm: a member against a server without a registry (1.x's
#      per-database worker table), and against a bare SELECT 1 connection
#   2. a first uid_next() that must wait for a block claim: two connected
#      sessions take their first ID at the same instant from a server whose
#      reserve is one worker (a registry with block_size 1), against the same
#      race on the member (block_size 16, reserve warm); and the first ID
#      right after a restart, member against non-registry server
#   3. churn: a new connection per transaction that takes one ID (pgbench
#      -C), member against non-registry server, uidgen.scope backend and
#      server
#   4. the hot path: what uid_next() adds per ID to a bare generate_series,
#      member against non-registry server
#
# It builds uidgen into a private copy of PostgreSQL 15 (or of the server
# PG_CONFIG names) and starts three throwaway clusters on 127.0.0.1 from it:
# "registry", which holds the registry database the member uses (default
# rules) and a second one, "claims", with block_size 1, of which it is itself
# the member (section 2); "member", whose uidgen.registry names the first;
# and "plain", without a registry.  All preload uidgen and keep the default
# uidgen.max_borrow (10 s, the registry's).  Rounds are interleaved, every
# figure paired with its baseline of the same round; the report gives
# medians.  As root it runs as postgres on a copy of the tree.  Progress goes
# to stderr; the Markdown table goes to stdout and to
# test/bench/results/registry.md (samples: registry.tsv); a full run on 15
# also refreshes its section of test/bench/README.md.
#
#   test/bench/registry.sh [--quick] [--out DIR]     ROUNDS=N sets the rounds
set -euo pipefail

usage() {
	cat <<-EOF
		usage: test/bench/registry.sh [--quick] [--out DIR]
		  --quick    a smoke run (about 2 minutes, most of it the build): one
		             round, small sizes; its figures are not meant to be quoted
		  --out DIR  where the results go (default: test/bench/results)
		  ROUNDS=N   (environment) rounds to run: 6 by default, 1 with --quick
	EOF
}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/bench/common.sh
. "$here/common.sh"

bench_args "$@"
bench_packages

# Sizes.  A full run takes about 7 minutes on 2 cores (1 to 3 of them the
# build), --quick about 2.
if [ $quick -eq 1 ]; then
	name=registry-quick
	rounds=${ROUNDS:-1}
	first_seconds=1 churn_seconds=1
	id_rows=200000 id_reps=1
	races=2
else
	name=registry
	rounds=${ROUNDS:-6}
	first_seconds=5 churn_seconds=5
	id_rows=2000000 id_reps=3
	races=4
fi
[ "$server_major" = "$PG_MAJOR" ] || name=pg$server_major-$name
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number"
cores=$(nproc)
churn_clients=$cores
# Each race of section 2 uses two blocks of the registry server's own life
# (block_size 1), and a server life holds at most 64 blocks
# (src/registry/lease_table.hpp: max_leased_blocks; the registry's
# max_system_blocks is raised from 16 to 64 for it); the races stop after
# race_budget.
race_budget=28
races=$((races * rounds > race_budget ? race_budget / rounds : races))
[ "$races" -ge 1 ] || races=1
race_left=$race_budget
clusters=(registry member plain)

ensure_packages "${REQUIRED_PACKAGES[@]}"
bench_as_root test/bench/registry.sh registry bench-registry

# ---- as anyone else: build, start three clusters, measure -----------------

bench_workspace uidgen-bench-registry
declare -A port postmaster

# The members first: the registry goes last.
cleanup() { stop_clusters $? plain member registry; }
trap cleanup EXIT

# registry_at DATABASE: the libpq connection string of a registry database
# on the registry cluster.
registry_at() { echo "host=127.0.0.1 port=${port[registry]} user=postgres dbname=$1"; }

# start_bench_cluster NAME [CONF-LINE...]: a cluster with the settings of
# run.sh (common.sh: measuring_conf), on 127.0.0.1, uidgen preloaded in all
# three (a registry needs it; without a registry it is what differs no
# more), and CONF-LINEs; a database bench set up by setup.sql.
start_bench_cluster() {
	local c=$1 data=$scratch/data-$1
	shift
	start_cluster "$bindir" "$data"
	{
		measuring_conf
		echo "listen_addresses = '127.0.0.1'"
		echo "shared_preload_libraries = 'uidgen'"
		printf '%s\n' "$@"
	} >>"$data/postgresql.conf"
	restart_cluster "$data"
	port[$c]=$PGPORT
	postmaster[$c]=$(head -1 "$data/postmaster.pid")
	q "$c" -c "CREATE DATABASE bench"
	q "$c" -d bench -f "$here/setup.sql" >/dev/null
}

# wait_for_agent NAME: until the registry agent of that cluster holds a block
# (30 s at most).
wait_for_agent() {
	local tries=0
	until [ "$(q "$1" -d bench -c "SELECT count(*) FROM uidgen.registry_status
			WHERE agent_status = 'ready' AND block IS NOT NULL AND lease_left_ms > 0")" -gt 0 ]; do
		tries=$((tries + 1))
		[ $tries -lt 300 ] || die "$1: the registry agent holds no block: $(q "$1" -d bench -c \
			"SELECT agent_status || ': ' || coalesce(error, '') FROM uidgen.registry_status LIMIT 1")"
		sleep 0.1
	done
}

# blocks NAME: how many blocks that cluster's server life leases.
blocks() { q "$1" -d bench -c "SELECT count(*) FROM uidgen.registry_status WHERE block IS NOT NULL"; }

# The registry cluster: database registry with the default rules (the
# member's), database claims with block_size 1 (its own, set before any
# block is leased), then uidgen.registry names claims.  pg_stat_statements
# times the agent's calls there (section 2).
start_registry() {
	start_bench_cluster registry "shared_preload_libraries = 'uidgen,pg_stat_statements'"
	q registry -c "CREATE DATABASE registry" -c "CREATE DATABASE claims"
	# New fleets: without uid_registry_start_fleet() a new registry leases
	# nothing for a lease TTL and more (it may be one that lost its leases).
	q registry -d registry -c "CREATE EXTENSION uidgen" -c "SELECT uid_registry_start_fleet()" >/dev/null
	q registry -d claims -c "CREATE EXTENSION uidgen" -c "SELECT uid_registry_start_fleet()" \
		-c "SELECT uid_registry_configure(block_size => 1, max_system_blocks => 64)" -c "CREATE EXTENSION pg_stat_statements" >/dev/null
	echo "uidgen.registry = '$(registry_at claims)'" >>"$scratch/data-registry/postgresql.conf"
	"$bindir/pg_ctl" -D "$scratch/data-registry" reload >/dev/null
	wait_for_agent registry
}

start_clusters() {
	start_registry
	start_bench_cluster member "uidgen.registry = '$(registry_at registry)'"
	wait_for_agent member
	start_bench_cluster plain
	local c
	# The first ID: each bench database joins its registry (or registers its
	# first worker).
	for c in "${clusters[@]}"; do
		q "$c" -d bench -c "SELECT public.uid_next()" >/dev/null
		log "$c: port ${port[$c]}, uidgen.registry = '$(q "$c" -c "SHOW uidgen.registry")'"
	done
	q registry -d claims -c "SELECT pg_stat_statements_reset()" >/dev/null
	# The agent checks this too (it refuses to lease otherwise).
	[ "$(q member -c "SELECT setting FROM pg_settings WHERE name = 'uidgen.max_borrow'")" = \
		"$(q registry -d registry -c "SELECT (extract(epoch FROM max_borrow) * 1000)::int FROM uidgen.registry_config")" ] ||
		die "the member's uidgen.max_borrow differs from its registry's"
}

write_scripts() {
	echo "SELECT public.uid_next();" >"$work/uid.sql"
	echo "SELECT 1;" >"$work/select1.sql"
}

# set_scope SCOPE: uidgen.scope on the member and the plain cluster (a
# sighup setting), once a new session sees it.
set_scope() {
	local c tries
	for c in member plain; do
		q "$c" -c "ALTER SYSTEM SET uidgen.scope = '$1'" -c "SELECT pg_reload_conf()" >/dev/null
		tries=0
		until [ "$(q "$c" -d bench -c "SHOW uidgen.scope")" = "$1" ]; do
			tries=$((tries + 1))
			[ $tries -lt 100 ] || die "$c: uidgen.scope did not become $1"
			sleep 0.05
		done
	done
}

# ---- the measurements: one round of each ----------------------------------

# connections SECTION ROUND CLUSTER KEY CLIENTS SECONDS SCRIPT: pgbench -C
# with SCRIPT, a new connection a transaction; records its tps and the
# backend CPU per connection (common.sh: children_cpu).
connections() {
	local section=$1 round=$2 c=$3 key=$4 clients=$5 seconds=$6 script=$7 before tps
	before=$(children_cpu "${postmaster[$c]}")
	tps=$(bench "$c" "$work/$section.log" -C -c "$clients" -j "$(threads_for "$clients")" -T "$seconds" \
		-f "$work/$script.sql")
	sample "$section" "$c" "$key" "$clients" tps "$round" "$tps"
	sample "$section" "$c" "$key" "$clients" cpu_us "$round" \
		"$(calc "($(children_cpu "${postmaster[$c]}") - $before) * 1000000 / $(processed "$work/$section.log")")"
}

# 1. One client, a new connection a transaction: its first uid_next(), or
# SELECT 1, on the member and on the plain cluster.
first_id() {
	local combo
	for combo in $(rotated "$1" member:uid plain:uid member:select1 plain:select1); do
		connections first "$1" "${combo%:*}" "${combo#*:}" 1 "$first_seconds" "${combo#*:}"
	done
}

# race ROUND CLUSTER N: two sessions, connected and idle, take their first
# ID at the same instant, with worker reuse off (each takes a new worker from
# the server's blocks); bench.run() times each on the server's clock.
# Records the faster and the slower in ms.
race() {
	local round=$1 c=$2 n=$3 start i
	start=$(calc "$(now) + 0.5")
	for i in 1 2; do
		{
			echo "SET uidgen.worker_reuse = off;"
			echo "SELECT pg_catalog.pg_sleep_until(pg_catalog.to_timestamp($start)) \\g /dev/null"
			echo "SELECT started, finished FROM bench.run('SELECT public.uid_next()');"
		} | q "$c" -F ' ' -d bench >"$work/race.$i" &
	done
	wait
	[ "$(cat "$work"/race.[12] | wc -l)" -eq 2 ] || die "$c: a session of the race failed"
	cat "$work"/race.[12] | awk '{ print ($2 - $1) * 1000 }' | sort -g | paste -s -d ' ' | {
		read -r fast slow
		sample claim "$c" fast "$n" ms "$round" "$fast"
		sample claim "$c" slow "$n" ms "$round" "$slow"
	}
	rm -f "$work"/race.[12]
}

# 2a. races on the registry cluster, whose reserve is one worker: the first
# session takes it, the second waits while the agent, woken by the first,
# leases the next block; and the same on the member, reserve warm.  Records
# the blocks leased a race.
races() {
	local round=$1 c n b0 ran
	for c in $(rotated "$round" registry member); do
		b0=$(blocks "$c") ran=0
		for n in $(seq "$races"); do
			if [ "$c" = registry ]; then
				[ $race_left -gt 0 ] || { log "no races left on the registry cluster (its 64 blocks)"; break; }
				race_left=$((race_left - 1))
			fi
			race "$round" "$c" "$n"
			ran=$n
		done
		[ $ran -gt 0 ] || continue
		# The agent leases the next reserve after the race.
		sleep 0.3
		sample claim "$c" blocks 0 blocks_per_race "$round" "$(calc "($(blocks "$c") - $b0) / $ran")"
	done
}

# agent_calls: what the registry spent on each kind of call of the registry
# cluster's agent (its registry is database claims) over the run, from
# pg_stat_statements: a sample a kind, the mean in ms, param the calls.  A
# claim cycle is one of each: the rules, a renewal that reports the worker
# just granted, and the claim.
agent_calls() {
	q registry -d claims -F ' ' -c "SELECT k.key, sum(p.calls), sum(p.total_exec_time) / sum(p.calls)
		FROM pg_stat_statements p
		JOIN (VALUES ('rules', '%uidgen.registry_rules(%'), ('renew', '%uidgen.registry_renew(%'),
		             ('claim', '%uidgen.registry_claim(%')) k (key, pattern) ON p.query LIKE k.pattern
		WHERE p.dbid = (SELECT oid FROM pg_database WHERE datname = 'claims')
		GROUP BY k.key" | while read -r key calls ms; do
		sample agent registry "$key" "$calls" ms 0 "$ms"
	done
}

# 2b. The first ID right after a restart: a new connection as soon as the
# cluster accepts one, on the client's clock (psql included).  On the member
# the agent has just started: it connects to the registry and leases a block.
cold_start() {
	local round=$1 c data t0 t1 tries
	for c in $(rotated "$round" member plain); do
		data=$scratch/data-$c
		"$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null
		"$bindir/pg_ctl" -D "$data" -l "$data/server.log" -W start >/dev/null
		tries=0
		until pg_isready -q -h 127.0.0.1 -p "${port[$c]}"; do
			tries=$((tries + 1))
			[ $tries -lt 3000 ] || die "$c did not start"
			sleep 0.01
		done
		t0=$(now)
		q "$c" -d bench -c "SELECT public.uid_next()" >/dev/null
		t1=$(now)
		sample cold "$c" uid 1 ms "$round" "$(calc "($t1 - $t0) * 1000")"
		postmaster[$c]=$(head -1 "$data/postmaster.pid")
	done
	wait_for_agent member
}

# 3. churn_clients clients, a new connection a transaction that takes one ID,
# with uidgen.scope backend and server, on the member and the plain cluster.
churn() {
	local scope c
	for scope in $(rotated "$1" backend server); do
		set_scope "$scope"
		for c in $(rotated "$1" member plain); do
			connections churn "$1" "$c" "$scope" "$churn_clients" "$churn_seconds" uid
		done
	done
	set_scope backend
}

# ---- the report -----------------------------------------------------------

# rules DATABASE: a registry's rules, as Markdown.
rules() {
	q registry -d "$1" -c "SELECT format('lease_ttl %s, block_size %s, max_borrow %s, max_clock_skew %s',
		lease_ttl, block_size, max_borrow, max_clock_skew) FROM uidgen.registry_config"
}

report() {
	agent_calls
	{
		report_head "uidgen benchmark: a registry of worker blocks (uidgen.registry)" member bench-registry
		echo "- three clusters on 127.0.0.1, all with \`shared_preload_libraries = 'uidgen'\`, shared_buffers 512MB, synchronous_commit off, fsync off, jit off, no parallel query, uidgen's defaults (\`uidgen.max_borrow\` $(q member -c "SHOW uidgen.max_borrow") on all, as at the registry): *member* (\`uidgen.registry\` names database \`registry\` of the registry cluster: $(rules registry)); *plain*, no registry (1.x's per-database worker table); *registry*, its own member through its database \`claims\` ($(rules claims)), for the races of section 2, with \`pg_stat_statements\` preloaded too"
		echo "- the member at the end: $(q member -d bench -c "SELECT format('its last server life (it restarts once a round) leases %s block(s), %s worker(s) granted', count(*), coalesce(sum(workers_granted), 0)) FROM uidgen.registry_status WHERE block IS NOT NULL"); the registry cluster leases $(q registry -d bench -c "SELECT count(*) FROM uidgen.registry_status WHERE block IS NOT NULL") blocks of 1 worker (at most 64)"
		echo
		q plain -v samples="$samples" -v races="$races" -v id_reps="$id_reps" -v id_rows="$id_rows" \
			-v first_seconds="$first_seconds" -v churn_seconds="$churn_seconds" -v churn_clients="$churn_clients" \
			-f "$here/registry-report.sql"
	} >"$work/$name.md"
	cp "$work/$name.md" "$out/"
	cp "$samples" "$out/$name.tsv"
}

bench_build test/bench/registry.sh
start_clusters
write_scripts
for round in $(seq "$rounds"); do
	log "round $round of $rounds: 1. new connection, first ID"
	first_id "$round"
	log "round $round of $rounds: 2a. first ID waiting for a block"
	races "$round"
	log "round $round of $rounds: 3. churn"
	churn "$round"
	log "round $round of $rounds: 4. per-ID cost"
	per_id "$round" member plain
	log "round $round of $rounds: 2b. first ID after a restart"
	cold_start "$round"
done
report
bench_done registry bench-registry
