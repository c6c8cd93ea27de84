# Developer shortcuts. CI runs .ci/run, which runs the same test command.
GO ?= go

.PHONY: help test test-race fault bench lint fmt

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

test: ## run the tests (the README's test command)
	$(GO) test ./...

test-race: ## run the tests with the race detector
	$(GO) test -race ./...

fault: ## run the money-safety fault tests (tests named TestFault…; they also run in go test ./...)
	$(GO) test -count=1 -run 'Fault' ./...

# make bench: the stage benchmark and raw JetStream (cmd/oxybench), then oxy run
# as a child process against a separate oxy sandbox and with --sandbox, on
# BENCH_PAYLOADS payloads (BENCH_PAYLOADS=1000000 for a million); the figures
# also go as JSON to BENCH_JSON (default: a new temporary file). Binaries and
# scratch files live in a temporary folder, never in the repository.
BENCH_PAYLOADS ?= 100000
BENCH_JSON ?=

.PHONY: bench-go

bench: ## run oxy run at BENCH_PAYLOADS (default 100000) beside the stage benchmark; JSON to BENCH_JSON
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	json="$(BENCH_JSON)" && json=$${json:-$$(mktemp -t oxybench-XXXXXX.json)} && \
	$(GO) build -o "$$tmp/oxy" ./cmd/oxy && $(GO) build -o "$$tmp/oxybench" ./cmd/oxybench && \
	"$$tmp/oxybench" -n $(BENCH_PAYLOADS) --dir "$$tmp" --cli-oxy "$$tmp/oxy" --json "$$json" && \
	echo "figures written to $$json"

bench-go: ## run the Go benchmarks once each and print their tables
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint: ## go vet, gofmt and golangci-lint (as .ci/run does)
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	golangci-lint run ./...

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')
