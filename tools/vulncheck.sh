#!/bin/bash
# vulncheck.sh: run govulncheck against a vulnerability database built
# locally from the golang.org/x/vulndb module (the machine reaches only the
# Go module proxy, not vuln.go.dev). The database is cached outside the tree.
set -euo pipefail
VULNDB_VERSION=v0.0.0-20261105234957-e22db6528018
cache=${VULNDB_CACHE:-$(go env GOCACHE)/../go-rdma-vulndb}/$VULNDB_VERSION
if [ ! -f "$cache/index/db.json" ]; then
	src=$(GOFLAGS=-mod=mod go mod download -json golang.org/x/vulndb@$VULNDB_VERSION | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
	rm -rf "$cache.tmp" && mkdir -p "$cache.tmp"
	(cd "$src" && GOFLAGS=-mod=mod go run ./cmd/indexdb -vulns data/osv -out "$cache.tmp")
	rm -rf "$cache" && mv "$cache.tmp" "$cache"
fi
exec go tool govulncheck -db "file://$cache" "$@"
