# test/bench/common.sh: what the benchmarks share, run.sh ("make bench"),
# scope.sh ("make bench-scope") and registry.sh ("make bench-registry"), and
# scripts/lib.sh, which it sources.  The
# sourcing script sets `here` (test/bench); this sets `top` (the tree).

top=$(cd "$here/../.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

# Decimal points and sorting must not depend on the caller's locale.
export LC_ALL=C.UTF-8
# DROP TABLE IF EXISTS and the like would chatter on stderr.
export PGOPTIONS="-c client_min_messages=warning"

# bench_args ARGS...: the options of both benchmarks: --quick (sets quick=1),
# --out DIR (out), and --commit REV (commit), which the root run passes on to
# the rerun as postgres.  The script defines usage().
bench_args() {
	quick=0 out="" commit=""
	while [ $# -gt 0 ]; do
		case $1 in
			--quick) quick=1 ;;
			--out) [ $# -ge 2 ] || { usage >&2; exit 2; }; out=$2; shift ;;
			--commit) [ $# -ge 2 ] || { usage >&2; exit 2; }; commit=$2; shift ;;
			-h | --help) usage; exit 0 ;;
			*) usage >&2; exit 2 ;;
		esac
		shift
	done
}

# bench_packages: sets REQUIRED_PACKAGES to what a benchmark needs, not the
# test suite's packages (pgbench and pgstattuple come with postgresql-15, and
# with a source build's world-bin), makes PG_CONFIG absolute for the rerun as
# postgres, and sets server_major to the major version of the server measured.
bench_packages() {
	if [ -n "${PG_CONFIG:-}" ]; then
		PG_CONFIG=$(source_pg_config) || exit 1
		export PG_CONFIG
		REQUIRED_PACKAGES=(make g++)
		server_major=$("$PG_CONFIG" --version | sed -nE 's/^PostgreSQL ([0-9]+).*/\1/p')
	else
		REQUIRED_PACKAGES=(make g++ "${PG15_PACKAGES[@]}")
		server_major=$PG_MAJOR
	fi
}

# The commit measured, for the report; the copy made for postgres has no .git.
source_commit() {
	git -c safe.directory='*' -C "$top" describe --always --dirty 2>/dev/null || echo unknown
}

