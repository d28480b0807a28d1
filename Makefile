# Latchkey. `make run` starts the local API; `make test` runs the whole suite.
# Sections are filled in per area; keep targets short and self-installing.
SHELL := /bin/bash
GO ?= go

.PHONY: run test lint bench build

run:
	$(GO) run ./cmd/local

test:
	$(GO) test ./...
