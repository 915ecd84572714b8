# pg_idgen — build / run / test / bench entry points (Debian bookworm, run as root).
#
#   make deps     install apt packages, cargo-pgrx 0.18.1, `cargo pgrx init` (idempotent)
#   make install  cargo pgrx install --release into the system PostgreSQL 15
#   make run      deps + install + start cluster `demo` (port $(DEMO_PORT)) with a demo table
#   make psql     psql into the demo cluster
#   make stop     stop the demo cluster
#   make test     all layers: core unit tests, #[pg_test], pg_regress, tests/integration/*.sh
#   make bench    bench/run.sh (BENCH_ARGS=--quick for a smoke run)
#   make test-assert  #[pg_test] + pg_regress (+ CASSERT_IT integration scripts) against an
#                 assert-enabled PostgreSQL 15 built by scripts/cassert.sh (first run ~25 min)
#   make clean    stop every cluster under .run/, remove .run/ and target/
#
# Fresh machine: `make deps && make test` (that is what .ci/run does).

SHELL      := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export PATH := $(HOME)/.cargo/bin:$(PATH)

PG_CONFIG  ?= /usr/lib/postgresql/15/bin/pg_config
DEMO_PORT  ?= 28815
CLUSTER    := $(CURDIR)/scripts/cluster.sh
RUN_DIR     = $(shell scripts/cluster.sh rundir)
PGRX_PGDATA = $(RUN_DIR)/pgrx-test
BENCH_ARGS ?=

# the layers share the system install dir (pgrx test installs a debug build there): never in parallel
.NOTPARALLEL:

.PHONY: deps build install run psql stop test test-core test-pgrx test-regress test-integration test-assert bench clean

deps:
	scripts/deps.sh

build:
	cargo build --release

# Build a package tree, then copy it over the system install with cp --remove-destination:
# each old file is unlinked, never truncated in place, so a running server that has the old
# library mapped keeps working, and nothing is removed before the build has succeeded.
install:
	rm -rf target/pgrx-pkg
	cargo pgrx package --pg-config $(PG_CONFIG) --out-dir target/pgrx-pkg
	cp -r --remove-destination target/pgrx-pkg/. /

run: deps install
	$(CLUSTER) start demo $(DEMO_PORT) -c pg_idgen.worker_id=1
	$(CLUSTER) psql demo -c "SET client_min_messages = warning" \
	  -c "CREATE EXTENSION IF NOT EXISTS pg_idgen" \
	  -c "CREATE TABLE IF NOT EXISTS demo (id bigint PRIMARY KEY DEFAULT snowflake_next(), note text)" \
	  -c "INSERT INTO demo (note) VALUES ('first'), ('second'), ('third')"
	$(CLUSTER) psql demo -P pager=off \
	  -c "SELECT d.id, d.note, u.ts, u.worker_id, u.sequence FROM demo d CROSS JOIN LATERAL uid_decode(d.id) u ORDER BY d.id"
	@echo
	@echo "demo cluster is running (data: $(RUN_DIR)/demo/data, log: $(RUN_DIR)/demo/data/log/postgresql.log). Connect with:"
	@echo "  psql -h $(RUN_DIR)/demo -p $(DEMO_PORT) -U postgres postgres"
	@echo "  psql 'host=127.0.0.1 port=$(DEMO_PORT) user=postgres dbname=postgres'"
	@echo "  make psql          # same, via scripts/cluster.sh psql demo"
	@echo "Stop it with: make stop"

psql:
	$(CLUSTER) psql demo

stop:
	$(CLUSTER) stop demo

test: test-core test-pgrx test-regress test-integration
	@echo "make test: all layers passed"

test-core:
	@echo "=== [1/4] pure Rust: cargo test -p pg_idgen_core ==="
	cargo test -p pg_idgen_core

# pgrx creates <pgdata>/15-<pid> itself (as the runas user, via sudo) and puts the
# unix socket in <pgdata>; the base dir must exist and be writable by postgres.
test-pgrx:
	@echo "=== [2/4] #[pg_test]: cargo pgrx test pg15 --runas postgres ==="
	mkdir -p $(RUN_DIR) && chmod 755 $(RUN_DIR)
	rm -rf $(PGRX_PGDATA) && mkdir -p $(PGRX_PGDATA) && chown postgres:postgres $(PGRX_PGDATA)
	cargo pgrx test pg15 --runas postgres --pgdata $(PGRX_PGDATA)

test-regress: install
	@echo "=== [3/4] pg_regress: tests/regress/run.sh ==="
	tests/regress/run.sh

test-integration: install
	@echo "=== [4/4] integration: tests/integration/*.sh ==="
	scripts/run-integration.sh

