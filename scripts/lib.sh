# scripts/lib.sh: shared by scripts/test.sh, scripts/test-all.sh and
# scripts/demo.sh.
#
# They run on a fresh Debian 12 machine, as root or not.  PostgreSQL refuses
# to run as root, and installing into the system's PostgreSQL needs root, so
# none of them touches a PostgreSQL installation: they build a private,
# relocated copy of it (as PostgreSQL's own "make check" does), install
# uidgen into that copy, and run throwaway clusters from it.  As root, the
# work runs as the postgres user on a copy of the source tree.
#
# The installation is Debian 12's PostgreSQL 15 unless PG_CONFIG names
# another one's pg_config (a package's, or one scripts/pg-build.sh built).

PG_MAJOR=15
PG_BINDIR=/usr/lib/postgresql/$PG_MAJOR/bin

# Debian packages the build and every kind of test need, whatever the server.
BASE_PACKAGES=(make g++ perl libpq-dev libgtest-dev libipc-run-perl faketime pgbouncer)
# ... and Debian's PostgreSQL 15, the default server, with pglogical and
# pg_partman (Debian packages them for this server; test/t/041_pglogical.pl
# and test/t/050_partman.pl skip without them).
PG15_PACKAGES=("postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR" "postgresql-client-$PG_MAJOR"
	"postgresql-$PG_MAJOR-pglogical" "postgresql-$PG_MAJOR-partman")
# ... and what scripts/pg-build.sh needs to build PostgreSQL from source.
PG_BUILD_PACKAGES=(gcc bison flex libreadline-dev zlib1g-dev libssl-dev bzip2)

# The packages the calling script needs: the base ones, Debian's PostgreSQL
# 15 unless PG_CONFIG names another server.
required_packages() {
	printf '%s\n' "${BASE_PACKAGES[@]}"
	[ -n "${PG_CONFIG:-}" ] || printf '%s\n' "${PG15_PACKAGES[@]}"
}

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# build_cache: where scripts/pg-build.sh and scripts/citus-build.sh keep what
# they build once per machine (created if need be): UIDGEN_CACHE, else
# /var/cache/uidgen as root, else ${XDG_CACHE_HOME:-$HOME/.cache}/uidgen.
build_cache() {
	local cache
	if [ -n "${UIDGEN_CACHE:-}" ]; then
		cache=$UIDGEN_CACHE
	elif [ "$(id -u)" -eq 0 ]; then
		cache=/var/cache/uidgen
	else
		cache=${XDG_CACHE_HOME:-$HOME/.cache}/uidgen
	fi
	mkdir -p "$cache"
	echo "$cache"
}

# build_once LABEL PREFIX KEY TARBALL BUILD: what scripts/pg-build.sh and
# scripts/citus-build.sh share, so that a build happens once per machine.
# Unless PREFIX holds a finished build marked with KEY (the tarball's SHA-256
# and the options, so that another tarball or other options build again),
# unpacks TARBALL into a scratch directory beside PREFIX, runs the function
# BUILD in the directory it unpacked to, which installs into PREFIX, and
# marks PREFIX.  BUILD's output goes to a log, whose tail is shown if it
# fails; a build that did not finish leaves no PREFIX behind.  One build of
# a PREFIX at a time on this machine (PREFIX.lock).
build_once() {
	local label=$1 prefix=$2 key=$3 tarball=$4 build=$5
	local stamp=$prefix/.uidgen-built src status=0
	exec 9>"$prefix.lock"
	flock 9
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ]; then
		log "$label: cached in $prefix"
		return 0
	fi
	log "$label: building into $prefix (once per machine)"
	rm -rf "$prefix"
	# Not local: the EXIT trap removes it when the script ends.
	build_work=$(mktemp -d "$prefix.build.XXXXXX")
	trap 'rm -rf "$build_work"' EXIT
	tar -C "$build_work" -xf "$tarball"
	src=$(find "$build_work" -mindepth 1 -maxdepth 1 -type d | head -1)
	[ -n "$src" ] || die "no source directory in $tarball"
	(cd "$src" && "$build") >"$build_work/build.log" 2>&1 || status=$?
	if [ "$status" -ne 0 ]; then
		tail -60 "$build_work/build.log" >&2
		rm -rf "$prefix"
		die "$label: the build failed (log above)"
	fi
	echo "$key" >"$stamp"
	log "$label: built"
}

