#!/usr/bin/env bash
# scripts/check-layering.sh: the source's subsystems depend in one direction.
#
# The folders of src/, in the order the Makefile's LAYERS names them, each
# include headers only from their own folder and those before it; src/
# module.cpp, on top, may include any.  Also fails when a name the project
# retired for being overloaded (docs/design.md, "Glossary") comes back.
# Prints each violation and exits non-zero if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

layers=($(sed -n 's/^LAYERS = //p' Makefile))
[ ${#layers[@]} -gt 0 ] || { echo "check-layering: no LAYERS in the Makefile" >&2; exit 2; }
declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done

violations=0
for dir in src/*/; do
	layer=$(basename "$dir")
	if [ -z "${rank[$layer]+x}" ]; then
		echo "src/$layer: a folder the Makefile's LAYERS does not name"
		violations=$((violations + 1))
		continue
	fi
	while IFS=: read -r file line include; do
		used=${include%%/*}
		[ -n "${rank[$used]+x}" ] || continue	# PostgreSQL's own headers
		if [ "${rank[$used]}" -gt "${rank[$layer]}" ]; then
			echo "$file:$line: $layer includes $include, of $used, a layer above it"
			violations=$((violations + 1))
		fi
	done < <(grep -HnoE '^#include "[^"]+"' "$dir"*.cpp "$dir"*.hpp 2>/dev/null | sed -E 's/#include "([^"]+)"/\1/')
done

# Retired names: each stood for more than one thing (see the glossary).
retired='registry_relid|forget_registry|RegistryOrigin|registry_origin\(|registry_may_have_changed|FleetState|fleet_state\(|FleetBlock|FleetGrant|FleetRules|fleet_rules\(|take_fleet_worker|claim_fleet_worker'
while IFS= read -r hit; do
	echo "$hit: a retired name (docs/design.md, \"Glossary\")"
	violations=$((violations + 1))
done < <(grep -rnE "$retired" src test/unit 2>/dev/null || true)

if [ "$violations" -gt 0 ]; then
	echo "check-layering: $violations violation(s)"
	exit 1
fi
echo "check-layering: ${layers[*]} and module.cpp, in one direction"