# ---- assert-enabled server ------------------------------------------------------------------
# scripts/cassert.sh builds PostgreSQL 15 with --enable-cassert into CASSERT_PREFIX (cached).
# Everything here uses that install only: a private PGRX_HOME (~/.pgrx/config.toml untouched),
# a debug build of the extension installed into it, clusters under CASSERT_RUN_DIR, ports
# 29500-29600 (#[pg_test] picks a free ephemeral port itself). A failed Assert() aborts the
# backend with a `TRAP:` line in the server log, so the logs are scanned (scripts/cassert.sh scan:
# TRAP:, SIGSEGV/SIGBUS/SIGILL/SIGFPE, and SIGABRT not explained by a PANIC).
# CASSERT_IT: integration scripts to run as well (numbers, e.g. "40 71 72"; empty: none).
CASSERT_PREFIX    ?= /opt/pg15-cassert
CASSERT_PG_CONFIG := $(CASSERT_PREFIX)/bin/pg_config
CASSERT_RUN_DIR   ?= /tmp/cassert-run
CASSERT_PGRX_HOME ?= $(CASSERT_RUN_DIR)/pgrx-home
CASSERT_IT        ?= 40 45 71 72 73 74 75 76 77 78 79
CASSERT_ENV = PG_CONFIG=$(CASSERT_PG_CONFIG) PG_IDGEN_RUN_DIR=$(CASSERT_RUN_DIR) PGRX_HOME=$(CASSERT_PGRX_HOME)

# Every layer runs even when an earlier one failed; the target fails at the end if any did.
test-assert:
	@echo "=== assert-enabled PostgreSQL: scripts/cassert.sh ==="
	CASSERT_PREFIX=$(CASSERT_PREFIX) scripts/cassert.sh >/dev/null
	mkdir -p $(CASSERT_RUN_DIR) $(CASSERT_PGRX_HOME) && chmod 755 $(CASSERT_RUN_DIR)
	rm -f $(CASSERT_RUN_DIR)/failed
	grep -qsF '"$(CASSERT_PG_CONFIG)"' $(CASSERT_PGRX_HOME)/config.toml \
	  || PGRX_HOME=$(CASSERT_PGRX_HOME) cargo pgrx init --pg15 $(CASSERT_PG_CONFIG)
	@echo "=== assert: #[pg_test] ==="
	rm -rf $(CASSERT_RUN_DIR)/pgrx-test && mkdir -p $(CASSERT_RUN_DIR)/pgrx-test \
	  && chown postgres:postgres $(CASSERT_RUN_DIR)/pgrx-test
	$(CASSERT_ENV) cargo pgrx test pg15 --runas postgres --pgdata $(CASSERT_RUN_DIR)/pgrx-test \
	  2>&1 | tee $(CASSERT_RUN_DIR)/pgrx-test.out || echo pg_test >> $(CASSERT_RUN_DIR)/failed
	@echo "=== assert: pg_regress ==="
	$(CASSERT_ENV) cargo pgrx install --pg-config $(CASSERT_PG_CONFIG)
	$(CASSERT_ENV) REGRESS_PORT=29590 tests/regress/run.sh || echo pg_regress >> $(CASSERT_RUN_DIR)/failed
	rm -rf $(CASSERT_RUN_DIR)/it-logs
	@if [ -n "$(strip $(CASSERT_IT))" ]; then \
	  echo "=== assert: integration $(CASSERT_IT) ==="; \
	  $(CASSERT_ENV) IT_PORT_OFFSET=559 IT_KEEP_LOGS=$(CASSERT_RUN_DIR)/it-logs \
	    scripts/run-integration.sh $(foreach n,$(CASSERT_IT),$(wildcard tests/integration/$(n)_*.sh)) \
	  || echo integration >> $(CASSERT_RUN_DIR)/failed; fi
	@echo "=== assert: server logs ==="
	@scripts/cassert.sh scan $(CASSERT_RUN_DIR)/pgrx-test.out $(CASSERT_RUN_DIR)/regress/data/log \
	    $(CASSERT_RUN_DIR)/it-logs \
	  || echo "server logs: assertion failures or crashes (above)" >> $(CASSERT_RUN_DIR)/failed
	@if [ -s $(CASSERT_RUN_DIR)/failed ]; then \
	  echo "make test-assert: FAILED:" $$(cat $(CASSERT_RUN_DIR)/failed); exit 1; fi
	@echo "make test-assert: every layer passed, no TRAP: in any server log"

bench: install
	bench/run.sh $(BENCH_ARGS)

clean:
	-$(CLUSTER) stopall
	rm -rf .run $(RUN_DIR)
	cargo clean
