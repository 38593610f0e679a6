# scripts/lib.sh: shared by scripts/test.sh and scripts/demo.sh.
#
# Both run on a fresh Debian 12 machine, as root or not.  PostgreSQL refuses
# to run as root, and installing into the system's PostgreSQL needs root, so
# neither touches the system installation: they build a private, relocated
# copy of PostgreSQL 15 (as PostgreSQL's own "make check" does), install
# uidgen into it, and run throwaway clusters from it.  As root, the work runs
# as the postgres user on a copy of the source tree.

PG_MAJOR=15
PG_BINDIR=/usr/lib/postgresql/$PG_MAJOR/bin

# Debian packages the build and every kind of test need.
REQUIRED_PACKAGES=(
	make g++ perl
	"postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR" "postgresql-client-$PG_MAJOR"
	libpq-dev libgtest-dev libipc-run-perl faketime
)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

missing_packages() {
	local pkg
	for pkg in "${REQUIRED_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' || echo "$pkg"
	done
}

ensure_packages() {
	local missing
	missing=$(missing_packages | tr '\n' ' ')
	[ -z "${missing// /}" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		die "missing Debian packages: $missing
Install them as root:  apt-get update && apt-get install -y $missing"
	fi
	log "installing Debian packages: $missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >&2
}

# The start of every entry script: install what is missing, and as root run
# the script again as postgres (initdb refuses root) and exit with its status.
install_or_rerun_as_postgres() {
	local script=$1; shift
	ensure_packages
	if [ "$(id -u)" -eq 0 ]; then
		local status=0
		rerun_as_postgres "$script" "$@" || status=$?
		exit $status
	fi
}

# build_and_install BINDIR LOG: builds uidgen and installs it into the
# private PostgreSQL tree whose binaries are in BINDIR.
build_and_install() {
	local bindir=$1 build_log=$2
	make -s -j2 PG_CONFIG="$bindir/pg_config" >"$build_log" 2>&1 &&
		make -s install PG_CONFIG="$bindir/pg_config" >>"$build_log" 2>&1 ||
		{ cat "$build_log"; die "build failed"; }
}

# Copies the tree to a fresh directory owned by postgres and runs the given
# script there as postgres.  Returns that script's status.
rerun_as_postgres() {
	local script=$1; shift
	local top copy
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	copy=$(mktemp -d /tmp/uidgen-src.XXXXXX)
	tar -C "$top" --exclude=.git --exclude=build --exclude=tmp_check --exclude=results \
		--exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . | tar -C "$copy" -xf -
	chown -R postgres: "$copy"
	chmod 755 "$copy"
	log "running as postgres in $copy"
	local status=0
	runuser -u postgres -- env PATH="$PATH" CI="${CI:-}" UIDGEN_KEEP="${UIDGEN_KEEP:-}" \
		bash "$copy/$script" "$@" || status=$?
	[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$copy"
	return $status
}

# make_pg_tree DIR: a relocated copy of the system's PostgreSQL under DIR/usr.
# PostgreSQL finds its share and lib directories relative to its binaries, so
# this copy uses DIR's share/extension and lib, where "make install" puts
# uidgen, and leaves the system installation alone.
make_pg_tree() {
	local root=$1/usr
	local lib=$root/lib/postgresql/$PG_MAJOR
	local share=$root/share/postgresql/$PG_MAJOR
	local entry

	mkdir -p "$lib/lib/bitcode" "$share/extension" "$root/include"
	cp -a "$PG_BINDIR" "$lib/bin"			# binaries resolve symlinks: copy them
	for entry in /usr/lib/postgresql/$PG_MAJOR/lib/*; do
		[ "$(basename "$entry")" = bitcode ] || ln -s "$entry" "$lib/lib/"
	done
	for entry in /usr/lib/postgresql/$PG_MAJOR/lib/bitcode/*; do
		ln -s "$entry" "$lib/lib/bitcode/"
	done
	for entry in /usr/share/postgresql/$PG_MAJOR/*; do
		[ "$(basename "$entry")" = extension ] || ln -s "$entry" "$share/"
	done
	for entry in /usr/share/postgresql/$PG_MAJOR/extension/*; do
		ln -s "$entry" "$share/extension/"
	done
	ln -s /usr/include/postgresql "$root/include/postgresql"
	echo "$lib/bin"
}

free_port() {
	local port
	for port in $(shuf -i 20000-40000 -n 50); do
		if ! (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
			[ ! -e "/tmp/.s.PGSQL.$port" ]; then
			echo "$port"
			return
		fi
	done
	die "no free port"
}

# start_cluster BINDIR DATADIR: a throwaway cluster on a Unix socket in
# DATADIR, listening on no TCP address.  Sets PGHOST and PGPORT.
start_cluster() {
	local bindir=$1 data=$2
	"$bindir/initdb" -D "$data" -A trust -U postgres --no-sync >"$data.initdb.log" 2>&1 ||
		{ cat "$data.initdb.log" >&2; die "initdb failed"; }
	PGPORT=$(free_port)
	PGHOST=$data
	export PGHOST PGPORT PGUSER=postgres PGDATABASE=postgres
	cat >>"$data/postgresql.conf" <<-CONF
		listen_addresses = ''
		unix_socket_directories = '$data'
		port = $PGPORT
		fsync = off
		max_prepared_transactions = 10
		log_min_messages = warning
		CONF
	"$bindir/pg_ctl" -D "$data" -l "$data/server.log" -w start >/dev/null ||
		{ cat "$data/server.log" >&2; die "the cluster did not start"; }
}

stop_cluster() {
	local bindir=$1 data=$2
	"$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null 2>&1 || true
}
