# Latchkey.
#   make run    the local API on 127.0.0.1:8080 over the embedded store
#   make check  the fast loop, needing only Go: gofmt, vet, go test ./...
#               (and the same in verifier/, a module of its own)
#               (the DynamoDB Local, moto and cfn-lint tests skip)
#   make test   the whole suite: unit, contract (bbolt and DynamoDB Local),
#               HTTP, Lambda event replay, Secrets Manager (moto), cfn-lint,
#               openapi.yaml's lint and a client generated from it,
#               the console in headless Chromium with axe-core
#   make sam-local  DynamoDB Local and moto prepared for sam local start-api
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go
# A count, not a duration: with a duration, Go's fuzz coordinator can end a
# run that found nothing with "context deadline exceeded" (golang/go#75804).
FUZZTIME ?= 30000x
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.6.1

.PHONY: run run-dynamodb sam-local check test test-go test-client test-browser fuzz readme-check lint-go lint lint-test lint-static lint-openapi bench bench-go load docs-dynamodb

# Built, then run, rather than `go run`: on Ctrl-C the go tool exits 1 even
# when the server shuts down cleanly, which would read as a failure.
run:
	$(GO) build -o bin/latchkey-local ./cmd/local
	bin/latchkey-local

# DynamoDB Local (in memory, free loopback port) and the local server on it.
run-dynamodb:
	scripts/run-dynamodb.sh

# DynamoDB Local and moto on the ports local/env.json names, with the table,
# the secrets and the bootstrap in place, for `sam local start-api` (the
# command is printed); Ctrl-C stops both. README: Deploying, sam local.
sam-local:
	scripts/sam-local.sh

