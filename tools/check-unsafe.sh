#!/bin/sh
# check-unsafe: package unsafe is confined to the ABI layer and the data
# paths (docs/architecture.md, "One ABI layer").
#
#   - internal/abi/, internal/kcall/ and internal/barrier/ may import it
#     anywhere: the ABI layer, its syscalls, and the barrier/doorbell assembly.
#   - The files in ALLOWED may import it, and each must say why in a
#     comment line containing "unsafe:" (for example
#     "// unsafe: the rings are mmap'd memory the kernel shares").
#   - Test files (_test.go) may import it: layout tests compare Go offsets
#     with C's, and data-path tests look at mapped memory. Test code never
#     ships in a binary.
#
# Every other .go file in the tree (tracked or not, minus .gitignore'd
# ones) that imports unsafe is listed and the check fails.
set -eu
cd "$(dirname "$0")/.."

ALLOWED='
uverbs/rxe.go
uverbs/mlx5.go
uverbs/mlx5_qp.go
uverbs/mlx5_cq.go
uverbs/mlx5_srq.go
uverbs/rxe_srq.go
internal/mlx5sim/install.go
internal/mlx5sim/remote.go
'

listed() { printf '%s\n' "$2" | grep -qxF "$1"; }

fail=0
for f in $( (git ls-files -- '*.go'; git ls-files --others --exclude-standard -- '*.go') | sort -u); do
	[ -f "$f" ] || continue
	case "$f" in
	*_test.go | internal/abi/* | internal/kcall/* | internal/barrier/*) continue ;;
	esac
	grep -qE '^[[:space:]]*(import[[:space:]]+)?([A-Za-z_][A-Za-z0-9_]*[[:space:]]+)?"unsafe"' "$f" || continue
	if listed "$f" "$ALLOWED"; then
		if ! grep -qE '^[[:space:]]*//.*unsafe:' "$f"; then
			echo "check-unsafe: $f: allowed, but no comment line saying why (\"// unsafe: ...\")"
			fail=1
		fi
	else
		echo "check-unsafe: $f: imports unsafe outside internal/abi, internal/kcall and the data-path files"
		fail=1
	fi
done
for f in $ALLOWED; do
	[ -f "$f" ] || echo "check-unsafe: $f is listed in tools/check-unsafe.sh but does not exist (remove it)"
done
exit $fail
