#!/bin/bash
# fuzz.sh FUZZTIME [PKG...]: run every fuzz target of the given packages
# (default: all) for FUZZTIME each (a duration such as 2m, or a count of
# inputs such as 30000x). Go runs one fuzz target per invocation.
#
# With a duration, Go 1.26's fuzz coordinator can end a healthy run with
# "context deadline exceeded" (golang/go#75804: it reads the parent
# context's deadline before the workers' child context is cancelled). CI
# therefore uses a count, which sets no deadline. A duration run that fails
# that way with no failing input written is run once more; a real failure
# (a crasher written to testdata/fuzz) fails at once.
set -uo pipefail
fuzztime=${1:-30000x}; shift || true
pkgs=("$@"); [ ${#pkgs[@]} -gt 0 ] || mapfile -t pkgs < <(go list ./...)
n=0
log=$(mktemp); trap 'rm -f "$log"' EXIT
for pkg in "${pkgs[@]}"; do
	targets=$(go test -list '^Fuzz' "$pkg" | grep '^Fuzz') || continue
	for target in $targets; do
		for attempt in 1 2; do
			echo "fuzz: $pkg $target ($fuzztime, attempt $attempt)"
			if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -parallel 1 "$pkg" >"$log" 2>&1; then
				tail -n 2 "$log"
				break
			fi
			cat "$log"
			if [ "$attempt" = 2 ] || grep -q 'Failing input written' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
				echo "fuzz: $pkg $target FAILED" >&2
				exit 1
			fi
		done
		n=$((n + 1))
	done
done
echo "fuzz: ran $n targets for $fuzztime each"
[ "$n" -gt 0 ] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }
