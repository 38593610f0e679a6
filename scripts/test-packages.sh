#!/usr/bin/env bash
# scripts/test-packages.sh: "make test-packages", as root.  Tests the two
# ways to install uidgen other than "make install", into the system's
# PostgreSQL 15 (Debian's):
#
#   deb   make deb; apt-get install of the postgresql-15-uidgen it built;
#         every uidgen file in the server's directories is the package's
#         (dpkg -S); the regress suite; apt-get purge leaves no uidgen file.
#   pgxn  make dist; pgxn install of the zip; the files are in no package;
#         the regress suite; pgxn uninstall leaves no uidgen file.
#
# The regress suite runs as postgres on a copy of the tree, against the
# installed files and without building anything: a throwaway cluster of the
# system's binaries (start_cluster: private socket directory, free port,
# fsync off, the settings the suite needs), CREATE EXTENSION in a database
# of its own, then "make installcheck" with PGXS and the system's pg_config,
# pg_regress only (REGRESS from test/regress_schedule).
#
# uidgen files installed before (in the extension directory, the library
# directory and its bitcode directory) are moved aside first and put back at
# the end, even when a step fails or the run is interrupted; a
# postgresql-15-uidgen installed before makes it refuse to start.  Prints a
# line a step and ends with the line "N passed, N failed"; exits non-zero
# when a step failed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

pg_config=$PG_BINDIR/pg_config

# ---- as postgres, in a copy of the tree: one run of the regress suite --------
# Prints "PASS: what" or "FAIL: what" for its own checks, and pg_regress's
# lines; the caller counts both.

if [ "${1:-}" = --regress ]; then
	cd "$top"
	version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" uidgen.control)
	scratch=$(mktemp -d /tmp/uidgen-pkgregress.XXXXXX)
	data=$scratch/data
	trap 'stop_cluster "$PG_BINDIR" "$data"; rm -rf "$scratch"' EXIT
	start_cluster "$PG_BINDIR" "$data"
	psql=("$PG_BINDIR/psql" -X -q -A -t -v ON_ERROR_STOP=1)
	if "${psql[@]}" -c 'CREATE DATABASE uidgen_package' &&
		got=$("${psql[@]}" -d uidgen_package -c 'CREATE EXTENSION uidgen' \
			-c "SELECT extversion || ' ' || (uid_next() > 0) FROM pg_extension WHERE extname = 'uidgen'") &&
		[ "$got" = "$version true" ]; then
		echo "PASS: CREATE EXTENSION uidgen: version $version, uid_next() works"
	else
		echo "FAIL: CREATE EXTENSION uidgen: expected version $version and an ID, got: ${got:-an error}"
	fi
	status=0
	make -s installcheck PG_CONFIG="$pg_config" USE_PGXS=1 ISOLATION= TAP_TESTS= 2>&1 || status=$?
	if [ "$status" -ne 0 ]; then
		head -100 build/regress/regression.diffs 2>/dev/null || true
		echo "FAIL: make installcheck exited with status $status"
	fi
	built=$(find . -name '*.o' -o -name '*.so' -o -name '*.bc' | head -3)
	if [ -z "$built" ]; then
		echo "PASS: make installcheck built nothing"
	else
		echo "FAIL: make installcheck built $built"
	fi
	exit 0
fi

# ---- as root ------------------------------------------------------------------

[ "$(id -u)" -eq 0 ] ||
	die "make test-packages installs uidgen into the system's PostgreSQL $PG_MAJOR and removes it again: run it as root"
# The packages the steps themselves need; make deb and the package's own
# build dependencies install theirs.
ensure_packages make g++ libpq-dev perl git pgxnclient \
	"postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR" "postgresql-client-$PG_MAJOR"
[ -x "$pg_config" ] || die "$pg_config: not found"
unset PG_CONFIG	# the system's PostgreSQL 15, whatever the caller's environment says

cd "$top"
package=postgresql-$PG_MAJOR-uidgen
package_installed() {
	dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep -q ' installed$'
}
package_installed &&
	die "$package is installed: this test would replace and remove it (apt-get remove $package first)"

