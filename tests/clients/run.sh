#!/usr/bin/env bash
# tests/clients/run.sh — `make test-clients [PG=NN]`: pg_idgen ids through the client libraries
# applications use, each one the library's own way (docs/clients.md, "From your
# application" shows the snippets these programs run, marked "docs snippet" in them).
#
# Usage: tests/clients/run.sh [CLIENT...]   (default: all, in this order)
#   psycopg sqlalchemy django asyncpg   Python (tests/clients/python/, venv from scripts/deps.sh)
#   node                                node-postgres, default layout: strings and BigInt
#   pgjdbc                              Java (Debian's pgjdbc, compiled here with javac)
#   node-js53                           node-postgres with plain Numbers on a cluster started
#                                       with pg_idgen.layout=js53 (JavaScript-safe ids)
# Every client: insert with the DEFAULT and read the key back, a batch of CLIENT_ROWS rows,
# every id compared exactly with the server's id::text, every id as a parameter (WHERE id = $1
# finds exactly its row), uid_decode() gives the configured worker id; plus the library's
# pitfall and the documented workaround. The numbers are in tests/clients/expect.env.
#
# Clusters (scripts/cluster.sh, PG / PG_CONFIG / PG_IDGEN_RUN_DIR honoured): clientsNN on port
# CLIENTS_PORT (default 297NN) with pg_idgen.worker_id = CLIENT_WORKER_ID, and clientsNN-js53 on
# CLIENTS_PORT + 10 with pg_idgen.layout = js53; created fresh, destroyed on exit.
# Libraries: PG_IDGEN_CLIENTS_HOME (default $PG_IDGEN_PG_HOME/clients) as scripts/deps.sh
# installed them; JDBC_JAR (default /usr/share/java/postgresql.jar).
#
# Output: each client's PASS:/FAIL: lines (client and check named), one line per client, and
#   [clients] PASS: all N checks passed (7 clients, ...)   or   [clients] FAIL: ...
# A client that fails makes the run fail. node-js53 is SKIPPED, with a SKIP line, only when the
# server refuses the layout name js53 (a pg_idgen without that layout); any other failure to
# start that cluster is a failure.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
# shellcheck source=../../scripts/pgenv.bash
. "$ROOT/scripts/pgenv.bash" || exit 1
set -a
# shellcheck source=expect.env
. "$ROOT/tests/clients/expect.env"
set +a
CL=$ROOT/scripts/cluster.sh
CLIENTS_HOME=${PG_IDGEN_CLIENTS_HOME:-$PG_IDGEN_PG_HOME/clients}
PY=$CLIENTS_HOME/venv/bin/python
NODE_MODULES=$CLIENTS_HOME/node/node_modules
JDBC_JAR=${JDBC_JAR:-/usr/share/java/postgresql.jar}
PORT=${CLIENTS_PORT:-297$PG}
JS53_PORT=$((PORT + 10))
C=clients$PG
C53=clients$PG-js53
ALL=(psycopg sqlalchemy django asyncpg node pgjdbc node-js53)
if [ $# -gt 0 ]; then CLIENTS=("$@"); else CLIENTS=("${ALL[@]}"); fi

say() { printf '[clients] %s\n' "$*"; }
TMP=$(mktemp -d /tmp/pg_idgen-clients.XXXXXX)
STARTED=()
cleanup() {
    local c
    for c in ${STARTED[@]+"${STARTED[@]}"}; do "$CL" destroy "$c" >/dev/null 2>&1; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# what scripts/deps.sh installs; missing is a failure with the command that fixes it
missing=()
[ -x "$PY" ] || missing+=("$PY")
[ -d "$NODE_MODULES/pg" ] || missing+=("$NODE_MODULES/pg")
command -v node >/dev/null || missing+=(node)
command -v javac >/dev/null || missing+=(javac)
[ -f "$JDBC_JAR" ] || missing+=("$JDBC_JAR")
if [ ${#missing[@]} -gt 0 ]; then
    say "FAIL: client libraries missing: ${missing[*]} (run: scripts/deps.sh --clients)"
    exit 1
fi

# start_cluster NAME PORT [postgres options]: a fresh cluster
start_cluster() {
    local name=$1 port=$2; shift 2
    "$CL" destroy "$name" >/dev/null 2>&1 || true
    STARTED+=("$name")
    "$CL" start "$name" "$port" "$@" >"$TMP/$name.start" 2>&1
}

declare -A LINE
FAILED=() SKIPPED=() TOTAL_CHECKS=0 TOTAL_IDS=0 TOTAL_ROWS=0

# run_client NAME CLUSTER COMMAND...: the program's output is shown; it passes when it exits 0,
# printed at least one PASS and no FAIL line, and its STAT line says failed=0
run_client() {
    local name=$1 cluster=$2; shift 2
    local out=$TMP/$name.out t0=$SECONDS rc=0 db=${name//-/_}
    say "--- $name"
    # a database of its own with the extension: every program's table is just `orders`, as in
    # the snippets of docs/clients.md
    "$CL" psql "$cluster" -c "CREATE DATABASE $db" >/dev/null \
        && PGDATABASE=$db "$CL" psql "$cluster" -c "CREATE EXTENSION pg_idgen" >/dev/null \
        && env PGHOST="$("$CL" sockdir "$cluster")" PGPORT="$("$CL" port "$cluster")" PGUSER=postgres \
            PGDATABASE="$db" PYTHONDONTWRITEBYTECODE=1 NODE_PATH="$NODE_MODULES" "$@" >"$out" 2>&1 || rc=$?
    cat "$out"
    local stat passes fails
    stat=$(grep -m1 '^STAT: ' "$out" || true)
    passes=$(grep -c '^PASS: ' "$out")
    fails=$(grep -c '^FAIL: ' "$out")
    if [ $rc -eq 0 ] && [ "$fails" -eq 0 ] && [ "$passes" -gt 0 ] && [[ $stat == *" failed=0" ]]; then
        LINE[$name]="ok: ${stat##*: } ($((SECONDS - t0)) s)"
    else
        LINE[$name]="FAILED: $fails failed check(s), exit status $rc$([ -z "$stat" ] && echo ", no STAT line (crashed?)")"
        FAILED+=("$name")
        [ "$fails" -gt 0 ] || say "FAIL: $name: the program ended (exit $rc) without reporting its checks; output above"
    fi
    TOTAL_CHECKS=$((TOTAL_CHECKS + passes + fails))
    [[ $stat =~ rows=([0-9]+) ]] && TOTAL_ROWS=$((TOTAL_ROWS + BASH_REMATCH[1]))
    [[ $stat =~ ids_compared=([0-9]+) ]] && TOTAL_IDS=$((TOTAL_IDS + BASH_REMATCH[1]))
}

say "PostgreSQL $("$PG_CONFIG" --version | sed 's/^PostgreSQL //'), clients: ${CLIENTS[*]}"
main_up=0
for name in "${CLIENTS[@]}"; do
    case $name in
        psycopg|sqlalchemy|django|asyncpg|node|pgjdbc)
            if [ $main_up = 0 ]; then
                start_cluster "$C" "$PORT" -c "pg_idgen.worker_id=$CLIENT_WORKER_ID" \
                    || { cat "$TMP/$C.start"; say "FAIL: cluster $C did not start"; exit 1; }
                main_up=1
            fi ;;
    esac
    case $name in
        psycopg|sqlalchemy|django|asyncpg)
            run_client "$name" "$C" "$PY" "tests/clients/python/test_$name.py" ;;
        node)
            run_client node "$C" node tests/clients/node/test_pg.js default ;;
        pgjdbc)
            # compiled for each run: a second of javac, and never a stale class
            if javac -d "$TMP/java" -cp "$JDBC_JAR" tests/clients/java/PgJdbcTest.java >"$TMP/javac.out" 2>&1; then
                run_client pgjdbc "$C" java -cp "$TMP/java:$JDBC_JAR" PgJdbcTest
            else
                cat "$TMP/javac.out"; say "FAIL: pgjdbc: javac failed"
                LINE[pgjdbc]="FAILED: javac"; FAILED+=(pgjdbc)
            fi ;;
        node-js53)
            if start_cluster "$C53" "$JS53_PORT" -c "pg_idgen.layout=$JS53_LAYOUT" \
                    -c "pg_idgen.worker_id=$JS53_WORKER_ID"; then
                run_client node-js53 "$C53" node tests/clients/node/test_pg.js js53
            elif grep -q "unknown layout \"$JS53_LAYOUT\"" "$TMP/$C53.start"; then
                say "################################################################################"
                say "SKIP: node-js53: this pg_idgen has no layout \"$JS53_LAYOUT\" (the server refused"
                say "      pg_idgen.layout=$JS53_LAYOUT at start); the JavaScript-safe layout test did NOT run"
                say "################################################################################"
                LINE[node-js53]="SKIP: the server refuses pg_idgen.layout=$JS53_LAYOUT"
                SKIPPED+=(node-js53)
            else
                cat "$TMP/$C53.start"
                say "FAIL: node-js53: cluster $C53 (pg_idgen.layout=$JS53_LAYOUT) did not start"
                LINE[node-js53]="FAILED: cluster did not start"; FAILED+=(node-js53)
            fi ;;
        *) say "FAIL: unknown client '$name' (clients: ${ALL[*]})"; LINE[$name]="FAILED: unknown"; FAILED+=("$name") ;;
    esac
done

echo
for name in "${CLIENTS[@]}"; do say "$(printf '%-11s %s' "$name:" "${LINE[$name]:-not run}")"; done
if [ ${#FAILED[@]} -gt 0 ]; then
    for c in ${STARTED[@]+"${STARTED[@]}"}; do
        echo "--- server log of $c (last 20 lines) ---"; "$CL" log "$c" 20 2>/dev/null | sed 's/^/    /'
    done
    say "FAIL: ${#FAILED[@]} of ${#CLIENTS[@]} clients failed: ${FAILED[*]}"
    exit 1
fi
say "PASS: all $TOTAL_CHECKS checks passed ($((${#CLIENTS[@]} - ${#SKIPPED[@]})) clients, $TOTAL_ROWS rows inserted, $TOTAL_IDS ids compared exactly)$([ ${#SKIPPED[@]} -gt 0 ] && echo ", SKIP: ${SKIPPED[*]}")"
