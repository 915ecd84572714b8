# pg_idgen — build / run / test / bench entry points (Debian bookworm, run as root).
#
#   make deps     install apt packages, cargo-pgrx 0.18.1, `cargo pgrx init` (idempotent)
#   make install  cargo pgrx install --release into the system PostgreSQL 15
#   make run      deps + install + start cluster `demo` (port $(DEMO_PORT)) with a demo table
#   make psql     psql into the demo cluster
#   make stop     stop the demo cluster
#   make test     all layers: core unit tests, #[pg_test], pg_regress, tests/integration/*.sh
#   make bench    bench/run.sh (BENCH_ARGS=--quick for a smoke run)
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

.PHONY: deps build install run psql stop test test-core test-pgrx test-regress test-integration bench clean

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

bench: install
	bench/run.sh $(BENCH_ARGS)

clean:
	-$(CLUSTER) stopall
	rm -rf .run $(RUN_DIR)
	cargo clean
