# Make targets for github.com/go-rdma/rdmacm. `make test` is the test
# command CI runs; `make demo` is the main demo. Both install what they need.

GO       ?= go
# A count, not a duration: Go 1.26's fuzz coordinator can fail a healthy
# duration-bounded run with "context deadline exceeded" (golang/go#75804,
# fixed in Go 1.27); a count has no wall-clock deadline.
FUZZTIME ?= 30000x
# Packages whose tests must pass on foreign architectures under qemu-user
# (the wire is big-endian; s390x is a big-endian host).
QEMU_USER_PKGS ?= ./ece/... ./mad/... ./qp/... ./internal/abi/...
CROSS_ARCHES   ?= amd64 arm64 riscv64 ppc64le s390x loong64 386

.PHONY: hwtest bench-vm all build test unit lint vet staticcheck vulncheck fuzz fuzz-long bench cross qemu-user vmtest demo deps clean

all: build

deps:
	@tools/deps.sh

build:
	CGO_ENABLED=0 $(GO) build ./...

# The one test command: lint, unit tests with the race detector, a short
# fuzz run, the big-endian and arm64 runs under qemu-user, cross builds,
# and the real-kernel tests in QEMU guests.
test: deps lint unit fuzz qemu-user cross vmtest

unit:
	$(GO) test -race -count=1 ./...

lint: vet staticcheck vulncheck

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }

staticcheck:
	$(GO) tool staticcheck ./...

vulncheck:
	tools/vulncheck.sh ./...

fuzz:
	tools/fuzz.sh $(FUZZTIME)

fuzz-long:
	tools/fuzz.sh 2m

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

cross:
	@set -e; for arch in $(CROSS_ARCHES); do \
		echo "cross: linux/$$arch"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build ./... ; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) vet ./... ; \
	done

# The mlx5 provider's encoding tests (WQEs, CQEs, sizing, ECE) run there
# too: WQEs are big-endian whatever the host is.
QEMU_USER_MLX5 ?= -run 'MLX5' ./uverbs/
qemu-user: deps
	CGO_ENABLED=0 GOARCH=s390x $(GO) test -count=1 -exec qemu-s390x-static $(QEMU_USER_PKGS)
	CGO_ENABLED=0 GOARCH=s390x $(GO) test -count=1 -exec qemu-s390x-static $(QEMU_USER_MLX5)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static $(QEMU_USER_PKGS)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static $(QEMU_USER_MLX5)

# Real-kernel tests in QEMU soft-RoCE guests (see docs/testing.md). VMTEST=1
# is set on these lines only: host-driven tests in internal/vmtest, then the
# packages whose test binaries run inside guest a (go test -exec vmexec).
VMEXEC_PKGS ?= ./internal/vmtest/guest/ ./uverbs/ ./cmd/verbs-pingpong/ ./cm/ ./internal/hwtest/
# Packages whose guest a boots without ib_cm, iw_cm, rdma_cm and rdma_ucm,
# so that our CM engine owns the CM class over umad.
VMEXEC_NOCM_PKGS ?= ./cm/umad/
vmtest: deps
	$(GO) run ./internal/vmtest/cmd/vmtest prepare
	VMTEST=1 $(GO) test -count=1 -timeout 9m -v ./internal/vmtest/
	VMTEST=1 $(GO) test -count=1 -timeout 20m -v ./cmd/rdmacm-ping/
	CGO_ENABLED=0 $(GO) build -o bin/vmexec ./internal/vmtest/cmd/vmexec
	$(GO) generate ./internal/hwtest/
	CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -p 1 -timeout 15m -v -exec "$(CURDIR)/bin/vmexec" $(VMEXEC_PKGS)
	CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -p 1 -timeout 8m -v -exec "$(CURDIR)/bin/vmexec -nocm-a" $(VMEXEC_NOCM_PKGS)
	CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -p 1 -timeout 15m -v -run 'TestGuestEndurance' -exec "$(CURDIR)/bin/vmexec -nocm-a" ./cm/

# The uverbs and cm checks and both commands on this host's own RDMA device
# (RDMA_DEV=mlx5_0; default: the first device), as a Markdown report to
# paste into an issue (docs/hardware.md). HWTEST_FLAGS: e.g. -json FILE.
hwtest:
	RDMA_DEV=$(RDMA_DEV) $(GO) run ./internal/hwtest/cmd/hwtest $(HWTEST_FLAGS)

# Connection setup, side by side with librdmacm's cmtime in the same guests
# (BENCH_ROUNDS, BENCH_CONNS tune it; see docs/benchmarks.md).
bench-vm: deps
	VMTEST=1 $(GO) test -run '^$$' -bench 'CmtimeVM|CmtimeUserVM' -benchtime 1x -timeout 60m ./cmd/rdmacm-ping/

# The main demo: rdmacm-ping against rping both ways, then ECE against a C
# librdmacm peer, across two soft-RoCE guests.
demo: deps
	$(GO) run ./internal/vmtest/cmd/vmdemo

clean:
	$(GO) clean -testcache
