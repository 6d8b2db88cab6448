# stado — two commands matter: `make demo` (the main job) and `make test`.
# Both install what they need on a fresh Debian 12 machine run as root.

SHELL      := /bin/bash
GO         ?= go
BIN        := $(CURDIR)/bin/stado
N          ?= 3
STORE      ?= file
export GOFLAGS := -buildvcs=false

.PHONY: all build deps test test-unit demo bench testbed-up testbed-down lint fuzz clean

all: build

# deps installs the Debian packages the testbed and the etcd tests use, once.
deps:
	@bash scripts/deps.sh

build:
	$(GO) build -o $(BIN) ./cmd/stado

# test vets every package for linux and darwin (launchd hosts' code cannot
# rot unbuilt), then runs every test, journeys included; with STADO_TESTBED=required
# (CI) a journey that cannot run fails instead of skipping.
test: deps
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=darwin $(GO) build -o /dev/null ./cmd/stado
	$(GO) test -race -count=1 -timeout 25m ./...

test-unit:
	$(GO) test -count=1 -short ./...

demo: deps build
	@STORE=$(STORE) bash scripts/demo.sh

bench: deps build
	@bash scripts/bench.sh

testbed-up: deps build
	@STADO_BIN=$(BIN) bash tests/testbed/testbed.sh up $(N)

testbed-down:
	@bash tests/testbed/testbed.sh down

lint:
	gofmt -l . | (! grep .)
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.7.0 ./...

fuzz:
	$(GO) test ./registry -run '^$$' -fuzz FuzzParseDocument -fuzztime 60s
	$(GO) test ./registry -run '^$$' -fuzz FuzzParseBudget -fuzztime 60s
	$(GO) test ./beacon -run '^$$' -fuzz FuzzBeaconDecodingAndStaleness -fuzztime 60s
	$(GO) test ./beacon -run '^$$' -fuzz FuzzFreshnessIsJudgedWithoutOverflow -fuzztime 60s

clean:
	rm -rf bin
