#!/bin/bash
# fuzz.sh FUZZTIME [PKG...]: run every fuzz target of the given packages
# (default: all) for FUZZTIME each. Go runs one fuzz target per invocation.
set -euo pipefail
fuzztime=${1:-5s}; shift || true
pkgs=("$@"); [ ${#pkgs[@]} -gt 0 ] || mapfile -t pkgs < <(go list ./...)
n=0
for pkg in "${pkgs[@]}"; do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "fuzz: $pkg $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
		n=$((n + 1))
	done
done
echo "fuzz: ran $n targets for $fuzztime each"
[ "$n" -gt 0 ] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }
