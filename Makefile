# Make targets for github.com/go-rdma/rdmacm. `make test` is the test
# command CI runs; `make demo` is the main demo. Both install what they need.

GO       ?= go
# A count, not a duration: Go 1.26's fuzz coordinator can fail a healthy
# duration-bounded run with "context deadline exceeded" (golang/go#75804,
# fixed in Go 1.27); a count has no wall-clock deadline.
FUZZTIME ?= 30000x
# Packages whose tests must pass on foreign architectures under qemu-user
# (the wire is big-endian; s390x is a big-endian host).
QEMU_USER_PKGS ?= ./ece/... ./mad/... ./qp/... ./internal/abi/... ./internal/barrier/ ./internal/kcall/... ./rsocket/
CROSS_ARCHES   ?= amd64 arm64 riscv64 ppc64le s390x loong64 386

.PHONY: vmtest-arm64 vmtest-long vmtest-stress hwtest bench-vm all build test fast slow unit lint vet staticcheck vulncheck check-unsafe fuzz fuzz-long bench cross qemu-user vmtest demo deps clean

all: build

deps:
	@tools/deps.sh

build:
	CGO_ENABLED=0 $(GO) build ./...

# The one test command, in two tiers run in order (no -j): the fast tier
# (vet, staticcheck, vulncheck, check-unsafe, unit tests with the race
# detector, cross builds) fails before any guest boots; the slow tier is a
# short fuzz run, the big-endian and arm64 runs under qemu-user, and the
# real-kernel tests in QEMU guests. About 17 minutes on 2 cores.
test: deps fast slow

fast: lint unit cross

slow: fuzz qemu-user vmtest

# internal/mlx5sim runs without -race: its differential drives both
# providers from one goroutine, scenario by scenario, and the race detector
# tripled its time (uverbs' own tests run with -race).
RACE_PKGS ?= $$($(GO) list ./... | grep -v '/internal/mlx5sim$$')
unit:
	$(GO) test -race -count=1 $(RACE_PKGS)
	$(GO) test -count=1 -skip '^TestDifferentialArm64$$' ./internal/mlx5sim/

lint: vet staticcheck vulncheck check-unsafe

check-unsafe:
	tools/check-unsafe.sh

vet:
	$(GO) vet ./...
	cd examples/grpc && $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }

staticcheck:
	$(GO) tool staticcheck ./...
	$(GO) build -o bin/staticcheck honnef.co/go/tools/cmd/staticcheck && cd examples/grpc && ../../bin/staticcheck ./...

# The library and its commands. examples/http (and the grpc module) link
# net/http, whose go1.26.8 has advisories fixed in go1.26.9/1.26.10
# (GO-2026-66xx, GO-2026-6809); nothing the module ships imports net/http,
# and programs using rsocket with net/http take net/http from their own Go
# (docs/rsocket.md).
VULNCHECK_PKGS ?= $$($(GO) list ./... | grep -v '/examples/http$$')
vulncheck:
	tools/vulncheck.sh $(VULNCHECK_PKGS)

fuzz:
	tools/fuzz.sh $(FUZZTIME)

fuzz-long:
	tools/fuzz.sh 2m

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Cross builds: the whole module builds
# and vets (test files included) for linux on every CROSS_ARCH and for
# every CROSS_NONLINUX system. Off Linux, uverbs (and cm) build as stubs
# whose entry points fail with ErrNotSupported ("not supported on GOOS");
# x/sys/unix does not build on windows, so portable files import the shim
# internal/unix instead. No windows, darwin or freebsd runner exists here,
# so the tests of CROSS_PORTABLE_PKGS (pure Go: codecs, state machines, the
# CM engine and its fabric) are compiled and linked for each of those
# systems (go vet + go test -c), not run.
CROSS_NONLINUX ?= darwin/amd64 darwin/arm64 windows/amd64 freebsd/amd64
CROSS_PORTABLE_PKGS ?= ./mad/... ./ece/... ./qp/... ./rdma/... ./cmd/cmdump/ ./cm/engine/ ./internal/testfabric/
# CROSS_NONLINUX_EXCLUDE: packages left out of the non-Linux builds, with
# every package that imports them (listed as skipped). Empty: the whole
# module builds everywhere. It is for a package caught mid-conversion to
# internal/unix, e.g. make cross CROSS_NONLINUX_EXCLUDE=./pkg/...
CROSS_NONLINUX_EXCLUDE ?=
cross:
	@set -e; cd examples/grpc; for target in linux/arm64 linux/s390x darwin/arm64 windows/amd64; do \
		echo "cross: examples/grpc $$target"; CGO_ENABLED=0 GOOS=$${target%/*} GOARCH=$${target#*/} $(GO) vet ./... ; done
	@set -e; for arch in $(CROSS_ARCHES); do \
		echo "cross: linux/$$arch"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build ./... ; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) vet ./... ; \
	done
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	for target in $(CROSS_NONLINUX); do \
		os=$${target%/*}; arch=$${target#*/}; \
		export CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch; \
		echo "cross: $$os/$$arch"; \
		ex=" $$( [ -z "$(strip $(CROSS_NONLINUX_EXCLUDE))" ] || $(GO) list -e $(CROSS_NONLINUX_EXCLUDE) | tr '\n' ' ')"; \
		pkgs=$$($(GO) list -e -f '{{.ImportPath}} {{join .Deps " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | \
			awk -v ex="$$ex" '{ for (i = 1; i <= NF; i++) if (index(ex, " " $$i " ")) { print "cross: " ENVIRON["GOOS"] "/" ENVIRON["GOARCH"] ": skipping " $$1 " (CROSS_NONLINUX_EXCLUDE)" > "/dev/stderr"; next } print $$1 }'); \
		$(GO) build $$pkgs; \
		$(GO) vet $$pkgs; \
		$(GO) vet $(CROSS_PORTABLE_PKGS); \
		$(GO) test -c -o "$$tmp/" $(CROSS_PORTABLE_PKGS); \
		rm -f "$$tmp"/*; \
	done

# The mlx5 provider's encoding tests (WQEs, CQEs, sizing, ECE) run there
# too: WQEs are big-endian whatever the host is.
QEMU_USER_MLX5 ?= -run 'MLX5' ./uverbs/
# The mlx5 differential on arm64 runs from the host (libmlx5's arm64 build
# and our arm64 test binary under qemu-aarch64); it is here, not in unit,
# to stay out of the race-detector tier's longest package.
QEMU_USER_MLX5_DIFF ?= -run '^TestDifferentialArm64$$' ./internal/mlx5sim/
qemu-user: deps
	CGO_ENABLED=0 GOARCH=s390x $(GO) test -count=1 -exec qemu-s390x-static $(QEMU_USER_PKGS)
	CGO_ENABLED=0 GOARCH=s390x $(GO) test -count=1 -exec qemu-s390x-static $(QEMU_USER_MLX5)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static $(QEMU_USER_PKGS)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static $(QEMU_USER_MLX5)
	CGO_ENABLED=0 $(GO) test -count=1 $(QEMU_USER_MLX5_DIFF)
	# mmap2 (386, arm, mips): only 386 runs on this kernel itself, and only
	# it proves an offset past 4 GiB (qemu-user before 8.1 cuts it).
	CGO_ENABLED=0 GOARCH=386 $(GO) test -count=1 -run 'Mmap|Scratch' ./internal/kcall/

# Real-kernel tests in QEMU soft-RoCE guests (see docs/testing.md). VMTEST=1
# is set on these lines only: host-driven tests in internal/vmtest, then the
# packages whose test binaries run inside guest a (go test -exec vmexec).
VMEXEC_PKGS ?= ./internal/vmtest/guest/ ./uverbs/ ./cmd/verbs-pingpong/ ./cm/ ./internal/hwtest/ . ./examples/... ./rsocket/
# Packages whose guest a boots without ib_cm, iw_cm, rdma_cm and rdma_ucm,
# so that our CM engine owns the CM class over umad (the root package: the
# endpoint layer on the engine).
VMEXEC_NOCM_PKGS ?= ./internal/umad/ . ./rsocket/ ./examples/http/ ./cmd/rdma-mckey/
vmtest: deps
	$(GO) run ./internal/vmtest/cmd/vmtest prepare
	VMTEST=1 $(GO) test -count=1 -timeout 9m -v ./internal/vmtest/
	VMTEST=1 $(GO) test -count=1 -timeout 20m -v ./cmd/rdmacm-ping/
	VMTEST=1 VMTEST_ARM64=smoke $(GO) test -count=1 -timeout 5m -v -run '^TestMixedSmoke$$' ./cmd/rdmacm-ping/
	VMTEST=1 $(GO) test -count=1 -p 1 -timeout 15m -v ./cmd/rsocket-stream/ ./cmd/rsocket-copy/
	CGO_ENABLED=0 $(GO) build -o bin/vmexec ./internal/vmtest/cmd/vmexec
	$(GO) generate ./internal/hwtest/ .
	CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -p 1 -timeout 15m -v -exec "$(CURDIR)/bin/vmexec" $(VMEXEC_PKGS)
	cd examples/grpc && CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -timeout 10m -v -exec "$(CURDIR)/bin/vmexec" ./...
	CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -p 1 -timeout 8m -v -skip '$(VMTEST_LONG)' -exec "$(CURDIR)/bin/vmexec -nocm-a" $(VMEXEC_NOCM_PKGS)
	cd examples/grpc && CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -timeout 10m -v -exec "$(CURDIR)/bin/vmexec -nocm-a" ./...
	CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -p 1 -timeout 15m -v -run 'TestGuestEndurance|TestGuestCreateQPAllocs|TestGuestCreateQPInitAttrAsked|TestGuestNoStarve|TestGuestConnectRefused|TestGuestMulticastJoinLeave|TestGuestUDSIDR' -exec "$(CURDIR)/bin/vmexec -nocm-a" ./cm/

# An x86-64 guest and an arm64 guest (Debian's arm64 kernel under
# qemu-system-aarch64) on one wire: every interop pairing in both
# placements and both roles, on the kernel CM and with the arm64 side on
# our engine (make vmtest runs TestMixedSmoke only; docs/testing.md).
vmtest-arm64: deps
	$(GO) run ./internal/vmtest/cmd/vmtest prepare
	$(GO) run ./internal/vmtest/cmd/vmtest prepare -arch arm64
	VMTEST=1 VMTEST_ARM64=1 $(GO) test -count=1 -timeout 40m -v -run '^TestMixed' ./cmd/rdmacm-ping/

# Guest tests too long for CI. A peer that falls silent mid-handshake
# draws 16 REPs 4.096 s apart (the kernel's fixed CM timeouts) before
# REP_ERROR; the mckey twin on the kernel CM (make vmtest runs it on our
# engine, and the root package runs librdmacm's mckey on both).
VMTEST_LONG = ^TestGuestPeerSilentMidHandshake$$
vmtest-long: deps
	$(GO) run ./internal/vmtest/cmd/vmtest prepare
	CGO_ENABLED=0 $(GO) build -o bin/vmexec ./internal/vmtest/cmd/vmexec
	CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -p 1 -timeout 10m -v -run '$(VMTEST_LONG)' -exec "$(CURDIR)/bin/vmexec -nocm-a" ./internal/umad/
	CGO_ENABLED=0 VMTEST=1 $(GO) test -count=1 -timeout 10m -v -exec "$(CURDIR)/bin/vmexec" ./cmd/rdma-mckey/

# The rsocket twin against rstream in both roles, many rounds (make vmtest
# runs one): no client may hang where rstream's own pair completes.
STRESS_ROUNDS ?= 10
vmtest-stress: deps
	$(GO) run ./internal/vmtest/cmd/vmtest prepare
	STRESS_ROUNDS=$(STRESS_ROUNDS) VMTEST=1 $(GO) test -count=1 -timeout 60m -v -run TestStreamNeverHangs ./cmd/rsocket-stream/

# The uverbs and cm checks and both commands on this host's own RDMA device
# (RDMA_DEV=mlx5_0; default: the first device), as a Markdown report to
# paste into an issue (docs/hardware.md). HWTEST_FLAGS: e.g. -json FILE.
hwtest:
	RDMA_DEV=$(RDMA_DEV) $(GO) run ./internal/hwtest/cmd/hwtest $(HWTEST_FLAGS)

# Connection setup, side by side with librdmacm's cmtime in the same guests
# (BENCH_ROUNDS, BENCH_CONNS tune it; see docs/benchmarks.md).
bench-vm: deps
	VMTEST=1 $(GO) test -run '^$$' -bench 'CmtimeVM|CmtimeUserVM' -benchtime 1x -timeout 60m ./cmd/rdmacm-ping/
	VMTEST=1 $(GO) test -run '^$$' -bench 'RsocketStreamVM' -benchtime 1x -timeout 60m ./cmd/rsocket-stream/
	VMTEST=1 $(GO) test -run '^$$' -bench 'ExamplesVM' -benchtime 1x -timeout 60m ./examples/echo/

# The main demo: rdmacm-ping against rping both ways, then ECE against a C
# librdmacm peer, across two soft-RoCE guests.
demo: deps
	$(GO) run ./internal/vmtest/cmd/vmdemo

clean:
	$(GO) clean -testcache
