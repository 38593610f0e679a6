#!/usr/bin/env bash
# scripts/demo.sh: "make demo".  Builds uidgen, installs it into a private
# copy of PostgreSQL, starts a throwaway cluster and runs scripts/demo.sql
# in it, echoing every statement and its result.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib.sh
. "$top/scripts/lib.sh"

install_or_rerun_as_postgres scripts/demo.sh "$@"

cd "$top"
scratch=$(mktemp -d /tmp/uidgen-demo.XXXXXX)
bindir=$(make_pg_tree "$scratch/pg")
data=$scratch/data
trap 'stop_cluster "$bindir" "$data"; rm -rf "$scratch"' EXIT

log "building and installing uidgen into a private PostgreSQL copy"
build_and_install "$bindir" "$scratch/build.log"

log "starting a throwaway cluster"
start_cluster "$bindir" "$data"

log "running scripts/demo.sql"
echo
"$bindir/psql" -X -q -e -v ON_ERROR_STOP=1 -f scripts/demo.sql
