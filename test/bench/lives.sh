#!/usr/bin/env bash
# test/bench/lives.sh: "make bench-lives".  What one registry costs when it
# serves many member server lives: LIVES simulated lives (1,000; no servers,
# the calls their agents make) each lease a block at the default layout,
# then renew it for ROUNDS rounds.  It reports the latency of
# uidgen.registry_claim() and uidgen.registry_renew() inside the registry
# (median and 99th percentile) and the registry's CPU per call, each against
# its baseline measured in the same run: (ROUNDS + 1) x LIVES calls of
# uidgen.registry_rules(), which every round of every agent makes too.
#
# It builds uidgen into a private copy of PostgreSQL 15 (or of the server
# PG_CONFIG names) and starts one throwaway cluster on a Unix socket.  Each
# phase is one session of its own, so that its CPU is what the postmaster
# collects when it ends (common.sh: children_cpu).  As root it runs as
# postgres on a copy of the tree.  The Markdown table goes to stdout and to
# test/bench/results/lives.md.
#
#   test/bench/lives.sh [--quick] [--out DIR]     LIVES=N, ROUNDS=N
set -euo pipefail

usage() {
	cat <<-EOF
		usage: test/bench/lives.sh [--quick] [--out DIR]
		  --quick    a smoke run: 100 lives, one round of renewals
		  --out DIR  where the results go (default: test/bench/results)
		  LIVES=N    (environment) simulated server lives: 1000 by default
		  ROUNDS=N   (environment) rounds of renewals: 3 by default
	EOF
}

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/bench/common.sh
. "$here/common.sh"

bench_args "$@"
bench_packages
if [ $quick -eq 1 ]; then
	name=lives-quick lives=${LIVES:-100} rounds=${ROUNDS:-1}
else
	name=lives lives=${LIVES:-1000} rounds=${ROUNDS:-3}
fi
[[ $lives =~ ^[1-9][0-9]*$ && $rounds =~ ^[1-9][0-9]*$ ]] || die "LIVES and ROUNDS must be positive numbers"
clk_tck=$(getconf CLK_TCK)

ensure_packages "${REQUIRED_PACKAGES[@]}"
if [ "$(id -u)" -eq 0 ]; then
	LIVES=$lives ROUNDS=$rounds rerun_for_results "${out:-$here/results}" test/bench/lives.sh \
		$([ $quick -eq 0 ] || echo --quick)
	exit $?
fi

bench_workspace uidgen-bench-lives
declare -A port
cleanup() { stop_clusters $? registry; }
trap cleanup EXIT
(cd "$top" && build_and_install "$bindir" "$work/build.log") >&2

start_cluster "$bindir" "$scratch/data-registry"
measuring_conf >>"$scratch/data-registry/postgresql.conf"
restart_cluster "$scratch/data-registry"
port[registry]=$PGPORT
postmaster=$(head -1 "$scratch/data-registry/postmaster.pid")
psql -X -qAt -v ON_ERROR_STOP=1 -c "CREATE DATABASE registry"
reg() { psql -X -qAt -v ON_ERROR_STOP=1 -d registry "$@"; }
# Blocks of 1 worker: a life a block, as many lives as workers allow.
reg -c "CREATE EXTENSION uidgen; SELECT uid_registry_start_fleet();
	SELECT uid_registry_configure(block_size => 1)" >/dev/null
reg -c "CREATE TABLE bench_life (n int PRIMARY KEY, life uuid, block bigint, lease_id uuid, floor_delta bigint,
	                         ceiling_delta bigint);
	CREATE TABLE bench_call (phase text, round int, ms float8)"

# phase NAME SQL: runs SQL (a DO block that times each call into
# bench_call) in a session of its own; prints the registry's CPU seconds.
phase() {
	local before
	before=$(children_cpu "$postmaster")
	reg -c "$2"
	calc "$(children_cpu "$postmaster") - $before"
}

