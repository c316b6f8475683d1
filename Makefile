# The two commands a new user needs: `make demo` and `make test`. Both
# install what they need first (as root on Debian/Ubuntu).
export PATH := /usr/local/go/bin:$(PATH)
export GOTOOLCHAIN ?= auto

GO      ?= go
BIN     := bin/aicr
NOTIFY_BIN := bin/aicr-notify
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/aicr-dev/aicr/internal/buildinfo.Version=$(VERSION)
IMAGE   := localhost/aicr-agent
NODE_IMAGE := localhost/aicr-agent-node
# Podman reads this file: runc and no default ulimits (see the file).
export CONTAINERS_CONF ?= $(CURDIR)/configs/containers.conf

.PHONY: all build demo test lint deps clean soak bench bench-llm bench-sandbox bench-svn bench-intake bench-pipeline bench-e2e bench-notify bench-cost image image-node agent-clis package test-install bench-postgres

all: build

# deps: Subversion, PostgreSQL, gcc, Go and chromium (the web page's
# headless browser tests) on Debian/Ubuntu (scripts/install-deps.sh).
deps:
	@sh scripts/install-deps.sh

# bin/aicr-notify is the hook/trigger client alone (cmd/aicr-notify):
# install svn-hook and p4-trigger use it when it sits beside aicr.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/aicr
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(NOTIFY_BIN) ./cmd/aicr-notify

# dist/aicr_<version>_<arch>.deb and dist/aicr-<version>-1.<arch>.rpm from
# bin/: the binaries, the systemd unit, the example config and the
# maintainer scripts (packaging/; nfpm as a library, in a Go module of its
# own so it never reaches aicr's). An untagged build is versioned
# 0.0.0~git<commit time>.<hash>, so a newer build upgrades an older one.
# Older packages in dist/ are removed first, so ./dist/aicr_*.deb (the
# README's install line) names one file.
PKG_DATE = $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S 2>/dev/null)
package: build
	rm -f dist/aicr_*.deb dist/aicr-*.rpm
	cd packaging && $(GO) run . -root .. -bin ../bin -out ../dist -version '$(VERSION)' -date '$(PKG_DATE)'

# The README's install steps run literally, as root, on this machine in a
# throw-away mount and network namespace: without the package, with the
# .deb and with the .rpm (rpm -i standing in for dnf); each ends with a
# commit reviewed into the file channel (scripts/test-install.sh, which
# installs rpm first); then the packager's own tests (packaging/).
test-install: package
	@sh scripts/test-install.sh
	cd packaging && $(GO) vet ./... && $(GO) test -count=1 ./...

demo: deps build
	./$(BIN) demo

# -race needs cgo and a C compiler (deps installs gcc); the suite takes a
# few minutes on 2 cores with it.
# The sandbox tests run the images just built (internal/testimage): the
# tests get this build's buildinfo.Version, and a missing image fails them.
test: deps lint image image-node agent-clis
	@sh scripts/install-tsclient.sh
	AICR_REQUIRE_IMAGES=1 SOAK_SANDBOX=1 CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 25m \
		-ldflags '-X github.com/aicr-dev/aicr/internal/buildinfo.Version=$(VERSION)' ./...

# golangci-lint at a pinned version (.golangci.yml says which linters and
# why), built once with go install into a directory named after the
# version: a bump installs the new one, and later runs reuse the binary.
GOLANGCI_VERSION := v2.15.0
GOLANGCI := bin/golangci-lint-$(GOLANGCI_VERSION)/golangci-lint

$(GOLANGCI):
	GOBIN=$(CURDIR)/$(dir $(GOLANGCI)) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

lint: $(GOLANGCI)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GOLANGCI) run ./...

# The soak (im/internal/soak; README "Soak"): the binaries make build
# made, installed side by side, reviewing ~15 commits a minute from 4
# committers into 2 SVN repos and a p4 depot, 7 channels on two IM
# stand-ins, the llm agent on the model simulator, SIGKILL, SIGTERM and an
# IM outage meanwhile; fails on a stall (goroutine dump kept) or a broken
# invariant, and prints the table. SOAK_MINUTES=N (default 3, the short
# form make test runs too); SOAK_SANDBOX=1 reviews in Podman with the
# image make image builds.
soak: build $(if $(filter 1,$(SOAK_SANDBOX)),image)
	SOAK_BIN_DIR=$(CURDIR)/bin $(GO) test -count=1 -run '^TestSoak$$' -v \
		-ldflags '-X github.com/aicr-dev/aicr/internal/buildinfo.Version=$(VERSION)' \
		-timeout $$(( $${SOAK_MINUTES:-3} * 3 + 20 ))m ./im/internal/soak/

# aicr's own overhead per llm review against a builtin review, as a
# table of medians (scripts/bench-llm-overhead.sh; about a minute).
bench-llm:
	@sh scripts/bench-llm-overhead.sh

