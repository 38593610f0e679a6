#!/usr/bin/env bash
# test/bench/churn.sh: what a new connection that inserts one row costs with
# uidgen's defaults, against an identity column, and where the difference
# goes (make bench-churn; test/bench/README.md, "Connection churn").
#
#   test/bench/churn.sh                 # 7 rounds, 1 and 8 clients: about 10 minutes
#   ROUNDS=3 test/bench/churn.sh        # fewer (or more) rounds
#   test/bench/churn.sh --quick         # 2 rounds, shorter runs: checks that it works
#   make bench-churn PG_CONFIG=/var/cache/uidgen/pg-18.6/bin/pg_config
#
# The defaults, as a user meets them: no shared_preload_libraries, scope
# backend, fsync and synchronous_commit on.  Each round runs, for 1 and for
# 8 clients, pgbench -C (a new connection a transaction) with each script,
# the order rotating:
#
#   identity    INSERT into a table keyed by an identity column
#   load        the same, after LOAD 'uidgen': the library's load
#   catalog     the same, and uid_timestamp(1): the library and its catalog
#   uid         INSERT into a table keyed by DEFAULT uid_next(): all of it
#   committer   the same on a cluster with uidgen.claim_pool_size = 0: a claim
#               committer started for each reused worker (2.0's path before
#               the pool)
#   preload     uid, with shared_preload_libraries = 'uidgen' (a restart)
#   server      uid in scope server (preloaded on 15, which needs it; not on
#               17 and later, where a named DSM segment serves)
#
# each of the last three on a cluster of its own.  Figures: tps, the ratio to
# identity paired by round (medians), and the backends' CPU per connection
# (what the postmaster collects from its ended children), which includes the
# exit, where a session releases its worker after the client left.  The
# split: library load = load - identity, catalog = catalog - load, claim and
# exit = uid - catalog, each in ms per connection.  The target (uid at most
# 1.10 times identity) is printed as met or missed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/bench/common.sh
. "$here/common.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
bench_args "$@"
bench_packages
rounds=${ROUNDS:-7}
cores=$(nproc)
transactions=400
if [ "$quick" = 1 ]; then
	rounds=${ROUNDS:-2}
	transactions=100
fi

if [ "$(id -u)" -eq 0 ]; then
	ensure_packages "${REQUIRED_PACKAGES[@]}"
	rerun_for_results "$here/results" test/bench/churn.sh "$@"
	exit $?
fi
missing=$(missing_packages "${REQUIRED_PACKAGES[@]}")
[ -z "$missing" ] || die "missing packages: $missing (as root: apt-get install $missing)"

bench_workspace uidgen-churn
trap '[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$scratch"' EXIT
(cd "$top" && build_and_install "$bindir" "$work/build.log")

declare -A data port
# a cluster with the defaults that matter here: fsync and synchronous_commit on
new_cluster() {
	local name=$1
	data[$name]=$work/data-$name
	start_cluster "$bindir" "${data[$name]}"
	port[$name]=$PGPORT
	sed -i 's/^fsync = off$/fsync = on/' "${data[$name]}/postgresql.conf"
	printf "max_connections = 100\n" >>"${data[$name]}/postgresql.conf"
	"$bindir/pg_ctl" -D "${data[$name]}" -l "${data[$name]}/server.log" -w restart >/dev/null
	psql -X -q -v ON_ERROR_STOP=1 -h "${data[$name]}" -p "${port[$name]}" -d postgres <<-SQL
		CREATE EXTENSION uidgen;
		CREATE TABLE t_identity (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int);
		CREATE TABLE t_uid (id bigint DEFAULT uid_next() PRIMARY KEY, v int);
	SQL
}
cleanup_clusters() {
	local name
	for name in "${!data[@]}"; do stop_cluster "$bindir" "${data[$name]}"; done
	[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$scratch"
}
trap cleanup_clusters EXIT

new_cluster default
# The claim pool off (a SIGHUP setting, which a session's options cannot set): 2.0's committer path.
new_cluster nopool
printf "uidgen.claim_pool_size = 0\n" >>"${data[nopool]}/postgresql.conf"
"$bindir/pg_ctl" -D "${data[nopool]}" -w reload >/dev/null
# The alternatives that need a restart where a user meets them: the library
# preloaded (scope backend), and scope server (preloaded on 15, which needs
# it; a named DSM segment on 17 and later, which does not).
new_cluster preload
printf "shared_preload_libraries = 'uidgen'\n" >>"${data[preload]}/postgresql.conf"
"$bindir/pg_ctl" -D "${data[preload]}" -l "${data[preload]}/server.log" -w restart >/dev/null
new_cluster server
printf "uidgen.scope = server\n" >>"${data[server]}/postgresql.conf"
[ "$server_major" -ge 17 ] || printf "shared_preload_libraries = 'uidgen'\n" >>"${data[server]}/postgresql.conf"
"$bindir/pg_ctl" -D "${data[server]}" -l "${data[server]}/server.log" -w restart >/dev/null
server_preload=no
[ "$server_major" -ge 17 ] || server_preload=yes

printf 'INSERT INTO t_identity (v) VALUES (1);\n' >"$work/identity.sql"
printf "LOAD 'uidgen';\nINSERT INTO t_identity (v) VALUES (1);\n" >"$work/load.sql"
printf 'INSERT INTO t_identity (v) VALUES (1);\nSELECT uid_timestamp(1);\n' >"$work/catalog.sql"
printf 'INSERT INTO t_uid (v) VALUES (1);\n' >"$work/uid.sql"
for key in committer preload server; do cp "$work/uid.sql" "$work/$key.sql"; done

keys=(identity load catalog uid committer preload server)

# run KEY CLIENTS ROUND: one pgbench -C run; samples tps and CPU per connection
run() {
	local key=$1 clients=$2 round=$3 cluster=default pm cpu tps
	case $key in
		committer) cluster=nopool ;;
		preload | server) cluster=$key ;;
	esac
	pm=$(head -1 "${data[$cluster]}/postmaster.pid")
	cpu=$(children_cpu "$pm")
	tps=$(pgbench_tps "$work/run.log" -n -C -c "$clients" -j "$(threads_for "$clients")" \
		-t $((transactions / clients)) -f "$work/$key.sql" -h "${data[$cluster]}" -p "${port[$cluster]}" postgres)
	sample churn "$key" "$clients" tps "$round" "$tps"
	sample churn "$key" "$clients" cpu_ms "$round" \
		"$(calc "($(children_cpu "$pm") - $cpu) * 1000 / $(processed "$work/run.log")")"
}

