# The quota ledger. `make run` starts it on its embedded default; `make test`
# runs the test suite.

GO       ?= go
BIN      := bin/quota
PKGS     := ./...
DATA     ?= ./data
BENCHTIME ?= 1x

.PHONY: all build image run test test-short test-race oracle cluster chaos bench bench-cluster bench-webhook bench-scaling bench-history bench-ha fuzz lint fmt vet clean

all: build

# The version quota --version prints and serve logs: git describe's name of
# the commit, "-dirty" with uncommitted changes.
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo unknown)

build:
	$(GO) build -ldflags "-X main.buildVersion=$(VERSION)" -o $(BIN) ./cmd/quota

# install puts quota in $(go env GOPATH)/bin (or $GOBIN), for a shell
# whose PATH holds it; the walk-through runs ./bin/quota, which build makes.
install:
	$(GO) install -ldflags "-X main.buildVersion=$(VERSION)" ./cmd/quota
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH)/bin; echo "installed $$dir/quota"

# run serves the ledger in the foreground; in another shell, the clients
# are ./bin/quota (./bin/quota ingest FILE, ./bin/quota describe).
# rm -rf $(DATA) starts over with an empty ledger.
run: build
	@echo "quota ledger: data in $(DATA) (rm -rf $(DATA) to start over); clients: ./$(BIN) --help" >&2
	./$(BIN) serve --data $(DATA)

test: build
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 15m $(PKGS)
	$(MAKE) oracle

# The quota accounting compared with Kubernetes' own code (k8s.io/kubernetes
# v1.36.3, a module of its own under testdata/kubeoracle) on seeded random
# inputs. ORACLE_SEED and ORACLE_CASES widen a run.
oracle:
	cd testdata/kubeoracle && $(GO) vet ./... && $(GO) test -count=1 -timeout 10m ./...

# The tests that need a cluster: a real kube-apiserver with an embedded
# etcd, in process (k8s.io/kubernetes v1.36.3, a module of its own under
# testdata/kubecluster), and the quota binary built here.
cluster: build
	cd testdata/kubecluster && $(GO) vet ./... && QUOTA_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 15m ./...

# The fault tests of three `quota serve` members on loopback (build tag
# ha, cmd/quota/ha_chaos_e2e_test.go): the log's leader killed under load
# and an ingest, a rolling restart, a member's routes cut, a restart of
# all three, and seeded random kills (HA_SEED replays a run; HA_LOGS=DIR
# keeps the members' logs).
chaos: build
	$(GO) vet -tags ha ./cmd/quota
	$(GO) test -tags ha -count=1 -timeout 60m -run '^TestHA' -v ./cmd/quota

# The container image, built without a container engine or a base image
# (deploy/image): the static binary alone, as user 65532, in an OCI image
# layout at bin/image and a tarball for docker load at bin/image.tar.
image:
	rm -rf bin/image bin/image.tar
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.buildVersion=$(VERSION)" -o bin/quota-static ./cmd/quota
	cd deploy/image && $(GO) vet . && $(GO) test -count=1 . && \
	  $(GO) run . -binary ../../bin/quota-static -out ../../bin/image -tarball ../../bin/image.tar -arch $$($(GO) env GOARCH)

test-short:
	$(GO) test -count=1 -short $(PKGS)

# The suite under the race detector (it needs cgo and a C compiler). The
# end-to-end tests run the binary they build, without it.
test-race:
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

# Benchmarks print each figure next to its raw ceiling measured in the same
# run. BENCH_JSON=path also writes them as JSON. The harness reads
# BENCH_EVENTS (default 200000), BENCH_NAMESPACES, BENCH_LIVE, BENCH_SEED,
# BENCH_REQUESTS, BENCH_SYNC_INTERVAL and BENCH_DIR (see BENCHMARKS.md);
# then every package's own Go benchmarks run.
bench: build
	$(GO) test -run '^$$' -bench '^BenchmarkHarness$$' -benchtime 1x -timeout 6h ./cmd/internal/benchmark
	$(GO) test -run '^$$' -bench . -skip '^(BenchmarkHarness|BenchmarkHistory)$$' -benchmem -benchtime $(BENCHTIME) -timeout 60m $(PKGS)
	$(MAKE) bench-history
	$(MAKE) bench-cluster
	$(MAKE) bench-webhook

# quota export's initial sync of 20,000 pods (BENCH_PODS) from a real
# kube-apiserver, as a ratio to quota ingest of the same pods, and its
# peak RSS.
bench-cluster: build
	cd testdata/kubecluster && QUOTA_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench '^BenchmarkInitialSync$$' -benchtime 1x -timeout 60m ./export

# Pod creates through a real kube-apiserver at 1 and 32 clients, three
# ways: no quota enforcement (the ceiling), its ResourceQuota plugin, the
# ledger's webhook (testdata/kubecluster/install). BENCH_CREATES sets the
# creates per run; BENCH_SPLIT_CPUS=1 runs the ledger on half the CPUs and
# kube-apiserver on the other half, as on separate nodes.
bench-webhook: build
	cd testdata/kubecluster && QUOTA_BIN=$(CURDIR)/$(BIN) $(GO) test -run '^$$' -bench '^BenchmarkPodCreates$$' -benchtime 1x -timeout 30m ./install

# Three members against one: reserving admissions at 1 and 32 clients,
# and the longest gap in decided answers while the log's leader is killed
# and while one is restarted in lame-duck mode (BENCH_HA_ADMISSIONS sets
# the admissions per run).
bench-ha: build
	$(GO) test -tags ha -run '^$$' -bench '^BenchmarkHA$$' -benchtime 1x -timeout 60m ./cmd/quota

# The scaling table of BENCHMARKS.md: the harness once per size (each in
# its own process), printed as a Markdown table.
bench-scaling: build
	./cmd/internal/benchmark/scaling.sh

# A log bounded by a retention at 1x, 5x and 10x the history (days of the
# benchmark workload, BENCH_HISTORY_EVENTS each, default 50 000) ending in
# the same live state (BENCH_HISTORY_LIVE, default 5000 objects): the
# store's and the log's bytes, and a rebuild from the newest checkpoint,
# beside what the untrimmed history cost.
bench-history:
	$(GO) test -run '^$$' -bench '^BenchmarkHistory$$' -benchtime 1x -timeout 60m ./replay

# Each fuzz target for FUZZTIME (default 60s).
FUZZTIME ?= 60s
fuzz:
	@for pkg in $$($(GO) list $(PKGS)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# staticcheck, pinned, comes from the Go module proxy on first use.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