# source_tarball VARIABLE SOURCE REGEX EXAMPLE: the absolute path of the
# tarball SOURCE names (VARIABLE=SOURCE of a make variable such as
# CITUS_SOURCE), or of the newest one in directory SOURCE whose name matches
# the extended regular expression REGEX (EXAMPLE names one in the error).
source_tarball() {
	local variable=$1 source=$2 regex=$3 example=$4 tarball
	if [ -d "$source" ]; then
		tarball=$(find "$source" -maxdepth 1 -type f -regextype posix-extended -regex ".*/$regex" -printf '%f\n' |
			sort -V | tail -1)
		[ -n "$tarball" ] || die "$variable=$source: no source tarball ($example)"
		echo "$(cd "$source" && pwd)/$tarball"
	else
		[ -f "$source" ] || die "$variable=$source: no such file or directory"
		echo "$(cd "$(dirname "$source")" && pwd)/$(basename "$source")"
	fi
}

missing_packages() {	# missing_packages PKG...
	local pkg
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' || echo "$pkg"
	done
}

ensure_packages() {	# ensure_packages PKG...
	local missing
	missing=$(missing_packages "$@" | tr '\n' ' ')
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
	prepare_to_run_as_postgres
	if [ "$(id -u)" -eq 0 ]; then
		local status=0
		rerun_as_postgres "$script" "$@" || status=$?
		exit $status
	fi
}

# build_and_install BINDIR LOG [TARGET...]: builds uidgen and the given
# extra targets (in one parallel make), warnings being errors, and installs
# uidgen into the private PostgreSQL tree whose binaries are in BINDIR.
# Objects built against another major version would link a library the
# server refuses ("version mismatch"), and make cannot tell: a stamp in
# build/ names the version they were built for, and another one cleans first.
build_and_install() {
	local bindir=$1 build_log=$2
	local targets=("${@:3}")
	local stamp=build/pg_version server
	server=$("$bindir/pg_config" --version)
	if [ "$(cat "$stamp" 2>/dev/null)" != "$server" ]; then
		make -s clean PG_CONFIG="$bindir/pg_config" >/dev/null 2>&1 || true
	fi
	# Without the LLVM bitcode for JIT inlining (with_llvm=no): it doubles the
	# compile time, and no test runs the JIT; make deb builds and ships it.
	make -s -j2 WERROR=1 with_llvm=no PG_CONFIG="$bindir/pg_config" all "${targets[@]}" >"$build_log" 2>&1 &&
		make -s install with_llvm=no PG_CONFIG="$bindir/pg_config" >>"$build_log" 2>&1 ||
		{ cat "$build_log"; die "build failed"; }
	mkdir -p build
	echo "$server" >"$stamp"
}

# copy_tree TOP DIR: the source tree TOP, as it is in the working tree, into
# the existing directory DIR, without git's directory and build outputs.
copy_tree() {
	tar -C "$1" --exclude=.git --exclude=build --exclude=tmp_check --exclude=results \
		--exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . | tar -C "$2" -xf -
}

# What a script run as root needs before rerun_as_postgres: an absolute
# PG_CONFIG that postgres can run, and the packages.
prepare_to_run_as_postgres() {
	if [ -n "${PG_CONFIG:-}" ]; then
		PG_CONFIG=$(source_pg_config) || exit 1	# an absolute path, for the rerun
		export PG_CONFIG
	fi
	# shellcheck disable=SC2046
	ensure_packages $(required_packages)
	if [ "$(id -u)" -eq 0 ] && [ -n "${PG_CONFIG:-}" ] &&
		! runuser -u postgres -- "$PG_CONFIG" --version >/dev/null 2>&1; then
		die "the postgres user cannot run $PG_CONFIG"
	fi
}

# Copies the tree to a fresh directory owned by postgres and runs the given
# script there as postgres.  Returns that script's status.
rerun_as_postgres() {
	local script=$1; shift
	local top copy
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	copy=$(mktemp -d /tmp/uidgen-src.XXXXXX)
	copy_tree "$top" "$copy"
	chown -R postgres: "$copy"
	chmod 755 "$copy"
	log "running as postgres in $copy"
	local status=0
	runuser -u postgres -- env PATH="$PATH" CI="${CI:-}" UIDGEN_KEEP="${UIDGEN_KEEP:-}" \
		PG_CONFIG="${PG_CONFIG:-}" CITUS_INSTALL="${CITUS_INSTALL:-}" PARTMAN_INSTALL="${PARTMAN_INSTALL:-}" \
		TESTS="${TESTS:-}" \
		TEST_JOBS="${TEST_JOBS:-}" REPEAT="${REPEAT:-}" UIDGEN_STRESS="${UIDGEN_STRESS:-}" UIDGEN_LONG="${UIDGEN_LONG:-}" UIDGEN_CHURN="${UIDGEN_CHURN:-}" bash "$copy/$script" "$@" || status=$?
	[ -n "${UIDGEN_KEEP:-}" ] || rm -rf "$copy"
	return $status
}