sharedir=$("$pg_config" --sharedir)
pkglibdir=$("$pg_config" --pkglibdir)
# uidgen's files and directories in the server's directories.
uidgen_files() {
	local dir
	for dir in "$sharedir/extension" "$pkglibdir" "$pkglibdir/bitcode"; do
		[ -d "$dir" ] && find "$dir" -mindepth 1 -maxdepth 1 -name 'uidgen*'
	done
	return 0
}

scratch=$(mktemp -d /tmp/uidgen-packages.XXXXXX)
backup=$scratch/installed-before.tar
steplog=$scratch/step.log

# Moves the uidgen files found aside, into a tar file.
mapfile -t before < <(uidgen_files)
if [ "${#before[@]}" -gt 0 ]; then
	log "moving aside ${#before[@]} uidgen files installed before (put back at the end): ${before[*]}"
	tar -C / -cpf "$backup" "${before[@]#/}"
	rm -rf "${before[@]}"
fi

# Removes what the steps installed and puts back what was there before.
# Idempotent: runs at the end and from the EXIT trap.
cleaned=
cleanup() {
	[ -z "$cleaned" ] || return 0
	cleaned=1
	if package_installed; then
		log "removing $package"
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "$package" >/dev/null 2>&1 ||
			log "warning: apt-get purge $package failed"
	fi
	local left
	mapfile -t left < <(uidgen_files)
	[ "${#left[@]}" -eq 0 ] || rm -rf "${left[@]}"
	if [ -f "$backup" ]; then
		tar -C / -xpf "$backup" && log "put back the uidgen files installed before"
	fi
	[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$scratch"
}

passed=0
failed=0
finished=
on_exit() {
	local status=$?
	# The clean-up runs to its end, even if its output has nowhere to go.
	trap '' HUP INT PIPE TERM
	set +e
	cleanup
	if [ -z "$finished" ]; then
		echo "interrupted (status $status)"
		echo "$passed passed, $((failed + 1)) failed"
		exit 1
	fi
}
trap on_exit EXIT
# A signal ends the script through the EXIT trap, as an output pipe that
# closes early does (SIGPIPE).
for signal in HUP INT PIPE TERM; do
	# shellcheck disable=SC2064
	trap "exit $((128 + $(kill -l "$signal")))" "$signal"
done

pass() { passed=$((passed + 1)); printf 'ok      %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'FAILED  %s\n' "$*"; }

# step WHAT COMMAND...: runs COMMAND, its output to a log shown if it fails;
# counts it.
step() {
	local what=$1 start=$SECONDS status=0
	shift
	"$@" >"$steplog" 2>&1 || status=$?
	if [ "$status" -eq 0 ]; then
		pass "$what ($((SECONDS - start)) s)"
	else
		tail -40 "$steplog" | sed 's/^/    /'
		fail "$what (status $status)"
	fi
	return "$status"
}

# regress LABEL: the regress suite as postgres against the installed files.
regress() {
	local label=$1 start=$SECONDS status=0 line
	log "$label: the regress suite against the installed files, as postgres"
	rerun_as_postgres scripts/test-packages.sh --regress >"$scratch/regress.log" 2>&1 || status=$?
	local counted=$((passed + failed)) failed_before=$failed
	while IFS= read -r line; do
		case $line in
		PASS:*) pass "$label: ${line#PASS: }" ;;
		FAIL:*) fail "$label: ${line#FAIL: }" ;;
		*'... ok'*) pass "$label: regress $(echo "$line" | awk '{ print $2 }')" ;;
		*'... FAILED'* | *'... failed'*) fail "$label: regress $(echo "$line" | awk '{ print $2 }')" ;;
		'ok '[0-9]*) pass "$label: regress $(echo "$line" | awk '{ print $4 }')" ;;
		'not ok '[0-9]*) fail "$label: regress $(echo "$line" | awk '{ print $5 }')" ;;
		esac
	done <"$scratch/regress.log"
	if [ "$status" -ne 0 ] || [ "$failed" -ne "$failed_before" ] || [ $((passed + failed)) -eq "$counted" ]; then
		tail -60 "$scratch/regress.log" | sed 's/^/    /'
	fi
	if [ "$status" -ne 0 ] || [ $((passed + failed)) -eq "$counted" ]; then
		fail "$label: the regress run (status $status, $((SECONDS - start)) s)"
		return 1
	fi
	log "$label: regress run done ($((SECONDS - start)) s)"
}

