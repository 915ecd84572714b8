#!/usr/bin/env bash
# scripts/test-matrix.sh — `make test`: the test layers on one or more PostgreSQL majors.
#
# Usage: scripts/test-matrix.sh MAJOR...          (make test; make test PG=17 runs one major)
#   One major:     every layer on it: docs, core, pgrx, regress, integration, clients.
#   Several:       docs and core once (they do not depend on PostgreSQL), then pgrx, regress, integration
#                  and clients on each major, then the pg_upgrade test of each pair of UPGRADE_PAIRS
#                  (default 18 -> 19; make test-all adds 15 -> 18) whose two majors are in the list.
#   Env: MATRIX_LAYERS="docs core rules pgrx sql regress integration clients monitoring ha partition multimaster citus extupdate package upgrade move"
#        restricts the layers;
#        PACKAGE_MAJORS="15 18" the majors whose package is built and installed;
#        CLIENT_MAJORS="15" the majors the client libraries run against ("all": every one; one
#          major given alone always runs them): what they test is the wire protocol and the
#          libraries' handling of bigint, the same on every major;
#        RELEASE_PACKAGE_MAJORS="15" those of them packaged from the release build (lto = "fat",
#          the one release build of make test); the others package the test build;
#        INTEGRATION_SHARE_MAJORS="15 19" the majors that run every integration script between
#          them: each the cross-version ones, the others dealt out in turn (scripts/run-integration.sh,
#          INTEGRATION_SCOPE=share);
#        INTEGRATION_MAJORS="15 19" the majors with an integration layer: the oldest and the newest
#          (the others, 16, 17 and 18 in make test, build and run pg_regress, which exercise their
#          version-specific code; make test-all runs every script on every major);
#        FULL_INTEGRATION_MAJORS="" the majors that run every integration script; "all" runs every
#          script everywhere (make test-all); one major given alone always runs every one;
#        MONITORING_MAJORS="17" the majors where a real postgres_exporter scrapes a cluster
#          (default: the one major given, else 17);
#        PARTITION_MAJOR=18 the major of the partition layer (one major: the one given);
#        MULTIMASTER_MAJORS="19" the majors of the multimaster layer (one major given alone: it, if 16+;
#          make test-all: "16 18 19");
#        CITUS_MAJORS="18" the majors of the citus layer (16+; one major given alone: it, if 16+;
#          make test-all: "16 17 18");
#        CITUS_PG_CONFIG=<pg_config of a PostgreSQL with Citus installed> (CITUS_PG_CONFIG_NN for
#          major NN): the installation the citus layer runs on, on the major it is; without one
#          the layer shows "citus: skipped (no CITUS_PG_CONFIG)" and does not count as passed or
#          failed;
#        PARTITION_SCENARIOS its scenarios (default the CI subset of tests/partition/run.sh;
#          "all": every one, as make test-all runs them);
#        MATRIX_KEEP_GOING=0 stops at the first failure (default: run everything, fail at the end);
#        UPGRADE_PAIRS="18-19" the pg_upgrade layer's pairs OLD-NEW (UPGRADE_FROM and
#          UPGRADE_TO set: that one pair; make test-all: 15 -> 18 and 18 -> 19);
#        MOVE_PAIRS="18-19" the move layer's pairs OLD-NEW (make test-all: 15, 16, 17 -> 18,
#          18 -> 19 and 19 -> 19, the last with and without REFRESH SEQUENCES);
#        UPDATE_MAJORS="15 19" the majors with an extupdate layer (make test-all: all; 19's
#          update runs its 0.6.0 database through pg_upgrade from 18);
#        PGRX_MAJORS="15 19" the majors with a pgrx layer (#[pg_test]) and the sql layer (the
#          install script against cargo pgrx schema): the oldest and the newest; 16, 17 and 18
#          build, install and run pg_regress (make test-all: all; one major given alone always
#          has them);
#        UPDATE_ALL_MAJORS="15" the majors whose extupdate layer updates from the oldest release
#          (0.1.0: its update runs every update script in turn) and the newest, "all" from every
#          release on every major (make test-all; one major given alone: from every release;
#          the releases: `make print-update-from`); the others update from the newest only;
#        PG_IDGEN_DEPS_SECS=N the time `make deps` took (.ci/run sets it), shown with the layers;
#        MATRIX_RELEASE_BUILD_AHEAD=0 builds a release package in its layer, not in the background
#          during the layers before it (release_build_start below).
#
# Layers (each a make target, so it can be run alone):
#   docs         relative links and #anchors of README.md, docs/; no import cycle in src/ but
#                shmem <-> wal  (make test-docs)
#   core         cargo test -p pg_idgen_core                    (make test-core)
#   rules        promtool check/test of prometheus/pg_idgen.rules.yml, once (make test-monitoring-rules)
#   pgrx         cargo pgrx test pgNN --runas postgres          (make test-pgrx PG=NN)
#   sql          the install script scripts/ext.sh renders (sqlgen/) against `cargo pgrx schema`'s:
#                the same statements                            (make test-sql PG=NN)
#   regress      tests/regress/run.sh on a dev-profile install  (make test-regress PG=NN)
#   integration  tests/integration/*/*.sh, same install           (make test-integration PG=NN)
#   clients      tests/clients/run.sh, same install: psycopg, asyncpg, SQLAlchemy, Django,
#                node-postgres, pgjdbc                          (make test-clients PG=NN)
#   monitoring   postgres_exporter + prometheus/queries.yaml scraping a cluster, same install
#                (tests/monitoring/exporter.sh; make test-monitoring PG=NN; MONITORING_MAJORS)
#   ha           tests/ha/run.sh, same install, PostgreSQL 15 only: a Patroni group (etcd, three
#                nodes) failing over under load, every value handed out recorded (make test-ha)
#   partition    tests/partition/run.sh, same install, on PARTITION_MAJOR: real network partitions
#                (network namespaces, nftables) and clock skew under load on both sides: the
#                Patroni leader cut off, a lease holder cut from its registry, a standby with a
#                clock behind promoted (make test-partition PG=NN)
#   multimaster  tests/multimaster/run.sh, same install, on MULTIMASTER_MAJORS (16+): three writable
#                nodes replicating to each other (origin = none) under load with every generator,
#                kill -9, a stop and catch-up, a node joining live and one leaving; worker ids
#                from pg_idgen.worker_id on 16-17, leased from a registry on 18+ (MM_WORKER_IDS
#                overrides) (make test-multimaster PG=NN)
#   citus        tests/citus/run.sh, same install, on CITUS_MAJORS (16+) when CITUS_PG_CONFIG gives a
#                PostgreSQL of that major with Citus installed (nothing here builds Citus; the test
#                runs a private copy of it with pg_idgen installed): a coordinator and two workers,
#                a third added under load, rebalance, shard move, kill -9, every insert form
#                through every node; no value twice, each worker id its node's Citus group
#                (make test-citus PG=NN CITUS_PG_CONFIG=...)
#   extupdate    ALTER EXTENSION UPDATE from every release (make test-extension-update PG=NN;
#                on majors not in UPDATE_ALL_MAJORS from the newest only)
#   package      release package: build, install, use, remove   (make test-package PG=NN; PACKAGE_MAJORS)
#   upgrade      tests/upgrade/pg_upgrade.sh OLD NEW for each pair of UPGRADE_PAIRS (make test-upgrade)
#   move         tests/integration/migrate/002_logical_move.sh OLD NEW for each pair of MOVE_PAIRS:
#                a move to a newer major by logical replication under load, the state carried at
#                the cut-over (make test-move)
# Builds are reused: one target/ for every major (dependencies compiled once; pgrx-pg-sys and
# pgrx per major), and the dev package tree of each major is rebuilt only when a source changed.
#
# Output: every layer's log goes to <rundir>/test-logs/pgNN-LAYER.log (the tail is printed on
# failure); at the end one summary line per major with counts and times, e.g.
#   PG 16.2   pg_test 10/10 ok (1m58s with its build)  pg_regress 6/6 ok (0m07s)  integration 15/15 scripts (348 checks), SKIP: 1 part(s), see the log ok (5m45s)  ...
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
[ $# -gt 0 ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
MAJORS=("$@")
LAYERS=${MATRIX_LAYERS:-docs core rules pgrx sql regress integration clients monitoring ha partition multimaster citus extupdate package upgrade move}
PACKAGE_MAJORS=${PACKAGE_MAJORS:-15 18}
FULL_INTEGRATION_MAJORS=${FULL_INTEGRATION_MAJORS:-}
INTEGRATION_SHARE_MAJORS=${INTEGRATION_SHARE_MAJORS:-15 19}
INTEGRATION_MAJORS=${INTEGRATION_MAJORS:-15 19}
# all_given LIST: every major of LIST is in this run
all_given() { local v; for v in $1; do [[ " ${MAJORS[*]} " == *" $v "* ]] || return 1; done; }
# ends_given: the oldest and the newest major of this run (MAJORS in ascending order)
ends_given() { echo "${MAJORS[0]} ${MAJORS[${#MAJORS[@]} - 1]}"; }
# the share needs every major of it in this run; otherwise the oldest and the newest given run
# every script
if ! all_given "$INTEGRATION_SHARE_MAJORS"; then
    INTEGRATION_SHARE_MAJORS=
    [ "$FULL_INTEGRATION_MAJORS" = all ] || FULL_INTEGRATION_MAJORS+=" $(ends_given)"
fi
[ ${#MAJORS[@]} -gt 1 ] || FULL_INTEGRATION_MAJORS=all
RELEASE_PACKAGE_MAJORS=${RELEASE_PACKAGE_MAJORS:-15}
CLIENT_MAJORS=${CLIENT_MAJORS:-15}
# one major: the exporter test runs on it; several: on 17 unless told
if [ ${#MAJORS[@]} -eq 1 ]; then MONITORING_MAJORS=${MONITORING_MAJORS:-${MAJORS[0]}}; else MONITORING_MAJORS=${MONITORING_MAJORS:-17}; fi
if [ ${#MAJORS[@]} -eq 1 ]; then PARTITION_MAJOR=${PARTITION_MAJOR:-${MAJORS[0]}}; else PARTITION_MAJOR=${PARTITION_MAJOR:-18}; fi
if [ ${#MAJORS[@]} -eq 1 ]; then MULTIMASTER_MAJORS=${MULTIMASTER_MAJORS:-${MAJORS[0]}}; else MULTIMASTER_MAJORS=${MULTIMASTER_MAJORS:-19}; fi
if [ ${#MAJORS[@]} -eq 1 ]; then CITUS_MAJORS=${CITUS_MAJORS:-${MAJORS[0]}}; else CITUS_MAJORS=${CITUS_MAJORS:-18}; fi
KEEP_GOING=${MATRIX_KEEP_GOING:-1}
# the ha layer's lagging kills in a row per phase (tests/ha/run.sh alone and make test-all: 3)
HA_KILLS=${HA_KILLS:-2}
# the majors that update from every release; the others from the newest one only
UPDATE_ALL_MAJORS=${UPDATE_ALL_MAJORS:-15}
# the majors with an extupdate layer ("all": every one; one major given alone always has it)
UPDATE_MAJORS=${UPDATE_MAJORS:-15 19}
[ ${#MAJORS[@]} -gt 1 ] || UPDATE_MAJORS=all
PGRX_MAJORS=${PGRX_MAJORS:-15 19}
[ ${#MAJORS[@]} -gt 1 ] || PGRX_MAJORS=all
pgrx_major() { [[ " $PGRX_MAJORS " == *" $1 "* || $PGRX_MAJORS == all ]]; }
[ "$UPDATE_ALL_MAJORS" = all ] || all_given "$UPDATE_ALL_MAJORS" || UPDATE_ALL_MAJORS+=" $(ends_given)"
[ ${#MAJORS[@]} -gt 1 ] || UPDATE_ALL_MAJORS=all
# the releases the update tests start from (tests/upgrade/extension_update.sh: 0.1.0,
# extension_update_0NM.sh: 0.N.M), oldest first; the newest is the one every major updates from
UPDATE_RELEASES=$(make --no-print-directory -s print-update-from)
UPDATE_NEWEST=${UPDATE_RELEASES##* }
if [ -n "${UPGRADE_FROM:-}" ] && [ -n "${UPGRADE_TO:-}" ]; then UPGRADE_PAIRS=$UPGRADE_FROM-$UPGRADE_TO; fi
UPGRADE_PAIRS=${UPGRADE_PAIRS:-18-19}
MOVE_PAIRS=${MOVE_PAIRS:-18-19}
RUN_DIR=$(scripts/cluster.sh rundir)
LOGS=$RUN_DIR/test-logs
mkdir -p "$LOGS" && chmod 755 "$RUN_DIR" "$LOGS"
T0=$SECONDS

has_layer() { [[ " $LAYERS " == *" $1 "* ]]; }
fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

declare -A SUMMARY VERSION LAYER_SECS
FAILED=()
FAILED_LOGS=()   # the logs of the failed layers, for the causes at the very end of the output
LAYER_ORDER=()   # layer names in the order they first ran
TIMES_TSV=$LOGS/times.tsv   # "major<TAB>layer<TAB>seconds", one line per layer run (read by .ci/run)
: >"$TIMES_TSV"

# run_layer MAJOR NAME COMMAND... : logs, times; sets LAST_RC, LAST_SECS, LAST_LOG
run_layer() {
    local major=$1 name=$2; shift 2
    LAST_LOG=$LOGS/pg$major-$name.log
    local t=$SECONDS
    echo "=== PostgreSQL $major: $name ($*) -> $LAST_LOG"
    "$@" >"$LAST_LOG" 2>&1
    LAST_RC=$?
    LAST_SECS=$((SECONDS - t))
    LAYER_SECS[$major,$name]=$LAST_SECS
    [[ " ${LAYER_ORDER[*]} " == *" $name "* ]] || LAYER_ORDER+=("$name")
    printf '%s\t%s\t%s\n' "$major" "$name" "$LAST_SECS" >>"$TIMES_TSV"
    if [ $LAST_RC -ne 0 ]; then
        echo "--- FAILED after $(fmt $LAST_SECS): last 60 lines of $LAST_LOG"
        tail -n 60 "$LAST_LOG" | sed 's/^/    /'
        FAILED+=("pg$major:$name")
        FAILED_LOGS+=("$LAST_LOG")
        [ "$KEEP_GOING" = 1 ] || { summary; exit 1; }
    else
        echo "--- ok ($(fmt $LAST_SECS))"
    fi
}

# counts from the logs
pgrx_counts() {   # "passed/total" of the #[pg_test] harness (the lib test binary: the largest total)
    awk '/^test result:/ { p = $4; f = $6; sub(";", "", p); sub(";", "", f); if (p + f > best) { best = p + f; bp = p } }
         END { if (best) printf "%d/%d", bp, best; else printf "?" }' "$1"
}
regress_counts() {  # pg_regress 15 prints "All 5 tests passed." / " 1 of 5 tests failed."; 16+ print TAP ("# All 5 tests passed.", "# 1 of 5 tests failed.")
    local all; all=$(grep -Eo 'All [0-9]+ tests passed' "$1" | grep -Eo '[0-9]+' | tail -1)
    if [ -n "$all" ]; then echo "$all/$all"; return; fi
    local f t; read -r f t < <(grep -Eo '[0-9]+ of [0-9]+ tests failed' "$1" | tail -1 | awk '{ print $1, $3 }')
    if [ -n "${t:-}" ]; then echo "$((t - f))/$t"; else echo "?"; fi
}
integration_counts() {   # scripts ok / scripts run, checks passed, and SKIP lines
    local ok n checks skips
    ok=$(grep -Ec '^--- tests/integration/.*: ok' "$1")
    n=$(grep -Ec '^--- tests/integration/.*: (ok|FAILED)' "$1")
    checks=$(grep -Eo 'PASS: all [0-9]+ checks passed' "$1" | awk '{ s += $3 } END { print s + 0 }')
    skips=$(grep -Ec '\] SKIP:' "$1")
    printf "%d/%d scripts (%d checks)%s" "$ok" "$n" "$checks" "$([ "$skips" -gt 0 ] && echo ", SKIP: $skips part(s), see the log")"
}
clients_counts() {   # clients passed / run, checks, ids compared, and SKIP lines
    local line; line=$(grep -E '^\[clients\] (PASS|FAIL):' "$1" | tail -1)
    local ok n; ok=$(grep -Ec '^\[clients\] [a-z0-9-]+: +ok:' "$1"); n=$(grep -Ec '^\[clients\] [a-z0-9-]+: +(ok|FAILED)' "$1")
    printf "%d/%d clients" "$ok" "$n"
    [[ $line =~ all\ ([0-9]+)\ checks ]] && printf " (%s checks" "${BASH_REMATCH[1]}"
    [[ $line =~ ([0-9]+)\ ids\ compared ]] && printf ", %s ids compared)" "${BASH_REMATCH[1]}"
    [[ $line =~ SKIP:\ (.*)$ ]] && printf ", SKIP: %s" "${BASH_REMATCH[1]}"
    return 0
}
ha_counts() {   # checks, values recorded and faults of tests/ha/run.sh
    local line; line=$(grep -E '^\[ha\] (PASS|FAIL):' "$1" | tail -1)
    local v f; v=$(grep -Eo '[0-9]+ values recorded' "$1" | awk '{ s += $1 } END { print s + 0 }')
    f=$(grep -Ec '^\[ha\] (kill|switchover): ' "$1")
    if [[ $line =~ all\ ([0-9]+)\ checks ]]; then printf "%s checks" "${BASH_REMATCH[1]}"
    elif [[ $line =~ ([0-9]+)\ of\ ([0-9]+)\ checks\ failed ]]; then printf "%s/%s checks" "$((BASH_REMATCH[2] - BASH_REMATCH[1]))" "${BASH_REMATCH[2]}"
    else printf "? checks"; fi
    printf ", %d faults, %d values recorded" "$f" "$v"
}
partition_counts() {   # scenarios run and checks of tests/partition/run.sh
    local line n; line=$(grep -E '^\[partition/run\] (PASS|FAIL):' "$1" | tail -1)
    n=$(grep -Ec '^\[partition/run\] [a-z-]+: [0-9]+ s$' "$1")
    printf "%d scenarios, " "$n"
    if [[ $line =~ all\ ([0-9]+)\ checks ]]; then printf "%s checks" "${BASH_REMATCH[1]}"
    elif [[ $line =~ ([0-9]+)\ of\ ([0-9]+)\ checks\ failed ]]; then printf "%s/%s checks" "$((BASH_REMATCH[2] - BASH_REMATCH[1]))" "${BASH_REMATCH[2]}"
    elif [[ $line =~ SKIP ]]; then printf "SKIP (not root)"
    else printf "? checks"; fi
}
multimaster_counts() {   # checks and values recorded of tests/multimaster/run.sh
    local line v; line=$(grep -E '^\[multimaster/run\] (PASS|FAIL):' "$1" | tail -1)
    v=$(grep -Eo 'figures: [0-9]+ values recorded' "$1" | grep -Eo '[0-9]+' | tail -1)
    if [[ $line =~ all\ ([0-9]+)\ checks ]]; then printf "%s checks" "${BASH_REMATCH[1]}"
    elif [[ $line =~ ([0-9]+)\ of\ ([0-9]+)\ checks\ failed ]]; then printf "%s/%s checks" "$((BASH_REMATCH[2] - BASH_REMATCH[1]))" "${BASH_REMATCH[2]}"
    else printf "? checks"; fi
    printf ", %s values recorded" "${v:-?}"
    v=$(grep -Eo 'figures: worker ids: [a-z]+' "$1" | tail -1)
    [ -z "$v" ] || printf ", worker ids %s" "${v##* }"
}
citus_counts() {   # checks and rows of tests/citus/run.sh
    local line r; line=$(grep -E '^\[citus/run\] (PASS|FAIL):' "$1" | tail -1)
    r=$(grep -Eo 'figures: [0-9]+ rows' "$1" | grep -Eo '[0-9]+' | tail -1)
    if [[ $line =~ all\ ([0-9]+)\ checks ]]; then printf "%s checks" "${BASH_REMATCH[1]}"
    elif [[ $line =~ ([0-9]+)\ of\ ([0-9]+)\ checks\ failed ]]; then printf "%s/%s checks" "$((BASH_REMATCH[2] - BASH_REMATCH[1]))" "${BASH_REMATCH[2]}"
    elif [[ $line =~ SKIP ]]; then printf "SKIP"
    else printf "? checks"; fi
    printf ", %s rows under load" "${r:-?}"
}
checks_count() {  # "N checks" of the lib.bash test scripts of one log (their sum)
    local n; n=$(grep -Eo 'PASS: all [0-9]+ checks passed' "$1" | grep -Eo '[0-9]+' | awk '{ s += $1 } END { if (NR) print s }')
    echo "${n:-?} checks"
}
status() { [ "$1" -eq 0 ] && echo ok || echo FAILED; }

# times_table: the time of every layer per major (columns: "any" for the layers run once, then
# each major, then the pg_upgrade pair), and of `make deps` when PG_IDGEN_DEPS_SECS is set
times_table() {
    local cols=() c l line v
    local pairs; pairs=$(printf '%s\n' $UPGRADE_PAIRS $MOVE_PAIRS | awk '!seen[$0]++')
    for c in any "${MAJORS[@]}" $pairs; do
        for l in "${LAYER_ORDER[@]}"; do [ -n "${LAYER_SECS[$c,$l]:-}" ] && { cols+=("$c"); break; }; done
    done
    [ ${#cols[@]} -gt 0 ] || return 0
    echo "---- time per layer ----"
    line=$(printf '%-12s' layer); for c in "${cols[@]}"; do line+=$(printf '%10s' "$c"); done; echo "$line"
    [ -z "${PG_IDGEN_DEPS_SECS:-}" ] || printf '%-12s%10s\n' "make deps" "$(fmt "$PG_IDGEN_DEPS_SECS")"
    for l in "${LAYER_ORDER[@]}"; do
        line=$(printf '%-12s' "$l")
        for c in "${cols[@]}"; do v=${LAYER_SECS[$c,$l]:-}; line+=$(printf '%10s' "${v:+$(fmt "$v")}"); done
        echo "$line"
    done
    line=$(printf '%-12s' total)
    for c in "${cols[@]}"; do
        v=0; for l in "${LAYER_ORDER[@]}"; do v=$((v + ${LAYER_SECS[$c,$l]:-0})); done
        line+=$(printf '%10s' "$(fmt $v)")
    done
    echo "$line"
}

# The release build of a release package, in the background at the lowest CPU priority (nice 19)
# while the layers that mostly wait for servers run (regress, integration, clients, ha, extupdate):
# it takes the CPU they leave idle, and the package layer then finds the package tree built. It
# starts after the install layer (the last cargo build of the major's test layers) and the package
# layer waits for it, before the next major's pgrx layer builds again; a run that ends or is
# interrupted before that stops it. Its log: <rundir>/test-logs/pgNN-release-build.log; a failure
# shows again in the package layer, which builds what is missing.
RELEASE_BUILD_PID=
release_build_start() {
    local m=$1
    has_layer package && [[ " $PACKAGE_MAJORS " == *" $m "* ]] && [[ " $RELEASE_PACKAGE_MAJORS " == *" $m "* ]] || return 0
    [ "${MATRIX_RELEASE_BUILD_AHEAD:-1}" = 1 ] || return 0
    echo "=== PostgreSQL $m: the release build of the package, in the background at nice 19 -> $LOGS/pg$m-release-build.log"
    # a session of its own (setsid), so that release_build_stop stops make, cargo and every rustc
    setsid nice -n 19 make --no-print-directory package-tree PG="$m" PACKAGE_PROFILE=release \
        >"$LOGS/pg$m-release-build.log" 2>&1 </dev/null &
    RELEASE_BUILD_PID=$!
}
release_build_stop() {   # a run that ends (or is interrupted) before its package layer
    [ -n "$RELEASE_BUILD_PID" ] || return 0
    kill -TERM -- "-$RELEASE_BUILD_PID" 2>/dev/null || true
    wait "$RELEASE_BUILD_PID" 2>/dev/null || true
    echo "--- the background release build stopped (the run ended before its package layer)"
    RELEASE_BUILD_PID=
}
trap release_build_stop EXIT
trap 'exit 130' INT TERM
release_build_wait() {
    [ -n "$RELEASE_BUILD_PID" ] || return 0
    local t=$SECONDS rc=0
    wait "$RELEASE_BUILD_PID" || rc=$?
    echo "--- the background release build: exit $rc, waited $(fmt $((SECONDS - t))) for it"
    RELEASE_BUILD_PID=
}

summary() {
    release_build_stop   # a run that stopped before its package layer
    echo
    echo "==================== make test: summary ($(fmt $((SECONDS - T0))) in all) ===================="
    local m
    for m in "${MAJORS[@]}"; do
        printf 'PG %-6s %s\n' "${VERSION[$m]:-$m}" "${SUMMARY[$m]:-not run}"
    done
    [ -z "${SUMMARY[upgrade]:-}" ] || echo "${SUMMARY[upgrade]}"
    [ -z "${SUMMARY[move]:-}" ] || echo "${SUMMARY[move]}"
    [ -z "${SUMMARY[docs]:-}" ] || echo "${SUMMARY[docs]}"
    [ -z "${SUMMARY[core]:-}" ] || echo "${SUMMARY[core]}"
    [ -z "${SUMMARY[rules]:-}" ] || echo "${SUMMARY[rules]}"
    times_table
    if [ ${#FAILED[@]} -gt 0 ]; then
        # the failed checks last, where a CI that keeps only the end of the output still shows them
        local l
        for l in "${FAILED_LOGS[@]}"; do
            echo "--- failed checks in $l:"
            grep -E 'FAIL|timeout after|not ok|panicked|error\[' "$l" | grep -v ': ok' | tail -n 12 | cut -c1-300 | sed 's/^/    /' || true
        done
        echo "FAILED: ${FAILED[*]}"
    else
        echo "all passed"
    fi
}

# ---- docs: once (no build, no server)
if has_layer docs; then
    run_layer any docs make --no-print-directory test-docs
    SUMMARY[docs]="docs: $(grep -Eo '(all [0-9]+|[0-9]+ of [0-9]+) relative links' "$LAST_LOG" | tail -1), $(grep -Eo 'no import cycle in [0-9]+ files|[0-9]+ import cycle\(s\)' "$LAST_LOG" | tail -1) $(status $LAST_RC) ($(fmt $LAST_SECS))"
fi

# ---- core: once
if has_layer core; then
    run_layer any core make --no-print-directory test-core
    n=$(awk '/^test result:/ { p += $4 } END { print p + 0 }' "$LAST_LOG")
    SUMMARY[core]="core (pure Rust, any major): $n tests $(status $LAST_RC) ($(fmt $LAST_SECS))"
fi

# ---- rules: once (promtool does not depend on PostgreSQL)
if has_layer rules; then
    run_layer any rules make --no-print-directory test-monitoring-rules
    SUMMARY[rules]="alert rules (promtool check + test, any major): $(status $LAST_RC) ($(fmt $LAST_SECS))"
fi

for m in "${MAJORS[@]}"; do
    tm=$SECONDS line="" build=0
    cfg=$(PGENV_NO_RESOLVE=1 bash -c ". scripts/pgenv.bash && pg_config_for $m") || cfg=
    if [ -z "$cfg" ] || [ ! -x "$cfg" ]; then
        SUMMARY[$m]="PostgreSQL $m is not installed (${cfg:-unsupported}; make deps)"; FAILED+=("pg$m:missing"); continue
    fi
    VERSION[$m]=$("$cfg" --version | sed -E 's/^PostgreSQL ([0-9][0-9a-z.]*).*/\1/')   # 16.2, 19rc1
    if has_layer pgrx && pgrx_major "$m"; then
        run_layer "$m" pgrx make --no-print-directory test-pgrx PG="$m"
        line+="pg_test $(pgrx_counts "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS) with its build)  "
    fi
    monitoring=0
    if has_layer monitoring && [[ " $MONITORING_MAJORS " == *" $m "* ]]; then monitoring=1; fi
    partition=0
    if has_layer partition && [ "$m" = "$PARTITION_MAJOR" ]; then partition=1; fi
    multimaster=0   # origin = none: PostgreSQL 16+
    if has_layer multimaster && [[ " $MULTIMASTER_MAJORS " == *" $m "* ]] && [ "$m" -ge 16 ]; then multimaster=1; fi
    citus=0 citus_cfg= citus_skip=   # Citus 14: PostgreSQL 16+, an installation the user gives
    if has_layer citus && [[ " $CITUS_MAJORS " == *" $m "* ]] && [ "$m" -ge 16 ]; then
        v="CITUS_PG_CONFIG_$m"; citus_cfg=${!v:-${CITUS_PG_CONFIG:-}}
        if [ -z "$citus_cfg" ]; then
            citus_skip="citus: skipped (no CITUS_PG_CONFIG)"
        elif [ "$("$citus_cfg" --version 2>/dev/null | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')" != "$m" ]; then
            citus_skip="citus: skipped (CITUS_PG_CONFIG=$citus_cfg is not PostgreSQL $m)"
        else
            citus=1
        fi
    fi
    if has_layer sql || has_layer regress || has_layer integration || has_layer clients || [ $monitoring = 1 ] || [ $partition = 1 ] || [ $multimaster = 1 ] || [ $citus = 1 ] || { has_layer ha && [ "$m" = 15 ]; }; then
        # after the pgrx layer, which installs its own test build into the same PostgreSQL
        run_layer "$m" install make --no-print-directory install-test PG="$m"
        build=$LAST_SECS
        [ $LAST_RC -ne 0 ] || release_build_start "$m"
        if [ $LAST_RC -ne 0 ]; then
            line+="install FAILED  "
        else
            if has_layer sql && pgrx_major "$m"; then
                run_layer "$m" sql make --no-print-directory test-sql PG="$m"
                line+="install script = cargo pgrx schema's: $(grep -Eo 'the same [0-9]+ blocks' "$LAST_LOG" | grep -Eo '[0-9]+' || echo ?) blocks $(status $LAST_RC) ($(fmt $LAST_SECS))  "
            fi
            if has_layer regress; then
                run_layer "$m" regress env PG="$m" PG_CONFIG= tests/regress/run.sh
                line+="pg_regress $(regress_counts "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS))  "
            fi
            if has_layer integration; then
                scope=cross-version
                [[ " $INTEGRATION_SHARE_MAJORS " == *" $m "* ]] && scope=share
                [[ " $FULL_INTEGRATION_MAJORS " == *" $m "* || $FULL_INTEGRATION_MAJORS == all ]] && scope=all
                [ $scope != cross-version ] || [[ " $INTEGRATION_MAJORS " == *" $m "* ]] || scope=none
            fi
            if has_layer integration && [ $scope != none ]; then
                run_layer "$m" integration env PG="$m" PG_CONFIG= INTEGRATION_SCOPE=$scope INTEGRATION_SHARE="$INTEGRATION_SHARE_MAJORS" scripts/run-integration.sh
                line+="integration$([ $scope = all ] || echo " ($scope)") $(integration_counts "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS))  "
            fi
            if has_layer clients && { [ ${#MAJORS[@]} = 1 ] || [[ " $CLIENT_MAJORS " == *" $m "* || $CLIENT_MAJORS == all ]]; }; then
                run_layer "$m" clients env PG="$m" PG_CONFIG= tests/clients/run.sh
                line+="clients $(clients_counts "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS))  "
            fi
            if [ $monitoring = 1 ]; then
                run_layer "$m" monitoring env PG="$m" PG_CONFIG= scripts/run-integration.sh tests/monitoring/exporter.sh
                line+="postgres_exporter $(checks_count "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS))  "
            fi
            if has_layer ha && [ "$m" = 15 ]; then
                run_layer "$m" ha env PG="$m" PG_CONFIG= HA_KILLS="$HA_KILLS" tests/ha/run.sh
                line+="ha (Patroni) $(ha_counts "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS))  "
            fi
            if [ $partition = 1 ]; then
                run_layer "$m" partition env PG="$m" PG_CONFIG= PARTITION_SCENARIOS="${PARTITION_SCENARIOS:-}" tests/partition/run.sh
                line+="partitions $(partition_counts "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS))  "
            fi
            if [ $multimaster = 1 ]; then
                # worker ids from the setting on 16 and 17, leased from a registry on 18+
                mm_ids=setting; [ "$m" -lt 18 ] || mm_ids=lease
                run_layer "$m" multimaster env PG="$m" PG_CONFIG= MM_WORKER_IDS="${MM_WORKER_IDS:-$mm_ids}" tests/multimaster/run.sh
                line+="active-active $(multimaster_counts "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS))  "
            fi
            if [ $citus = 1 ]; then
                run_layer "$m" citus env PG="$m" PG_CONFIG= CITUS_PG_CONFIG="$citus_cfg" tests/citus/run.sh
                line+="citus $(citus_counts "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS))  "
            fi
        fi
    fi
    [ -z "$citus_skip" ] || line+="$citus_skip  "
    if has_layer extupdate && [[ " $UPDATE_MAJORS " == *" $m "* || $UPDATE_MAJORS == all ]]; then
        from=$UPDATE_NEWEST
        # every release with make test-all (or one major alone); in make test the oldest, whose
        # update runs every update script in turn, and the newest
        if [ "$UPDATE_ALL_MAJORS" = all ]; then from=$UPDATE_RELEASES
        elif [[ " $UPDATE_ALL_MAJORS " == *" $m "* ]]; then from="${UPDATE_RELEASES%% *} $UPDATE_NEWEST"; fi
        run_layer "$m" extupdate make --no-print-directory test-extension-update PG="$m" UPDATE_FROM="$from"
        line+="update$([ "$from" = "$UPDATE_NEWEST" ] || echo s) from ${from// /, } $(checks_count "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS))  "
    fi
    if has_layer package && [[ " $PACKAGE_MAJORS " == *" $m "* ]]; then
        profile=dev
        [[ " $RELEASE_PACKAGE_MAJORS " == *" $m "* ]] && profile=release
        release_build_wait
        run_layer "$m" package make --no-print-directory test-package PG="$m" PACKAGE_PROFILE=$profile
        line+="package $(checks_count "$LAST_LOG") $(status $LAST_RC) ($(fmt $LAST_SECS), $profile build)  "
    fi
    SUMMARY[$m]="${line}test build+install $(fmt $build)  total $(fmt $((SECONDS - tm)))"
done

given() { [[ " ${MAJORS[*]} " == *" $1 "* ]]; }
if has_layer upgrade; then
    for pair in $UPGRADE_PAIRS; do
        old=${pair%-*} new=${pair#*-}
        given "$old" && given "$new" || continue
        run_layer "$pair" upgrade env PG= PG_CONFIG= tests/upgrade/pg_upgrade.sh "$old" "$new"
        n=$(grep -Eo 'PASS: all [0-9]+ checks passed' "$LAST_LOG" | grep -Eo '[0-9]+' | head -1)
        SUMMARY[upgrade]="${SUMMARY[upgrade]:+${SUMMARY[upgrade]}  }pg_upgrade $old -> $new: ${n:-?} checks $(status $LAST_RC) ($(fmt $LAST_SECS))"
    done
fi

# a move to a newer major by logical replication, the state carried at the cut-over (the test builds
# of both majors are installed: every layer above leaves its major's installed)
if has_layer move; then
    for pair in $MOVE_PAIRS; do
        old=${pair%-*} new=${pair#*-}
        given "$old" && given "$new" && [ "$old" -le "$new" ] || continue
        run_layer "$pair" move env PG= PG_CONFIG= bash tests/integration/migrate/002_logical_move.sh "$old" "$new"
        n=$(grep -Eo 'PASS: all [0-9]+ checks passed' "$LAST_LOG" | grep -Eo '[0-9]+' | head -1)
        SUMMARY[move]="${SUMMARY[move]:+${SUMMARY[move]}  }logical move $old -> $new: ${n:-?} checks $(status $LAST_RC) ($(fmt $LAST_SECS))"
    done
fi

summary
[ ${#FAILED[@]} -eq 0 ]
