#!/bin/bash
# fuzz.sh FUZZTIME [PKG...]: run every fuzz target of the given packages
# (default: all) for FUZZTIME each (a duration such as 2m, or a count of
# inputs such as 30000x). Go runs one fuzz target per invocation, with one
# worker (-parallel 1); FUZZJOBS targets (default: the number of CPUs) run
# at once. The targets are listed by one `go test -list` over every
# package, which builds the test binaries in parallel.
#
# With a duration, Go 1.26's fuzz coordinator can end a healthy run with
# "context deadline exceeded" (golang/go#75804: it reads the parent
# context's deadline before the workers' child context is cancelled). CI
# therefore uses a count, which sets no deadline. A duration run that fails
# that way with no failing input written is run once more; a real failure
# (a crasher written to testdata/fuzz) fails at once.
set -uo pipefail
fuzztime=${1:-30000x}; shift || true
pkgs=("$@"); [ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
jobs=${FUZZJOBS:-$(nproc)}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT

# `go test -list` prints a package's targets, then its "ok" line.
if ! go test -list '^Fuzz' "${pkgs[@]}" >"$dir/list" 2>&1; then
	cat "$dir/list"
	echo "fuzz: listing the fuzz targets failed" >&2
	exit 1
fi
awk '/^Fuzz/ { t[n++] = $1 } /^ok / { for (i = 0; i < n; i++) print $2, t[i]; n = 0 }' "$dir/list" >"$dir/targets"
n=$(wc -l <"$dir/targets")
[ "$n" -gt 0 ] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }

# fuzz_one PKG TARGET: one target, a second attempt only for the
# deadline error above; its output goes to $dir/PKG-TARGET.log.
fuzz_one() {
	local pkg=$1 target=$2 log
	log="$dir/$(echo "$pkg-$target" | tr / _).log"
	for attempt in 1 2; do
		echo "fuzz: $pkg $target ($fuzztime, attempt $attempt)" >>"$log"
		if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -parallel 1 "$pkg" >>"$log" 2>&1; then
			return 0
		fi
		if [ "$attempt" = 2 ] || grep -q 'Failing input written' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
			return 1
		fi
	done
}

failed=0
running=0
while read -r pkg target; do
	fuzz_one "$pkg" "$target" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n || failed=1
		running=$((running - 1))
	fi
done <"$dir/targets"
while [ "$running" -gt 0 ]; do
	wait -n || failed=1
	running=$((running - 1))
done
for log in "$dir"/*.log; do
	if grep -q -E '^(FAIL|--- FAIL)|Failing input written|panic:' "$log"; then
		cat "$log"
	else
		head -n 1 "$log"
		tail -n 2 "$log"
	fi
done
if [ "$failed" != 0 ]; then
	echo "fuzz: FAILED (logs above)" >&2
	exit 1
fi
echo "fuzz: ran $n targets for $fuzztime each, $jobs at a time"
