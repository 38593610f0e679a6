#!/usr/bin/env bash
# scripts/check-layering.sh: the source's subsystems depend in one direction.
#
# The folders of src/, in the order the Makefile's LAYERS names them, each
# include headers only from their own folder and those before it; src/
# module.cpp, on top, may include any.  A folder inside another's is a layer
# of its own when LAYERS names it (registry/membership, the member side's
# high layer, above worker_table while registry is below it): a file's layer
# is the longest entry of LAYERS its path starts with.  Every folder that
# holds a source file must be a layer, so that none is left out of the
# build (the Makefile's OBJS takes each layer's own files) or of this check.
# Prints each violation and exits non-zero if there is one.
#
# An include is resolved as the compiler does (-Isrc, see the Makefile), so
# that no spelling slips past: "x.hpp" and "../server_scope/x.hpp" first beside
# the including file, then under src/; <server_scope/x.hpp> under src/; and
# "# include" with blanks around the "#".  What resolves to no file of src/
# is PostgreSQL's or the system's.
set -euo pipefail
cd "$(dirname "$0")/.."

layers=($(sed -n 's/^LAYERS = //p' Makefile))
[ ${#layers[@]} -gt 0 ] || { echo "check-layering: no LAYERS in the Makefile" >&2; exit 2; }
declare -A rank
for i in "${!layers[@]}"; do rank[${layers[$i]}]=$i; done
# A header directly in src/ (beside module.cpp) is above every layer.
top_rank=${#layers[@]}

# layer_of PATH: sets layer to the longest entry of LAYERS that PATH
# (relative to src/) lies under, or to nothing.
layer_of() {
	local candidate
	layer=
	for candidate in "${layers[@]}"; do
		if [[ "$1" == "$candidate"/* ]] && [ ${#candidate} -gt ${#layer} ]; then
			layer=$candidate
		fi
	done
}

violations=0
violation() {
	echo "$1"
	violations=$((violations + 1))
}

# normalize PATH: sets normal to PATH without "." and "dir/.." steps (the
# file need not exist); a path that climbs above the tree keeps its "..".
normalize() {
	local part parts out=()
	local IFS=/
	read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		case "$part" in
			'' | .) ;;
			..)
				if [ ${#out[@]} -gt 0 ] && [ "${out[-1]}" != .. ]; then
					unset 'out[-1]'
				else
					out+=(..)
				fi
				;;
			*) out+=("$part") ;;
		esac
	done
	normal="${out[*]}"
}

# resolve FILE FORM PATH: sets resolved to the file of src/ that "#include
# FORM PATH" in FILE names (FORM is " or <), or to nothing.  A path that
# names no file is still taken beside FILE when it starts with "." and under
# src/ when it starts with a layer's name, so that a misspelt include cannot
# hide a dependency from this check.
resolve() {
	local file=$1 form=$2 path=$3 beside under normal layer
	normalize "${file%/*}/$path"
	beside=$normal
	normalize "src/$path"
	under=$normal
	resolved=
	if [ "$form" = '"' ] && [ -f "$beside" ]; then
		resolved=$beside
	elif [ -f "$under" ]; then
		resolved=$under
	elif [ "$form" = '"' ] && [[ "$path" == .* ]] && [[ "$beside" == src/* ]]; then
		resolved=$beside
	else
		layer_of "$path"
		[ -z "$layer" ] || resolved=$under
	fi
}

while IFS= read -r dir; do
	rel=${dir#src/}
	[ -n "${rank[$rel]+x}" ] || violation "$dir: a folder of source files the Makefile's LAYERS does not name"
done < <(find src -mindepth 2 -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.c' -o -name '*.h' \) -printf '%h\n' | sort -u)

while IFS= read -r file; do
	rel=${file#src/}
	[[ "$rel" == */* ]] || continue	# src/module.cpp, on top, may include any
	layer_of "$rel"
	[ -n "$layer" ] || continue	# reported above
	own=$layer
	while IFS=: read -r line form path; do
		resolve "$file" "$form" "$path"
		used_file=$resolved
		[ -n "$used_file" ] || continue	# PostgreSQL's or the system's
		used_rel=${used_file#src/}
		if [[ "$used_rel" == */* ]]; then
			layer_of "$used_rel"
			used=$layer
			[ -n "$used" ] || continue	# a folder reported above
			used_rank=${rank[$used]}
		else
			used="src/"
			used_rank=$top_rank
		fi
		if [ "$used_rank" -gt "${rank[$own]}" ]; then
			close='"'
			[ "$form" = '"' ] || close='>'
			violation "$file:$line: $own includes $form$path$close ($used_file), of $used, a layer above it"
		fi
	done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]+[">]' "$file" |
		sed -E 's/^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*(["<])([^">]+)[">].*/\1:\2:\3/' || true)
done < <(find src -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.c' -o -name '*.h' \) | sort)

if [ "$violations" -gt 0 ]; then
	echo "check-layering: $violations violation(s)"
	exit 1
fi
echo "check-layering: ${layers[*]} and module.cpp, in one direction"
