# scripts/jobs.sh: a pool of test jobs for scripts/test.sh.
#
# A job is a shell function run in the background with its output in a log
# of its own; it writes "PASSED FAILED" (test counts) to the file named by
# its first argument.  At most MAX jobs run at once.  As each one ends, one
# line says how it went and how long it took; a failing job's log tail, and
# the tails of the logs its LOGS command names, follow it at once, so that a
# person sees a failure when it happens, not at the end of the run.
#
# Each job's time is kept in the build cache (scripts/lib.sh), so that the
# next run on this machine starts the longest jobs first.

# Nothing runs until jobs_init; an early exit (a failed build) finds no job
# to stop.
declare -A jobs_name=()
jobs_dir=""

jobs_init() {	# jobs_init DIR MAX
	jobs_dir=$1
	jobs_max=$2
	jobs_began=$EPOCHREALTIME
	jobs_times=$(build_cache)/test-times
	mkdir -p "$jobs_dir"
	declare -gA jobs_name=() jobs_started=() jobs_logs=()
	jobs_results=()
}

# The given TAP files, the longest of the last run first (files it did not
# run come first of all: they may be long).
jobs_longest_first() {	# jobs_longest_first FILE...
	local file name seconds
	for file in "$@"; do
		name=$(basename "$file" .pl)
		seconds=$(awk -v n="$name" '$1 == n { s = $2 } END { print s + 0 == 0 ? 1e9 : s }' "$jobs_times" 2>/dev/null || echo 1e9)
		printf '%s %s\n' "$seconds" "$file"
	done | sort -k1,1gr -k2 | cut -d' ' -f2
}

_jobs_clock() {	# elapsed seconds since jobs_init, as m:ss
	local s=$(( ${EPOCHREALTIME%.*} - ${jobs_began%.*} ))
	printf '%d:%02d' $((s / 60)) $((s % 60))
}

jobs_start() {	# jobs_start NAME LOGS FUNCTION ARG...
	local name=$1 logs=$2; shift 2
	while [ "${#jobs_name[@]}" -ge "$jobs_max" ]; do
		_jobs_reap_one
	done
	# The function's first argument is where it writes its counts.
	( "$1" "$jobs_dir/$name.counts" "${@:2}" ) >"$jobs_dir/$name.log" 2>&1 &
	jobs_name[$!]=$name
	jobs_started[$name]=$EPOCHREALTIME
	jobs_logs[$name]=$logs
}

_jobs_reap_one() {
	local pid status=0 name seconds counts passed failed verdict file
	wait -n -p pid "${!jobs_name[@]}" || status=$?
	name=${jobs_name[$pid]}
	unset "jobs_name[$pid]"
	seconds=$(awk -v a="${jobs_started[$name]}" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	counts=$(cat "$jobs_dir/$name.counts" 2>/dev/null || true)
	passed=${counts%% *}
	failed=${counts##* }
	if [ -z "$counts" ]; then	# the job broke before it could count
		passed=0
		failed=1
	fi
	[ "$status" -eq 0 ] || [ "$failed" -gt 0 ] || failed=1
	jobs_results+=("$name $passed $failed $seconds")
	verdict=ok
	[ "$failed" -eq 0 ] || verdict=FAILED
	printf '[%s] %-6s  %-32s %4d passed, %d failed  %6s s\n' "$(_jobs_clock)" "$verdict" "$name" \
		"$passed" "$failed" "$seconds"
	if [ "$failed" -ne 0 ]; then
		echo "---- $name: the end of its output ($jobs_dir/$name.log)"
		tail -n 60 "$jobs_dir/$name.log" | sed 's/^/    /'
		for file in $(${jobs_logs[$name]:-true}); do
			echo "---- $name: the end of $file"
			tail -n 60 "$file" | sed 's/^/    /'
		done
		echo "---- end of $name"
	fi
}

jobs_finish() {
	while [ "${#jobs_name[@]}" -gt 0 ]; do
		_jobs_reap_one
	done
	_jobs_save_times
}

_jobs_save_times() {
	local result name seconds tmp
	[ -n "$jobs_times" ] || return 0
	tmp=$(mktemp "$jobs_times.XXXXXX") || return 0
	{
		for result in "${jobs_results[@]}"; do
			read -r name _ _ seconds <<<"$result"
			# Not the copies of make test REPEAT=N: they ran beside each other.
			[[ "$name" =~ \.r[0-9]+$ ]] || echo "$name $seconds"
		done
		# Keep what this run did not measure.
		[ -f "$jobs_times" ] && awk 'NR == FNR { seen[$1] = 1; next } !($1 in seen)' \
			<(printf '%s\n' "${jobs_results[@]}") "$jobs_times"
	} >"$tmp"
	mv "$tmp" "$jobs_times"
}

# Kills the jobs still running (an interrupted run) and stops every server
# they left behind.
stop_all_jobs() {
	local pid data
	for pid in "${!jobs_name[@]}"; do
		pkill -TERM -P "$pid" 2>/dev/null || true
		kill -TERM "$pid" 2>/dev/null || true
	done
	for data in $(find tmp_check ${jobs_dir:+"$jobs_dir/.."} -name postmaster.pid -printf '%h\n' 2>/dev/null); do
		pg_ctl -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
	done
}

# Totals by kind: the checks of the tree, unit, regress, isolation, and tap
# for the TAP files.
jobs_summary() {
	local kind result name passed failed
	for kind in checks unit regress isolation tap; do
		local p=0 f=0 n=0
		for result in "${jobs_results[@]}"; do
			read -r name passed failed _ <<<"$result"
			case "$name" in
				unit|regress|isolation) [ "$name" = "$kind" ] || continue ;;
				layering|meta|boundary|design-ids|sql-assembled) [ "$kind" = checks ] || continue ;;
				*) [ "$kind" = tap ] || continue ;;
			esac
			p=$((p + passed))
			f=$((f + failed))
			n=$((n + 1))
		done
		[ "$n" -eq 0 ] || printf '%-10s %4d passed, %d failed\n' "$kind" "$p" "$f"
	done
	# The failed jobs by name, so that a summary read alone (CI shows the
	# end of a long run) says where to look.
	local names=()
	for result in "${jobs_results[@]}"; do
		read -r name passed failed _ <<<"$result"
		[ "$failed" -eq 0 ] || names+=("$name")
	done
	[ "${#names[@]}" -eq 0 ] || echo "failed:    ${names[*]}"
	# and the first failed assertions of each, or how it broke
	for name in "${names[@]}"; do
		grep -m6 -E "Failed test|died|Bail out| line [0-9]+\.$|Tests: .* Failed" "$jobs_dir/$name.log" 2>/dev/null |
			cut -c1-200 | sed "s/^[[:space:]]*/failed:    $name: /" || true
	done
}

# The closing line; false when anything failed or no test ran.
jobs_closing_line() {
	local result passed failed p=0 f=0
	for result in "${jobs_results[@]}"; do
		read -r _ passed failed _ <<<"$result"
		p=$((p + passed))
		f=$((f + failed))
	done
	if [ "$p" -eq 0 ]; then
		echo "no test ran"
		f=$((f + 1))
	fi
	echo "$p passed, $f failed"
	[ "$f" -eq 0 ]
}