# The fast loop: needs Go, git and make, nothing else. Tests that need
# DynamoDB Local, moto_server, cfn-lint or Node.js skip, each with a one-line reason
# (go test -v shows it), unless their endpoints are already set; make test
# runs them all, and is what CI runs.
# Where scripts/node-tools.sh installs the Node.js tools (a test points it
# elsewhere).
NODE_TOOLS ?= tools/node_modules
check: lint-go
	$(GO) test ./...
	cd verifier && $(GO) test ./...
	@skipped=(); \
	[[ -n "$${LATCHKEY_TEST_DYNAMODB_ENDPOINT:-}" ]] || skipped+=("DynamoDB Local (LATCHKEY_TEST_DYNAMODB_ENDPOINT unset)"); \
	[[ -n "$${LATCHKEY_TEST_DYNAMODB_JAR:-}" ]] || skipped+=("a DynamoDB Local of their own to freeze (LATCHKEY_TEST_DYNAMODB_JAR unset)"); \
	[[ -n "$${LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT:-}" ]] || skipped+=("moto_server (LATCHKEY_TEST_SECRETSMANAGER_ENDPOINT unset)"); \
	[[ -n "$${LATCHKEY_TEST_MOTO_ENDPOINT:-}" ]] || skipped+=("moto_server's EventBridge and SQS (LATCHKEY_TEST_MOTO_ENDPOINT unset)"); \
	command -v cfn-lint >/dev/null || skipped+=("cfn-lint (not on PATH)"); \
	[[ -n "$${LATCHKEY_TEST_CHROMIUM:-}" ]] || skipped+=("headless Chromium, the console's browser test (LATCHKEY_TEST_CHROMIUM unset; make test-browser sets it)"); \
	[[ -n "$${LATCHKEY_TEST_AXE:-}" ]] || skipped+=("axe-core, the console's accessibility check (LATCHKEY_TEST_AXE unset; make test-browser sets it)"); \
	{ command -v node && test -f $(NODE_TOOLS)/jose/package.json; } >/dev/null || skipped+=("Node.js and jose (scripts/node-tools.sh installs jose into tools/node_modules)"); \
	if (( $${#skipped[@]} )); then \
	  echo "make check: OK. Skipped, the tests that need:"; printf '  - %s\n' "$${skipped[@]}"; \
	  echo "go test -v ./... | grep -B1 -- '--- SKIP' says which and why; make test runs them all."; \
	fi

test: lint-test test-go test-client test-browser fuzz readme-check

# The verifier module's tests (they need nothing but Go); every Go test of
# the main module, with DynamoDB Local and moto_server started around it (and
# stopped afterwards, pass or fail), so that no store test skips; and beside
# it the HTTP suite again, unchanged, over DynamoDB Local instead of bbolt,
# its output kept in a file and printed after go test ./...'s (both must
# pass). Beside, not after: both mostly wait on DynamoDB Local and on the
# event feed's lag, and one run's waits overlap the other's work.
# -p 4 on 2 cores: the store packages mostly wait on DynamoDB Local, a
# process of its own, so four at once overlap that waiting (go test ./...
# took 311 s against 379 s with the default -p 2, 2026-11-28).
# -timeout 30m: go test's default of 10 minutes per package is a bound on
# the machine, not on the code (each test guards its own waits): beside
# four busy loops deploytest, doorstest and dynamostore each ran past it.
GO_TEST_TIMEOUT ?= 30m
test-go:
	cd verifier && $(GO) test -count=1 ./...
	scripts/dynamodb-local.sh scripts/moto.sh bash -c '\
	  out=$$(mktemp) && trap "rm -f $$out" EXIT; \
	  LATCHKEY_TEST_STORE=dynamodb $(GO) test -count=1 -timeout $(GO_TEST_TIMEOUT) ./pkg/httpapi/... ./pkg/console/... >"$$out" 2>&1 & http=$$!; \
	  $(GO) test -count=1 -timeout $(GO_TEST_TIMEOUT) -p 4 ./...; all=$$?; \
	  wait $$http; dynamodb=$$?; \
	  echo "HTTP suite over DynamoDB Local (LATCHKEY_TEST_STORE=dynamodb), run beside it:"; cat "$$out"; \
	  (( all == 0 && dynamodb == 0 ))'

# The console's browser test (pkg/console TestBrowser_Session): Debian's
# headless Chromium, installed by scripts/chromium.sh when missing, and
# axe-core from tools/, over the embedded store, then DynamoDB Local.
# Screenshots, the steps' timings and the axe results per page are written
# to .tmp/console-browser/<store>/ (not committed).
test-browser:
	scripts/node-tools.sh
	scripts/dynamodb-local.sh bash -c '\
	  export LATCHKEY_TEST_CHROMIUM="$$(scripts/chromium.sh)" LATCHKEY_TEST_AXE="$$PWD/tools/node_modules/axe-core/axe.min.js" && \
	  $(GO) test -count=1 -run "^TestBrowser_" -v ./pkg/console && \
	  LATCHKEY_TEST_STORE=dynamodb $(GO) test -count=1 -run "^TestBrowser_" -v ./pkg/console'

# The README's quick start, run as written against a fresh local server, and
# docs/protect-your-api.md's Node.js example (jose, @sd-jwt/jwt-status-list).
readme-check:
	scripts/node-tools.sh
	scripts/readme-check.sh

# A short run of the request-decoding fuzz target.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./pkg/httpapi

# Fast checks that need nothing beyond Go: formatting and vet.
lint-go:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	cd verifier && $(GO) vet ./...

# Everything lint-go does, plus cfn-lint, openapi.yaml's linters,
# staticcheck and a go.mod tidiness check.
lint: lint-go lint-template lint-openapi lint-static

# make test's lint: lint but cfn-lint's runs, which test-go makes with the
# same files and the same verdict (pkg/deploytest TestTemplate_CfnLint and
# TestTemplate_CfnLintTransformed), about 10 s each; here only whether
# cfn-lint is there, since those tests skip without it.
lint-test: lint-go lint-openapi lint-static
	@command -v cfn-lint >/dev/null 2>&1 || { echo "cfn-lint is missing; install it with: pip install cfn-lint" >&2; exit 1; }

lint-static:
	$(GO) run $(STATICCHECK) ./...
	$(GO) mod tidy -diff
	cd verifier && $(GO) run $(STATICCHECK) ./... && $(GO) mod tidy -diff

# openapi.yaml under Redocly's recommended rules and Spectral's spectral:oas,
# with 0 errors and 0 warnings each (both pinned in tools/package.json; they
# need no network once installed).
REDOCLY := REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true tools/node_modules/.bin/redocly
lint-openapi:
	scripts/node-tools.sh
	$(REDOCLY) lint --config tools/redocly.yaml openapi.yaml
	tools/node_modules/.bin/spectral lint --ruleset tools/spectral.yaml --fail-severity warn openapi.yaml

# A Go client generated from openapi.yaml by oapi-codegen (pinned in
# tools/clientgen/go.mod, a module of its own) must compile and type every
# list's items. It is generated into a temporary directory.
test-client:
	cd tools/clientgen && $(GO) test -count=1 ./...

# Go benchmarks (handlers over bbolt; stores over DynamoDB Local; the
# handlers again over DynamoDB Local), then the load script against the
# local server on each store.
bench: bench-go load

bench-go:
	cd verifier && $(GO) test -run "^$$" -bench . -benchmem -benchtime 2s ./...
	scripts/dynamodb-local.sh bash -c '\
	  $(GO) test -run "^$$" -bench . -benchmem -benchtime 2s ./pkg/... && \
	  echo "Handler benchmarks over DynamoDB Local (LATCHKEY_TEST_STORE=dynamodb):" && \
	  LATCHKEY_TEST_STORE=dynamodb $(GO) test -run "^$$" -bench . -benchmem -benchtime 2s ./pkg/httpapi'

# Rewrite the measured tables of docs/dynamodb.md from a fresh run of the
# budget tests against DynamoDB Local (make test fails while they differ).
docs-dynamodb:
	scripts/dynamodb-local.sh bash -c 'LATCHKEY_UPDATE_DOCS=1 $(GO) test -count=1 -run "^TestRequestBudgets$$|^TestHTTPRequestBudgets$$" ./pkg/tablestore'

load:
	scripts/load.sh
	scripts/dynamodb-local.sh bash -c 'DYNAMODB_ENDPOINT="$$LATCHKEY_TEST_DYNAMODB_ENDPOINT" scripts/load.sh'

# --- Lambda packaging ---
# `sam build` runs build-<LogicalId> (Metadata: BuildMethod: makefile) with
# ARTIFACTS_DIR set; each target writes that function's bootstrap for
# provided.al2023 on arm64. -trimpath and -buildvcs=false: no checkout path
# and no commit in the binary, so an unchanged function builds to the same
# bytes at any commit and a deploy publishes no new version of it.
LAMBDA_BUILD := CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -buildvcs=false -ldflags='-s -w'
ARTIFACTS_DIR ?= bin/lambda
FUNCTION ?= auth
EVENT ?= events/auth-verify.json

.PHONY: build-AuthFunction build-OrganizationsFunction build-UsersFunction build-AuthorizerFunction build-PublisherFunction build-VerifyFunction build-CanaryHookFunction build-ProbeFunction build-lambdas invoke lint-template bench-lambda

build-AuthFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/auth

build-OrganizationsFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/organizations

build-UsersFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/users

build-AuthorizerFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/authorizer

build-PublisherFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/publisher

build-VerifyFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/verify

build-CanaryHookFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/canaryhook

build-ProbeFunction:
	$(LAMBDA_BUILD) -o $(ARTIFACTS_DIR)/bootstrap ./functions/probe

# All eight, without sam, into bin/lambda/<function>/bootstrap, with sizes.
build-lambdas:
	for fn in auth organizations users authorizer publisher verify canaryhook probe; do $(LAMBDA_BUILD) -o bin/lambda/$$fn/bootstrap ./functions/$$fn; done
	@for fn in auth organizations users authorizer publisher verify canaryhook probe; do printf '%-14s %6.2f MiB\n' $$fn "$$(echo "$$(stat -c %s bin/lambda/$$fn/bootstrap) / 1048576" | bc -l)"; done

# One event through one function, like `sam local invoke -e`, without Docker:
#   make invoke FUNCTION=users EVENT=events/users-get.json
#   make invoke FUNCTION=verify EVENT=events/verify-url/valid.json
invoke:
	$(GO) run ./cmd/invoke -function $(FUNCTION) -event $(EVENT)

lint-template:
	@command -v cfn-lint >/dev/null 2>&1 || { echo "cfn-lint is missing; install it with: pip install cfn-lint" >&2; exit 1; }
	cfn-lint template.yaml examples/protected-api/template.yaml
	@# And what CloudFormation receives: the SAM transform applied offline.
	mkdir -p bin && scripts/sam-transform.py template.yaml > bin/template.transformed.json
	cfn-lint bin/template.transformed.json

# The built functions (host architecture) against a fake Lambda Runtime
# API, DynamoDB Local and moto_server: process start to first response of
# each; warm verify and token issuance (wall and CPU time, log bytes: the
# README's cost inputs); and a cold start's secret reads, one after another
# and at once, alternated three times.
bench-lambda:
	scripts/dynamodb-local.sh scripts/moto.sh bash -c '\
	  $(GO) test -count=1 -run "^$$" -bench ColdStart -benchtime 20x ./pkg/deploytest && \
	  $(GO) test -count=1 -run "^$$" -bench Warm -benchtime 500x ./pkg/deploytest && \
	  $(GO) test -count=3 -run "^$$" -bench Cache_ColdStart -benchtime 50x ./pkg/secrets'