log "$lives lives lease a block each, then renew it $rounds times; the baseline: as many registry_rules() calls"
cpu_rules=$(phase rules "DO \$\$ DECLARE t timestamptz; BEGIN
	FOR r IN 1 .. $rounds + 1 LOOP FOR i IN 1 .. $lives LOOP
		t := clock_timestamp();
		PERFORM * FROM uidgen.registry_rules(protocol => 1);
		INSERT INTO bench_call VALUES ('rules', r, extract(epoch FROM clock_timestamp() - t) * 1000);
	END LOOP; END LOOP; END \$\$")
cpu_claim=$(phase claim "DO \$\$ DECLARE t timestamptz; c record; l uuid; BEGIN
	FOR i IN 1 .. $lives LOOP
		l := gen_random_uuid();
		t := clock_timestamp();
		SELECT * INTO STRICT c FROM uidgen.registry_claim(1, l, 'bench-' || i, 1, 'host-' || i, 5432, '{app}');
		INSERT INTO bench_call VALUES ('claim', 1, extract(epoch FROM clock_timestamp() - t) * 1000);
		INSERT INTO bench_life VALUES (i, l, c.block, c.lease_id, c.floor_delta, c.ceiling_delta);
	END LOOP; END \$\$")
cpu_renew=$(phase renew "DO \$\$ DECLARE t timestamptz; b record; BEGIN
	FOR r IN 1 .. $rounds LOOP FOR b IN SELECT * FROM bench_life ORDER BY n LOOP
		t := clock_timestamp();
		PERFORM * FROM uidgen.registry_renew(1, b.life, 'bench-' || b.n, 1, 'host-' || b.n, 5432, '{app}',
			ARRAY[b.block], ARRAY[b.floor_delta], ARRAY[b.block], '{app}', ARRAY[b.lease_id], ARRAY[b.lease_id],
			ARRAY[b.ceiling_delta]);
		INSERT INTO bench_call VALUES ('renew', r, extract(epoch FROM clock_timestamp() - t) * 1000);
	END LOOP; END LOOP; END \$\$")

renewed=$(reg -c "SELECT count(DISTINCT block) FROM bench_life")
[ "$renewed" -eq "$lives" ] || die "the $lives lives hold $renewed distinct blocks"
{
	echo "# One registry, $lives server lives"
	echo
	echo "$lives simulated member server lives (no servers: the calls of their agents) lease a block"
	echo "each from one registry, then renew it $rounds times; the baseline is $(((rounds + 1) * lives)) calls of"
	echo "\`registry_rules()\`, which every round of every agent makes too. Latency inside the"
	echo "registry (\`clock_timestamp()\` around each call); CPU of the registry's backend per"
	echo "call. \`$(basename "$0")\` on $("$PG_CONFIG" --version), commit $commit, $(nproc) cores,"
	echo "load before the run $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	echo "| call | calls | median ms | p99 ms | CPU µs a call | median against registry_rules() |"
	echo "|---|---|---|---|---|---|"
	reg -v cpu_rules="$cpu_rules" -v cpu_claim="$cpu_claim" -v cpu_renew="$cpu_renew" <<-'SQL'
	WITH s AS (
			SELECT phase, count(*) AS calls,
			       percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS median,
			       percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99
			  FROM bench_call GROUP BY phase),
		cpu (phase, seconds) AS (VALUES ('rules', :cpu_rules::float8), ('claim', :cpu_claim), ('renew', :cpu_renew))
		SELECT format('| %s | %s | %s | %s | %s | %s× |', s.phase, s.calls, round(s.median::numeric, 3),
		              round(s.p99::numeric, 3), round((cpu.seconds * 1e6 / s.calls)::numeric),
		              round((s.median / nullif(b.median, 0))::numeric, 1))
		  FROM s JOIN cpu USING (phase) CROSS JOIN (SELECT median FROM s WHERE phase = 'rules') b
		 ORDER BY array_position(ARRAY['rules', 'claim', 'renew'], s.phase);
	SQL
	echo
	echo "At the default TTL (10 minutes) each life renews every 100 s: $lives lives make"
	echo "$(calc "$lives / 100") renewals a second."
} >"$work/$name.md"
mkdir -p "$out"
cp "$work/$name.md" "$out/"
cat "$work/$name.md"
