# Crucible — the two commands for a fresh Debian machine are `make demo` and `make test`.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
export PATH := $(dir $(GO)):$(PATH)
# go-nvml's cgo preamble uses deprecated NVML declarations; keep builds quiet.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
BIN := bin/crucible
TEST_TIMEOUT ?= 20m

.PHONY: all setup build demo test test-load bench gpu-check clean

all: build

setup:
	bash scripts/setup.sh

build:
	$(GO) build -o $(BIN) ./cmd/crucible

demo: setup build
	./$(BIN) build --config examples/nightly.yaml

# go vet, then every test once (scripts/test.sh): the normal pass, the
# timing-sensitive packages under load, the race detector over the
# concurrent packages (scripts/test-load.sh; the lists: scripts/test-lists.sh).
test: setup
	$(GO) vet ./...
	GO=$(GO) TEST_TIMEOUT=$(TEST_TIMEOUT) bash scripts/test.sh

# Simulations, subprocesses, servers and timers while two busy loops hold
# both cores; -race over engine, dedup, ops/pack and cluster.
test-load: setup
	GO=$(GO) TEST_TIMEOUT=$(TEST_TIMEOUT) bash scripts/test-load.sh

# Benchmarks with side-by-side baselines; figures and their commands are in the README.
bench: setup
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./engine/ ./ops/compose/ ./ops/selection/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 20x ./kernels/
	$(GO) run ./bench/rtl -rounds 2          # pool vs a plain sequential iverilog+vvp loop (VerilogEval)
	$(GO) run ./bench/dedup                  # 20k x 2 KB docs, both LSH backends, recall/precision
	$(GO) run ./bench/dedup -cli -n 1000000  # the crucible dedup command on 1M x 2 KB docs (2.3 GB JSONL): wall, CPU, peak RSS
	$(GO) run ./bench/decontam               # decontam check: lexical docs/s per core; Yosys-rewritten VerilogEval: recall per method, behavioural cost, false flags
	$(GO) test -run '^$$' -bench DedupEndToEnd -cpu 1 -benchtime 3x ./cmd/crucible/   # crucible dedup end to end (JSONL in, Parquet out) vs the in-memory ekzhu/minhash-lsh peer, GOMAXPROCS=1
	$(GO) test -run '^$$' -bench IngestVsDuckDB -benchtime 1x ./cmd/crucible/   # crucible ingest of a 482 MB JSONL vs DuckDB's JSONL -> zstd Parquet, back to back
	$(GO) test -run '^$$' -bench 'Tokenize|PackLengths' -benchmem -cpu 1 ./bench/pack/   # vs tiktoken-go

gpu-check:
	bash scripts/gpu-check.sh

clean:
	rm -rf bin out

# Peak RSS of `crucible build` over 100k items made from the bundled seeds
# (ingest -> verify -> dedup -> compose; bench/build100k/README.md). Not part of test or bench.
.PHONY: bench-build100k
bench-build100k: build
	GO=$(GO) bash bench/build100k/run.sh $(BIN) /tmp/build100k
