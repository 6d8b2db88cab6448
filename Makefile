# stado — two commands matter: `make demo` (the main job) and `make test`.
# Both install what they need on a fresh Debian 12 machine run as root.

SHELL      := /bin/bash
GO         ?= go
BIN        := $(CURDIR)/bin/stado
N          ?= 3
STORE      ?= file
export GOFLAGS := -buildvcs=false

# The version and commit stamped into the binary (stado version reports both).
VERSION    ?= 0.1.0-dev
COMMIT     ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS    := -X github.com/wisent/stado/cli.Version=$(VERSION) -X github.com/wisent/stado/cli.Commit=$(COMMIT)

# make install: PREFIX and DESTDIR as usual (the unit goes where systemd
# looks for local units, $(PREFIX)/lib/systemd/system).
PREFIX     ?= /usr/local
DESTDIR    ?=
UNITDIR    ?= $(PREFIX)/lib/systemd/system
STAGE      := $(CURDIR)/build
DIST       := $(CURDIR)/dist
DEBARCH    ?= $(shell $(GO) env GOARCH)

.PHONY: all build deps test test-unit demo bench testbed-up testbed-down lint fuzz clean stage install package

all: build

# deps installs the Debian packages the testbed and the etcd tests use, once.
deps:
	@bash scripts/deps.sh

# stado is built static (no cgo): one binary runs on any Linux of its
# architecture, and the host process does not map libc (docs/install.md).
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/stado

# stage asks the built binary for its own man pages and completion scripts.
stage: build
	rm -rf $(STAGE) && mkdir -p $(STAGE)/man $(STAGE)/completions
	$(BIN) __man --dir $(STAGE)/man
	$(BIN) completion bash > $(STAGE)/completions/stado
	$(BIN) completion zsh > $(STAGE)/completions/_stado
	$(BIN) completion fish > $(STAGE)/completions/stado.fish

# install: the binary, the host unit (the catalog's stado product rendered
# for $(PREFIX)/bin/stado; not enabled), completions and man pages.
install: stage
	$(GO) run ./scripts/mkdeb unit --program $(PREFIX)/bin/stado > $(STAGE)/stado.service
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/stado
	install -D -m 0644 $(STAGE)/stado.service $(DESTDIR)$(UNITDIR)/stado.service
	install -D -m 0644 $(STAGE)/completions/stado $(DESTDIR)$(PREFIX)/share/bash-completion/completions/stado
	install -D -m 0644 $(STAGE)/completions/_stado $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_stado
	install -D -m 0644 $(STAGE)/completions/stado.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/stado.fish
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(STAGE)/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/

# package: a Debian package (/usr/bin/stado, its unit, completions, man
# pages) in dist/, built by scripts/mkdeb with nfpm; prints its path.
package: stage
	$(GO) run ./scripts/mkdeb deb --bin $(BIN) --man $(STAGE)/man --completions $(STAGE)/completions \
		--version $(VERSION) --commit $(COMMIT) --arch $(DEBARCH) --out $(DIST)

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
	rm -rf bin build dist
