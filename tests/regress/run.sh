#!/usr/bin/env bash
# tests/regress/run.sh — pg_regress golden tests for pg_idgen.
#
# Usage: tests/regress/run.sh [TEST...]
#   With TEST names, runs exactly those (sql/TEST.sql vs expected/TEST.out).
#   Otherwise runs tests/regress/schedule if present, else every sql/*.sql.
#   Env: PG=NN (15 default, 16, 17, 18) or PG_CONFIG, REGRESS_PORT (default 28820),
#   KEEP_CLUSTER=1 leaves the cluster running; REGRESS_PARALLEL=0 skips the second pass.
#
# The suite runs twice against the same expected files: once as is, then with
# debug_parallel_query = regress (force_parallel_mode on 15) for every session (PGOPTIONS through
# the launcher): each query that can run in a parallel worker runs there, and every function's
# PARALLEL label must hold (a PARALLEL SAFE function that cannot run in a worker fails the pass).
# In regress mode the Gather is hidden from EXPLAIN and the "parallel worker" CONTEXT line is not
# shown, so the output is the same as the first pass's. Results: regress-out/ and
# regress-out/parallel/.
#
# Expected output: expected/TEST.out; where a message truly differs on one major, pg_regress's
# own alternative-file mechanism is used (expected/TEST_1.out, ... : the run passes if the
# output matches any of them), so no version needs a separate copy of every file.
#
# The extension must already be installed (`make install`). The script
# (re)creates the throwaway cluster `regress` (.run/regress, pg_idgen preloaded
# via pgrx-config/postgresql.conf, worker_id 1), creates a fresh database
# pg_idgen_regress, runs pg_regress --use-existing against it, prints
# regression.diffs on failure, stops the cluster and exits non-zero on failure.
# Results: .run/regress-out/{results/,regression.diffs,regression.out}.
#
# Determinism: pg_regress itself forces PGTZ=PST8PDT and
# PGDATESTYLE="Postgres, MDY" for the psql it launches, so setting those
# variables here would have no effect. We pass them through --launcher
# (a command prefix for every psql) instead, so every test session runs with
# TimeZone=UTC and DateStyle=ISO, YMD. lc_messages=C comes from the config.
# Tests still need `SET client_min_messages = warning` where NOTICEs vary.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
# PG=NN or PG_CONFIG selects the PostgreSQL major (scripts/pgenv.bash): PG_REGRESS and the psql
# it runs (--bindir) come from PG_CLIENT_BIN — the server's own, except on 17, whose wheel's psql
# and pg_regress crash at start, where 18's client programs are used against the 17 server.
. "$ROOT/scripts/pgenv.bash"
CLUSTER=${REGRESS_CLUSTER:-regress}
PORT=${REGRESS_PORT:-28820}
DB=pg_idgen_regress
INPUT=$ROOT/tests/regress
OUT=$("$ROOT/scripts/cluster.sh" rundir)/regress-out
CL=$ROOT/scripts/cluster.sh

[ -x "$PG_REGRESS" ] || { echo "pg_regress not found at $PG_REGRESS (make deps)" >&2; exit 1; }
[ -f "$("$PG_CONFIG" --sharedir)/extension/pg_idgen.control" ] \
    || { echo "pg_idgen is not installed into $("$PG_CONFIG" --sharedir); run: make install" >&2; exit 1; }

cleanup() {
    if [ "${KEEP_CLUSTER:-0}" != 1 ]; then "$CL" stop "$CLUSTER" fast || true; fi
}
trap cleanup EXIT

"$CL" destroy "$CLUSTER" >/dev/null 2>&1 || true
"$CL" start "$CLUSTER" "$PORT"
SOCK=$("$CL" sockdir "$CLUSTER")

rm -rf "$OUT"
mkdir -p "$OUT"

if [ $# -gt 0 ]; then
    tests=("$@")
elif [ -f "$INPUT/schedule" ]; then
    tests=(--schedule="$INPUT/schedule")
else
    tests=()
    for f in "$INPUT"/sql/*.sql; do
        [ -e "$f" ] || continue
        tests+=("$(basename "$f" .sql)")
    done
fi
[ ${#tests[@]} -gt 0 ] || { echo "no tests found under $INPUT/sql" >&2; exit 1; }

# run_pass OUTDIR [PGOPTIONS]: one pass of the suite in a fresh database
run_pass() {
    local out=$1 opts=${2:-} rc=0
    "$CL" psql "$CLUSTER" -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'" >/dev/null
    mkdir -p "$out"
    "$PG_REGRESS" \
        --use-existing \
        --launcher="env PGTZ=UTC PGDATESTYLE=ISO,YMD PGAPPNAME=pg_regress PGOPTIONS=$opts" \
        --bindir="$PG_CLIENT_BIN" \
        --host="$SOCK" --port="$PORT" --user=postgres \
        --inputdir="$INPUT" --outputdir="$out" \
        --dbname="$DB" \
        "${tests[@]}" || rc=$?
    if [ $rc -ne 0 ]; then
        if [ -s "$out/regression.diffs" ]; then
            echo "================ $out/regression.diffs ================"
            cat "$out/regression.diffs"
        fi
        echo "---------------- server log (tail) ----------------"
        "$CL" log "$CLUSTER" 30 || true
        echo "regress: FAILED${opts:+ with $opts} (results in $out)" >&2
        exit $rc
    fi
}

run_pass "$OUT"
echo "regress: all tests passed"
if [ "${REGRESS_PARALLEL:-1}" != 0 ]; then
    if [ "$("$PG_CONFIG" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')" -ge 16 ]; then
        parallel_setting=debug_parallel_query
    else
        parallel_setting=force_parallel_mode
    fi
    run_pass "$OUT/parallel" "-c$parallel_setting=regress"
    echo "regress: all tests passed with $parallel_setting = regress"
fi
