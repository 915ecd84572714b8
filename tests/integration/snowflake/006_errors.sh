#!/usr/bin/env bash
# snowflake/006_errors: misconfigurations give clear errors with real SQLSTATEs (never XX000):
#  - not in shared_preload_libraries: snowflake_next() -> 55000 + HINT about
#    shared_preload_libraries, while uid_compose / uid_decode / snowflake_at still work;
#  - pg_idgen.worker_id unset (-1): 55000 "worker id is not configured";
#  - the server refuses to start with an invalid layout, or a worker id the layout cannot hold;
#  - an ordinary role: snowflake_accept_layout() -> 42501, SET pg_idgen.worker_id -> 42501;
#  - SET pg_idgen.worker_id = 5000 (10 worker bits) -> 22023.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

# ---- not preloaded ----
# The extension is created while preloaded, then the server restarts without the library in
# shared_preload_libraries: each function is then loaded by the backend on first use.
NP=it_nopreload
cluster_start "$NP" 28945
q "$NP" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE DATABASE np" >/dev/null
cluster_start "$NP" 28945 -c "shared_preload_libraries="
check "not preloaded: shared_preload_libraries is empty" "$(q "$NP" "SHOW shared_preload_libraries")" == ""
expect_sql_error "$NP" 55000 'HINT: .*shared_preload_libraries' "SELECT snowflake_next()"
check_match "not preloaded: message" "$LAST_ERR" 'must be loaded via shared_preload_libraries'
rt=$(q "$NP" "SELECT u.ts || ' ' || u.worker_id || ' ' || u.sequence FROM uid_decode(uid_compose('2026-06-01 12:00:00.123+00', 7, 42)) u" 2>&1) || true
check "not preloaded: uid_decode(uid_compose(2026-06-01 12:00:00.123, 7, 42))" "$rt" == "2026-06-01 12:00:00.123+00 7 42"
id=$(q "$NP" "SELECT snowflake_at('2026-03-01 00:00:00+00', 3)" 2>/dev/null) || id=0
rt=$(q "$NP" "SELECT u.ts || ' ' || u.worker_id || ' ' || u.sequence FROM uid_decode($id) u" 2>&1) || true
check "not preloaded: uid_decode(snowflake_at(2026-03-01, 3)) [$id]" "$rt" == "2026-03-01 00:00:00+00 3 0"
# CREATE EXTENSION itself on the server without the library preloaded
out=$(qdb "$NP" np '\set VERBOSITY verbose' "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" 2>&1) \
    && ok "not preloaded: CREATE EXTENSION pg_idgen" \
    || ko "not preloaded: CREATE EXTENSION pg_idgen failed: $(tr '\n' ' ' <<<"$out")"
"$CLUSTER" stop "$NP" 2>/dev/null

# ---- worker id not set ----
C=it_err
cluster_start "$C" 28946 -c pg_idgen.worker_id=-1
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
expect_sql_error "$C" 55000 'worker id is not configured' "SELECT snowflake_next()"
check_match "worker id unset: HINT names pg_idgen.worker_id" "$LAST_ERR" 'HINT: .*pg_idgen\.worker_id'
# a superuser can set it for the session
got=$(q "$C" "SET pg_idgen.worker_id = 4" "SELECT worker_id FROM uid_decode(snowflake_next())")
check "worker id unset: after SET pg_idgen.worker_id = 4, ids decode to worker" "$got" -eq 4

# ---- refuses to start: invalid layout / worker id outside the layout ----
"$CLUSTER" stop "$C" 2>/dev/null
PGD=$("$CLUSTER" pgdata "$C")
CD=$("$CLUSTER" sockdir "$C")
# try_start DESC REGEX opts...: the start must fail and the logs must match REGEX
try_start() {
    local desc=$1 re=$2; shift 2
    # (a refusal in _PG_init comes before the logging collector starts: it is in startup.log)
    local before; before=$(cat "$CD/startup.log" 2>/dev/null | wc -l)
    if "$CLUSTER" start "$C" "$(itport 28946)" "$@" >/dev/null 2>&1; then
        ko "$desc: the server started"
        "$CLUSTER" stop "$C" 2>/dev/null
        return
    fi
    local why
    why=$(tail -n +"$((before + 1))" "$CD/startup.log" | grep -E 'FATAL|DETAIL' | tr '\n' ' ' || true)
    log "$desc: refused to start; log: $why"
    if [[ $why =~ $re ]]; then ok "$desc: the server refused to start and the log says why"; else ko "$desc: log does not match /$re/: $why"; fi
}
try_start "layout time=41,worker=10,sequence=13 (64 bits)" 'FATAL: +invalid value for pg_idgen\.layout: .*64 bits' -c "pg_idgen.layout=time=41,worker=10,sequence=13"
try_start "layout instagram with worker_id 9000 (> 8191)" 'FATAL: +invalid value for pg_idgen\.worker_id: worker id 9000 does not fit the 13 worker bits.*8191' -c pg_idgen.layout=instagram -c pg_idgen.worker_id=9000
# the same layout with a worker id it can hold starts (so the refusal above was about 9000)
if "$CLUSTER" start "$C" "$(itport 28946)" -c pg_idgen.layout=instagram -c pg_idgen.worker_id=8191 >/dev/null 2>&1; then
    ok "layout instagram with worker_id 8191 starts"
    lay=$(q "$C" "SHOW pg_idgen.layout")
    check "layout instagram: SHOW pg_idgen.layout" "$lay" == "instagram"
    "$CLUSTER" stop "$C" 2>/dev/null
else
    ko "layout instagram with worker_id 8191 does not start"
fi

# ---- permissions and range checks, default settings ----
cluster_start "$C" 28946
q "$C" "CREATE ROLE app LOGIN" "GRANT USAGE ON SCHEMA public TO app" >/dev/null
got=$(q "$C" "SET ROLE app" "SELECT worker_id FROM uid_decode(snowflake_next())")
check "ordinary role: snowflake_next() works (worker)" "$got" -eq 1
expect_sql_error "$C" 42501 'permission denied' "SET ROLE app" "SELECT snowflake_accept_layout()"
q "$C" "GRANT EXECUTE ON FUNCTION snowflake_accept_layout() TO app" >/dev/null
expect_sql_error "$C" 42501 'permission denied to confirm pg_idgen\.layout' "SET ROLE app" "SELECT snowflake_accept_layout()"
expect_sql_error "$C" 42501 'permission denied to set parameter "pg_idgen\.worker_id"' "SET ROLE app" "SET pg_idgen.worker_id = 2"
expect_sql_error "$C" 22023 'invalid value for parameter "pg_idgen\.worker_id": "?5000"?' "SET pg_idgen.worker_id = 5000"
check_match "worker_id 5000: DETAIL gives the range" "$LAST_ERR" 'DETAIL: .*0 \.\. 1023'
expect_sql_error "$C" 22023 '(-2 is outside the valid range|invalid value) for parameter "pg_idgen\.worker_id"' "SET pg_idgen.worker_id = -2"
w=$(q "$C" "SET pg_idgen.worker_id = 1023" "SELECT worker_id FROM uid_decode(snowflake_next())")
check "SET pg_idgen.worker_id = 1023 (the largest of 10 bits): ids decode to" "$w" -eq 1023
expect_sql_error "$C" 22023 'pg_idgen\.sequence_start' "SET pg_idgen.sequence_start = sideways"
expect_sql_error "$C" 55P02 'pg_idgen\.layout' "SET pg_idgen.layout = 'instagram'"

finish