# rerun_for_results DEST SCRIPT ARGS...: as root, runs SCRIPT (relative to the
# tree) as postgres on a copy of the tree with --out STAGE --commit COMMIT
# added to ARGS, and copies what it wrote into DEST, owned like the tree.
# Returns the script's status.
rerun_for_results() {
	local dest=$1 script=$2 stage status=0
	shift 2
	stage=$(mktemp -d /tmp/uidgen-bench-out.XXXXXX)
	chown postgres: "$stage"
	rerun_as_postgres "$script" "$@" --out "$stage" --commit "$(source_commit)" || status=$?
	if [ -n "$(ls -A "$stage")" ]; then
		mkdir -p "$dest"
		cp "$stage"/* "$dest"/
		chown -R "$(stat -c %u:%g "$top")" "$dest"
		log "results in $dest"
	fi
	rm -rf "$stage"
	return $status
}

# bench_workspace NAME: as anyone but root, where a benchmark works: out (the
# results' directory, absolute; default_out=1 if it is the default), commit,
# scratch (/tmp/NAME.XXXXXX, removed by the caller), work and samples in it,
# and bindir, a private copy of the server (scripts/lib.sh: make_pg_tree)
# whose pg_config and binaries come first from now on.
bench_workspace() {
	default_out=0
	[ -n "$out" ] || { out=$here/results; default_out=1; }
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	[ -n "$commit" ] || commit=$(source_commit)
	scratch=$(mktemp -d "/tmp/$1.XXXXXX")
	work=$scratch/work
	mkdir -p "$work"
	bindir=$(make_pg_tree "$scratch/pg")
	export PG_CONFIG=$bindir/pg_config
	export PATH=$bindir:$PATH
	samples=$work/samples.tsv
	: >"$samples"
}

# refresh_readme MARKDOWN MARKER [SED-SCRIPT]: puts MARKDOWN (a results file)
# into test/bench/README.md between the lines <!-- MARKER:begin --> and
# <!-- MARKER:end -->, without its title and one heading level down, edited
# by SED-SCRIPT if given; keeps the file's owner.
refresh_readme() {
	local readme=$here/README.md results=$1 marker=$2 edit=${3:-}
	[ -f "$readme" ] && grep -q "^<!-- $marker:begin -->\$" "$readme" || return 0
	local block
	block=$(mktemp)
	{
		echo "<!-- $marker:begin -->"
		sed -e '1{/^# /d;}' "$results" | sed -e '1{/^$/d;}' -e 's/^##/###/' ${edit:+-e "$edit"}
		echo "<!-- $marker:end -->"
	} >"$block"
	awk -v block="$block" -v begin="<!-- $marker:begin -->" -v end="<!-- $marker:end -->" '
		$0 == begin { while ((getline line < block) > 0) print line; skip = 1; next }
		$0 == end { skip = 0; next }
		!skip { print }
	' "$readme" >"$block.new"
	cat "$block.new" >"$readme"
	rm -f "$block" "$block.new"
	log "refreshed $readme between the $marker markers"
}

# measuring_conf: postgresql.conf lines for measuring rather than for safety:
# the cluster is thrown away.  fsync is off (start_cluster) and
# synchronous_commit off, as the issue asks for the insert runs, so that
# inserts measure the CPU, not this VM's disk; WAL is large enough that no
# checkpoint starts in a measurement (each one begins after an explicit
# CHECKPOINT); no JIT and no parallel query, which would make the per-row
# costs depend on the planner's guesses.
measuring_conf() {
	cat <<-CONF
		shared_buffers = 512MB
		synchronous_commit = off
		max_wal_size = 16GB
		min_wal_size = 1GB
		checkpoint_timeout = 1h
		jit = off
		max_parallel_workers_per_gather = 0
		CONF
}

# restart_cluster DATA: restarts the cluster of $bindir in DATA, as after a
# change of its postgresql.conf.
restart_cluster() {
	"$bindir/pg_ctl" -D "$1" -l "$1/server.log" -w restart >/dev/null ||
		{ tail -20 "$1/server.log" >&2; die "the cluster in $1 did not restart"; }
}

now() { date +%s.%N; }

# calc EXPR: floating-point arithmetic (bash has none).
calc() { awk "BEGIN { printf \"%.9g\", $1 }"; }

# rotated ROUND WORD...: the words, starting at the ROUNDth.  Rounds are
# interleaved (A B C, then B C A, ...): every key is measured next to the
# others under the same conditions, and none is always first or always after
# the same neighbour.
rotated() {
	local round=$1 i
	shift
	for ((i = 0; i < $#; i++)); do
		echo "${@:$(((round + i) % $# + 1)):1}"
	done
}

# pgbench_tps LOG PGBENCH-ARGS...: runs pgbench and prints its tps.
pgbench_tps() {
	local log=$1; shift
	pgbench "$@" >"$log" 2>&1 || { cat "$log" >&2; die "pgbench failed: $*"; }
	grep -q '^number of failed transactions: 0 ' "$log" || { cat "$log" >&2; die "pgbench had failures: $*"; }
	sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$log"
}

# threads_for CLIENTS: pgbench threads, one a client up to the cores.
threads_for() { echo $(($1 < cores ? $1 : cores)); }

processed() { sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1"; }

# On a shared machine tps follows whatever else runs; the CPU time the
# server's backends spend per transaction hardly does.  The postmaster
# collects the CPU time of every backend that ends (cutime and cstime in
# /proc/PID/stat), so the difference across a pgbench run, whose backends all
# end with it, is what the server spent on that run's clients.
clk_tck=$(getconf CLK_TCK)

# client_backends POSTMASTER-PID: how many of its processes serve a client
# ("postgres: USER DATABASE HOST ..." in ps; not the checkpointer, autovacuum
# or a background worker).
client_backends() {
	local pid n=0
	for pid in $(awk -v pm="$1" '$4 == pm { print $1 }' /proc/[0-9]*/stat 2>/dev/null); do
		# A process may end between the listing and the reading.
		{ tr '\0' ' ' <"/proc/$pid/cmdline"; } 2>/dev/null | grep -qE '^postgres: [^ ]+ [^ ]+ (\[local\]|[0-9.:]+\()' &&
			n=$((n + 1))
	done
	echo $n
}