# What the Podman sandbox adds per run: a trivial pass and an llm review
# with "llm-only" egress, each against running natively; a table of
# medians and ratios (scripts/bench-sandbox.sh; about two minutes).
bench-sandbox:
	@sh scripts/bench-sandbox.sh

# What one review's prompt is billed per model API, prompt caching off
# and on, against the scripted model server (scripts/bench-cost.sh;
# seconds; the figures are exact token counts, not timings).
bench-cost:
	@sh scripts/bench-cost.sh

# Subversion fetch (issue 14, goals 4 and 5): dump vs one cat per file,
# medians, ratios and peak RSS (scripts/bench-svn.sh; about four minutes).
bench-svn:
	@sh scripts/bench-svn.sh

# Intake events/s at 1, 8 and 64 clients while 2 workers review, each 202
# fsynced, against the 5,000/s goal; idle daemon RSS against 20 MB
# (scripts/bench-intake.sh; about a minute).
bench-intake:
	@sh scripts/bench-intake.sh

# Reviews per minute and CPU per review for 500 queued 1-file SVN
# revisions, builtin agent, workers = 2, against a reference aicr built
# from an earlier commit (scripts/bench-pipeline.sh; a few minutes).
bench-pipeline:
	@sh scripts/bench-pipeline.sh

# Commit → file-channel message through the installed hook, median of 20,
# split into hook / queue / fetch / review / dispatch from the audit
# timestamps, against the same reference (scripts/bench-e2e.sh).
bench-e2e:
	@sh scripts/bench-e2e.sh

# The hook client's wall time per commit (aicr-notify and aicr notify,
# svn and p4, daemon up and down) against a minimal signed Go client, as
# medians and ratios (scripts/bench-notify.sh; about a minute).
bench-notify:
	@sh scripts/bench-notify.sh

# Several daemons on one PostgreSQL (issue 17): reviews/min with 1, 2 and
# 3 daemons, and intake events/s on PostgreSQL against SQLite as a ratio
# (scripts/bench-postgres.sh; a few minutes; needs Debian's postgresql).
bench-postgres:
	@sh scripts/bench-postgres.sh

# Every issue-14 benchmark and the sandbox and llm ones, one after
# another (about 20 minutes on 2 cores); each prints its table with the
# reference and the ratio measured in the same run.
bench: bench-notify bench-intake bench-pipeline bench-e2e bench-svn bench-sandbox bench-llm bench-cost

# The agent image, built locally FROM scratch (no registry is needed or
# used). Cached: skipped when the image for this version exists, except
# for a -dirty version, whose contents git describe cannot pin.
image:
	@sh scripts/install-deps.sh podman
	@case "$(VERSION)" in *-dirty) ;; *) \
		if podman image exists $(IMAGE):$(VERSION); then echo "$(IMAGE):$(VERSION) exists"; exit 0; fi;; \
	esac; \
	set -e; ctx=$$(mktemp -d); trap 'rm -rf "$$ctx"' EXIT; \
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o "$$ctx/aicr" ./cmd/aicr; \
	podman build -q -f scripts/Containerfile.agent -t $(IMAGE):$(VERSION) -t $(IMAGE):latest "$$ctx" >/dev/null; \
	echo "built $(IMAGE):$(VERSION)"

# The agent image with Node.js (for agent CLIs), built without a registry:
# mmdebstrap from this machine's apt mirror, then podman import
# (scripts/build-node-image.sh; NODE_SUITE=trixie by default, for
# Node >= 20). Skipped when the image for this version exists; the root
# file system tarball is cached per suite and package list, so a new
# version only re-imports.
image-node:
	@sh scripts/install-deps.sh podman mmdebstrap
	@case "$(VERSION)" in *-dirty) ;; *) \
		if podman image exists $(NODE_IMAGE):$(VERSION); then echo "$(NODE_IMAGE):$(VERSION) exists"; exit 0; fi;; \
	esac; \
	set -e; ctx=$$(mktemp -d); trap 'rm -rf "$$ctx"' EXIT; \
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o "$$ctx/aicr" ./cmd/aicr; \
	sh scripts/build-node-image.sh "$$ctx/aicr" $(NODE_IMAGE):$(VERSION) $(NODE_IMAGE):latest; \
	echo "built $(NODE_IMAGE):$(VERSION)"

# The agent CLIs (Claude Code, Codex, OpenCode, Kilo, Qwen Code, Gemini
# CLI) at their pinned versions, from npm, into the tests' cache
# (scripts/install-agent-clis.sh; kept between runs).
agent-clis: build
	@sh scripts/install-deps.sh npm
	@sh scripts/install-agent-clis.sh ./$(BIN)

clean:
	rm -rf bin dist