# A first round unmeasured: every cluster's pool started, caches warm.
for key in "${keys[@]}"; do run "$key" 1 0 >/dev/null; done
: >"$samples"
for round in $(seq "$rounds"); do
	for clients in 1 8; do
		log "round $round of $rounds, $clients clients: $(rotated "$round" "${keys[@]}" | tr "\n" " ")"
		for key in $(rotated "$round" "${keys[@]}"); do run "$key" "$clients" "$round"; done
	done
done

# ---- the report ---------------------------------------------------------------

# median KEY CLIENTS METRIC
median() {
	awk -F'\t' -v k="$1" -v c="$2" -v m="$3" '$2 == k && $3 == c && $4 == m { print $6 }' "$samples" |
		sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# paired KEY CLIENTS: the median over rounds of identity's tps / KEY's tps (the cost ratio)
paired() {
	awk -F'\t' -v k="$1" -v c="$2" '$3 == c && $4 == "tps" { t[$2, $5] = $6; r[$5] = 1 }
		END { for (i in r) if ((k, i) in t && t[k, i] > 0) print t["identity", i] / t[k, i] }' "$samples" |
		sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ms() { calc "1000 / $(median "$1" "$2" tps) * $2"; }

{
	echo "# Connection churn with the defaults"
	echo
	echo "\`test/bench/churn.sh\`: PostgreSQL $("$bindir/pg_config" --version | sed 's/^PostgreSQL //'), $commit, $(date -u +%Y-%m-%d), $rounds rounds of $transactions connections per script and client count, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg). No preload, scope \`backend\`, \`fsync\` and \`synchronous_commit\` on; every connection inserts one row (\`pgbench -C\`)."
	echo
	echo "| script | clients | tps (median) | cost vs identity (paired median) | ms a connection (identity's × the ratio) | backend CPU ms a connection |"
	echo "|---|---:|---:|---:|---:|---:|"
	for clients in 1 8; do
		for key in "${keys[@]}"; do
			printf '| %s | %d | %.1f | %.2f× | %.2f | %.2f |\n' "$key" "$clients" "$(median "$key" "$clients" tps)" \
				"$(paired "$key" "$clients")" "$(calc "$(ms identity "$clients") * $(paired "$key" "$clients")")" \
				"$(median "$key" "$clients" cpu_ms)"
		done
	done
	echo
	echo "Where a connection's extra time goes, 1 client: wall clock from the paired ratios (ratio above the"
	echo "previous script's, times identity's ms a connection) and the backends' CPU (medians):"
	echo
	echo "| | library load | catalog | claim and exit | total above identity |"
	echo "|---|---:|---:|---:|---:|"
	base=$(ms identity 1)
	printf '| ms a connection | %.2f | %.2f | %.2f | %.2f |\n' \
		"$(calc "($(paired load 1) - 1) * $base")" "$(calc "($(paired catalog 1) - $(paired load 1)) * $base")" \
		"$(calc "($(paired uid 1) - $(paired catalog 1)) * $base")" "$(calc "($(paired uid 1) - 1) * $base")"
	printf '| CPU ms a connection | %.2f | %.2f | %.2f | %.2f |\n' \
		"$(calc "$(median load 1 cpu_ms) - $(median identity 1 cpu_ms)")" \
		"$(calc "$(median catalog 1 cpu_ms) - $(median load 1 cpu_ms)")" \
		"$(calc "$(median uid 1 cpu_ms) - $(median catalog 1 cpu_ms)")" \
		"$(calc "$(median uid 1 cpu_ms) - $(median identity 1 cpu_ms)")"
	echo
	for clients in 1 8; do
		ratio=$(paired uid "$clients")
		verdict=missed
		awk "BEGIN { exit !($ratio <= 1.10) }" && verdict=met
		printf -- '- target %s: a new connection that inserts one row costs at most 1.10× identity with %d client(s): %.2f×\n' \
			"$verdict" "$clients" "$ratio"
	done
	echo "- \`preload\`: \`uid\` with \`shared_preload_libraries = 'uidgen'\` (a restart); \`server\`: \`uid\` in scope \`server\`, preloaded: $server_preload."
} >"$work/report.md"

name=churn
[ "$quick" = 0 ] || name=quick-churn
[ "$server_major" = "$PG_MAJOR" ] || name=pg$server_major-$name
mkdir -p "$out"
cp "$work/report.md" "$out/$name.md"
cp "$samples" "$out/$name.tsv"
cat "$work/report.md"