# children_cpu POSTMASTER-PID: CPU seconds of its processes that have ended so
# far, once the backends of the last client have ended (5 s at most).
children_cpu() {
	local tries=0
	while [ "$(client_backends "$1")" -gt 0 ] && [ $tries -lt 50 ]; do
		sleep 0.1
		tries=$((tries + 1))
	done
	sed 's/.*) //' "/proc/$1/stat" | awk -v hz="$clk_tck" '{ print ($14 + $15) / hz }'
}

# ---- what the scripts that start clusters share ---------------------------
# They keep the ports of their clusters in an associative array port, keyed
# by a name of their own (scope.sh: the scope; registry.sh: the cluster's
# role), and set work and samples (bench_workspace).

# q NAME PSQL-ARGS...: psql on that cluster, over 127.0.0.1.
q() {
	local name=$1; shift
	psql -X -qAt -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${port[$name]}" "$@"
}

# bench NAME LOG PGBENCH-ARGS...: pgbench_tps on that cluster's database
# bench.
bench() {
	local name=$1 log=$2; shift 2
	pgbench_tps "$log" -h 127.0.0.1 -p "${port[$name]}" -n "$@" bench
}

# sample SECTION NAME KEY PARAM METRIC ROUND VALUE: one measurement.
sample() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$samples"; }

# statement EXPR ROWS: the query that bench.run() times (setup.sql) on the
# server's clock: ROWS values of EXPR over a bare series.
statement() { echo "SELECT started, finished FROM bench.run(\$q\$SELECT count($1) FROM generate_series(1, $2) g\$q\$);"; }

# session NAME [START] < STATEMENTS: one new backend that takes a few IDs
# (for uid_next() to register or attach; not timed), then, given START (Unix
# seconds), waits for it, and runs the statements.  In-memory tuplestores:
# the series must not go to disk.  Prints a line a statement: "started
# finished cpu", the wall-clock times from bench.run() and the seconds the
# backend spent on a CPU (user and system, from getrusage(), which
# log_statement_stats reports for each statement with microseconds).  On a
# shared machine the wall clock also counts the time the backend waited for a
# CPU that another process had.
session() {
	local name=$1 start=${2:-} out
	out=$(mktemp "$work/session.XXXXXX")
	{
		echo "SET work_mem = '1GB';"
		echo "SELECT count(public.uid_next()) FROM generate_series(1, 1000) g \\g /dev/null"
		[ -z "$start" ] || echo "SELECT pg_catalog.pg_sleep_until(pg_catalog.to_timestamp($start)) \\g /dev/null"
		echo "SET client_min_messages = log;"
		echo "SET log_statement_stats = on;"
		cat
	} | q "$name" -F ' ' -d bench >"$out" 2>"$out.log"
	# "!	0.198403 s user, 0.003992 s system, 0.202409 s elapsed"
	awk '/ s user, .* s system, .* s elapsed/ { print $2 + $5 }' "$out.log" | paste -d ' ' "$out" -
	rm -f "$out" "$out.log"
}

# per_id ROUND NAME...: uid_next() over a bare series against the bare
# series, in one new session of each cluster named (the order rotating from
# round to round, and within a session which statement goes first
# alternating), id_reps times a round: the cost per row on the wall clock and
# on the CPU, and what uid_next() adds to the series (id_rows rows).
per_id() {
	local round=$1 name rep first b0 b1 bcpu u0 u1 ucpu
	shift
	for name in $(rotated "$round" "$@"); do
		for rep in $(seq "$id_reps"); do
			first=$(((round + rep) % 2))
			{
				[ $first -eq 0 ] || statement g "$id_rows"
				statement 'public.uid_next()' "$id_rows"
				[ $first -eq 1 ] || statement g "$id_rows"
			} | session "$name" >"$work/per_id"
			# The bare series is on the first line or the second.
			read -r b0 b1 bcpu < <(sed -n "$((2 - first))p" "$work/per_id")
			read -r u0 u1 ucpu < <(sed -n "$((1 + first))p" "$work/per_id")
			sample per_id "$name" bare "$id_rows" ns_per_row "$round" "$(calc "($b1 - $b0) * 1e9 / $id_rows")"
			sample per_id "$name" bare "$id_rows" cpu_ns_per_row "$round" "$(calc "$bcpu * 1e9 / $id_rows")"
			sample per_id "$name" uid "$id_rows" ns_per_row "$round" "$(calc "($u1 - $u0) * 1e9 / $id_rows")"
			sample per_id "$name" uid "$id_rows" cpu_ns_per_row "$round" "$(calc "$ucpu * 1e9 / $id_rows")"
			sample per_id "$name" uid "$id_rows" ns_above_bare "$round" "$(calc "($u1 - $u0 - $b1 + $b0) * 1e9 / $id_rows")"
			sample per_id "$name" uid "$id_rows" cpu_ns_above_bare "$round" "$(calc "($ucpu - $bcpu) * 1e9 / $id_rows")"
		done
	done
}

