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

bench: ## run the benchmarks once each and print their tables
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint: ## go vet, gofmt and golangci-lint (as .ci/run does)
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	golangci-lint run ./...

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')