# source_pg_config: the pg_config of the installation to copy: PG_CONFIG,
# or Debian's PostgreSQL 15.  Fails with a clear message if it is unusable.
source_pg_config() {
	local config=${PG_CONFIG:-$PG_BINDIR/pg_config}
	if [[ "$config" != */* ]]; then
		config=$(command -v "$config") || die "PG_CONFIG=$PG_CONFIG: not on the PATH"
	fi
	[ -x "$config" ] || die "PG_CONFIG=$config: not an executable pg_config"
	"$config" --version >/dev/null 2>&1 || die "PG_CONFIG=$config does not run"
	[ -n "$("$config" --pgxs 2>/dev/null)" ] && [ -f "$("$config" --pgxs)" ] ||
		die "$config: no PGXS (install the server development package)"
	echo "$config"
}

# make_pg_tree DIR [PG_CONFIG [DESTDIR...]]: a relocated copy, under DIR, of
# the PostgreSQL installation PG_CONFIG belongs to (default:
# source_pg_config); prints its bin directory.  PostgreSQL finds its share
# and lib directories relative to its binaries, so this copy uses DIR's
# share/extension and lib (and lib/bitcode), where "make install" puts
# uidgen, and leaves the original installation alone.  The installation's
# directories are mirrored at their absolute paths under DIR: the binaries
# are copied (they resolve symlinks to find themselves), the directories
# "make install" writes into, and those above them, are new directories, and
# everything else is a symlink to the original, except uidgen's own files.
# Each DESTDIR is one that other extensions were installed into against the
# same PG_CONFIG ("make install DESTDIR=...", as scripts/citus-build.sh
# does): their files in those directories are linked into the copy too, so
# that its server finds them as if they were installed there.
make_pg_tree() {
	local dir=$1 config=${2:-}
	local extras=("${@:3}")
	[ -n "$config" ] || config=$(source_pg_config) || exit 1
	# The paths as pg_config reports them, not with symlinks resolved: the
	# binaries find the rest through these paths' relative layout.
	local bindir sharedir pkglibdir includedir libdir
	bindir=$(cd "$("$config" --bindir)" && pwd)
	sharedir=$(cd "$("$config" --sharedir)" && pwd)
	pkglibdir=$(cd "$("$config" --pkglibdir)" && pwd)
	includedir=$(cd "$("$config" --includedir)" && pwd)
	libdir=$(cd "$("$config" --libdir)" && pwd)

	local private=("$sharedir/extension" "$pkglibdir")
	[ -d "$pkglibdir/bitcode" ] && private+=("$pkglibdir/bitcode")

	# The deepest directory above all of them.
	local root=$bindir path
	for path in "$sharedir" "$pkglibdir" "$includedir" "$libdir"; do
		while [ "$root" != / ] && [[ "$path/" != "$root/"* ]]; do
			root=$(dirname "$root")
		done
	done

	_mirror() {
		local src=$1 entry p
		if [ "$src" = "$bindir" ]; then
			cp -a "$src" "$dir$src"
			return
		fi
		for p in "${private[@]}" "$bindir"; do
			if [ "$p" = "$src" ] || [[ "$p" == "$src/"* ]]; then
				mkdir -p "$dir$src"
				for entry in "$src"/* "$src"/.[!.]*; do
					[ -e "$entry" ] || [ -L "$entry" ] || continue
					# A uidgen installed in the original is not this build's: leave it out.
					[[ "$(basename "$entry")" == uidgen* ]] && continue
					_mirror "$entry"
				done
				return
			fi
		done
		ln -s "$src" "$dir$src"
	}
	mkdir -p "$dir$(dirname "$root")"
	_mirror "$root"
	mkdir -p "$dir$sharedir/extension" "$dir$pkglibdir"

	local extra entry
	for extra in "${extras[@]}"; do
		for path in "${private[@]}"; do
			for entry in "$extra$path"/*; do
				[ -e "$entry" ] || continue
				# lib/bitcode is private too: its entries are linked on its own turn.
				[ "${entry#"$extra"}" != "$pkglibdir/bitcode" ] || continue
				ln -sfn "$entry" "$dir$path/"
			done
		done
	done
	echo "$dir$bindir"
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