# ---- the frame of scope.sh and registry.sh ---------------------------------
# Both set name (the results' base name: FULL for a full run on 15), rounds,
# quick and cores before these.

# bench_as_root SCRIPT FULL MARKER: as root, runs SCRIPT (relative to the
# tree) as postgres (common.sh: rerun_for_results) with ROUNDS=rounds and
# --quick if given, and exits with its status; after a full run on 15 (name
# FULL) into the default results, refreshes test/bench/README.md between the
# MARKER lines.  Returns at once as anyone else.
bench_as_root() {
	local script=$1 full=$2 marker=$3 args=() status=0
	[ "$(id -u)" -eq 0 ] || return 0
	[ $quick -eq 0 ] || args+=(--quick)
	ROUNDS=$rounds rerun_for_results "${out:-$here/results}" "$script" "${args[@]}" || status=$?
	if [ $status -eq 0 ] && [ "$name" = "$full" ] && [ -z "$out" ]; then
		refresh_readme "$here/results/$name.md" "$marker"
	fi
	exit $status
}

# stop_clusters STATUS NAME...: for the EXIT trap: stops the clusters (in
# scratch/data-NAME) that started, in that order, with the tail of each
# server log after a failure (STATUS not 0), and removes the scratch
# directory unless UIDGEN_KEEP is set.
stop_clusters() {
	local status=$1 c
	shift
	for c in "$@"; do
		[ -z "${port[$c]:-}" ] || stop_cluster "$bindir" "$scratch/data-$c"
		if [ "$status" -ne 0 ] && [ -f "$scratch/data-$c/server.log" ]; then
			echo "--- server log of $c (tail)" >&2
			tail -20 "$scratch/data-$c/server.log" >&2
		fi
	done
	[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$scratch"
}

# bench_build SCRIPT: sets command (how to run this again), load_before and
# started, and builds uidgen into the private server.
bench_build() {
	command="$([ "$rounds" -eq 6 ] && [ $quick -eq 0 ] || echo "ROUNDS=$rounds ")$1$([ $quick -eq 0 ] || echo ' --quick')"
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	started=$(now)
	log "building uidgen into a private copy of $("$PG_CONFIG" --version)"
	(cd "$top" && build_and_install "$bindir" "$work/build.log") >&2
}

minutes() { calc "($(now) - $started) / 60" | xargs printf '%.1f'; }

# report_head TITLE NAME TARGET: the report's title and its first lines: the
# run, the command (or make TARGET), the machine and the server (of cluster
# NAME).
report_head() {
	local cpu_model mem
	cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
	mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	echo "# $1"
	echo
	echo "- $(date -u '+%Y-%m-%d %H:%M UTC'), uidgen $(q "$2" -d bench -c "SELECT extversion FROM pg_extension WHERE extname = 'uidgen'") (\`$commit\`), $rounds round(s)$([ $quick -eq 0 ] || echo ', **--quick: small sizes, figures not to be quoted**'), $(minutes) minutes"
	echo "- command: \`$command\` (or \`make $3\`$([ "$server_major" = "$PG_MAJOR" ] || echo ' with PG_CONFIG'))"
	echo "- $cores cores (\`nproc\`), ${cpu_model:-unknown CPU}, $mem; load average before: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- $(q "$2" -c "SELECT version()")"
}

# bench_done FULL MARKER: the end of a run: after a full run on 15 (name
# FULL) into the default results, refreshes test/bench/README.md between the
# MARKER lines; prints the report.
bench_done() {
	log "done in $(minutes) minutes; results in $out/$name.md"
	if [ $default_out -eq 1 ] && [ "$name" = "$1" ]; then
		refresh_readme "$out/$name.md" "$2"
	fi
	cat "$out/$name.md"
}