# no_uidgen_files WHAT: none is left in the server's directories.
no_uidgen_files() {
	local left
	left=$(uidgen_files)
	[ -z "$left" ] || { echo "left behind: $left"; return 1; }
}

# owned_by PACKAGE|"" FILE...: dpkg -S names PACKAGE as each file's owner, or,
# with "", no package owns any of them.
owned_by() {
	local want=$1 file owner
	shift
	[ "$#" -gt 0 ] || { echo "no uidgen file installed"; return 1; }
	for file in "$@"; do
		owner=$(dpkg -S "$file" 2>/dev/null | awk -F': ' -v f="$file" '$2 == f { print $1; exit }')
		echo "$file: ${owner:-no package}"
		[ "$owner" = "$want" ] || return 1
	done
}

# installed_release: the control file and library are there, and the
# control file's default_version is the tree's.
installed_release() {
	local version
	version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" uidgen.control)
	[ -f "$pkglibdir/uidgen.so" ] || { echo "no $pkglibdir/uidgen.so"; return 1; }
	grep -qx "default_version = '$version'" "$sharedir/extension/uidgen.control" ||
		{ echo "$sharedir/extension/uidgen.control is not version $version"; return 1; }
}

log "$("$pg_config" --version): $sharedir/extension and $pkglibdir"

# ---- the Debian package -----------------------------------------------------

deb_phase() {
	log "deb: make deb"
	step "deb: make deb" scripts/build-deb.sh || return 1
	local debs deb
	debs=(build/deb/"$package"_*.deb)
	deb=${debs[0]}
	[ -f "$deb" ] || { fail "deb: make deb built no $package"; return 1; }
	step "deb: apt-get install ./$deb" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "./$deb" || return 1
	local files
	mapfile -t files < <(uidgen_files)
	step "deb: the installed files are $package's (dpkg -S)" owned_by "$package" "${files[@]}" || return 1
	step "deb: the installed files are the tree's version" installed_release || return 1
	regress deb || true
	step "deb: apt-get purge $package" env DEBIAN_FRONTEND=noninteractive apt-get purge -y "$package" || return 1
	step "deb: no uidgen file left" no_uidgen_files
}

# ---- the PGXN release -----------------------------------------------------------

pgxn_phase() {
	log "pgxn: make dist"
	step "pgxn: make dist" make -s dist || return 1
	local zip
	zip=build/uidgen-$(sed -n "s/^default_version = '\(.*\)'/\1/p" uidgen.control).zip
	[ -f "$zip" ] || { fail "pgxn: make dist wrote no $zip"; return 1; }
	step "pgxn: pgxn install ./$zip" pgxn install --pg_config "$pg_config" "./$zip" || return 1
	local files
	mapfile -t files < <(uidgen_files)
	step "pgxn: the installed files are in no package (dpkg -S)" owned_by "" "${files[@]}" || return 1
	step "pgxn: the installed files are the tree's version" installed_release || return 1
	regress pgxn || true
	step "pgxn: pgxn uninstall ./$zip" pgxn uninstall --pg_config "$pg_config" "./$zip" || return 1
	step "pgxn: no uidgen file left" no_uidgen_files
}

deb_phase || true
# Whatever the deb phase left (a failure midway) goes before the next phase.
package_installed && { apt-get purge -y -qq "$package" >/dev/null 2>&1 || true; }
mapfile -t left < <(uidgen_files)
[ "${#left[@]}" -eq 0 ] || rm -rf "${left[@]}"
pgxn_phase || true

cleanup
finished=1
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
