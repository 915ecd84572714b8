#!/usr/bin/env bash
# lease/002_errors — worker id leases: settings and registry errors, retirement. Two
# clusters on ports 28991-28992 (+ IT_PORT_OFFSET); node A is also the registry (database reg):
# any server of a fleet can be it.
#  1. the server refuses to start with an invalid pg_idgen.lease_range (not a range; in auto mode,
#     beyond the layout's worker ids), and the log says why.
#  2. A in auto mode without pg_idgen.registry: state 'misconfigured', snowflake_next() 55000;
#     with a malformed one (port=notaport): 'misconfigured' with the parse error, not unreachable;
#     a string that does not parse is refused when set (22023), the error without its value.
#  3. registry = a database of A without the extension (set by ALTER SYSTEM + reload: the worker
#     reloads): 'registry unreachable', the detail says to CREATE EXTENSION, 55000 with it.
#  4. registry = database reg with the extension, as a role without privileges: 'permission
#     denied for function pg_idgen_lease_claim' in the detail; with EXECUTE on the node functions
#     but no row in pg_idgen_registry_nodes: 'may not act for any worker id'; after that row
#     (docs/worker-ids.md, "Registry roles"): held, id 0.
#     Non-superusers cannot read pg_idgen.registry (it may hold a password) nor the table. A,
#     its own registry here, warns in its log that it should not be.
#  5. B with lease_range 0-1 while A holds 0 and 1 was released an hour ago by a node that is
#     gone: 'no free worker id' (lease_retire = 7 days), 55000; B reloaded with lease_retire =
#     3000 s: B takes 1 (retired), A keeps 0.
#  6. B in fixed mode without pg_idgen.worker_id: 'misconfigured', 55000 "not configured"; with
#     worker_id 5: held; a session with pg_idgen.worker_id = 6 is refused (not leased), and so is
#     set_worker_id(6) (a stored id would be unused: postgresql.conf's worker_id wins).
#  8. (after 6) B's registry named by host name: the worker resolves it on the one thread of tokio's
#     blocking pool, which blocks SIGHUP, SIGTERM, SIGUSR1 & co; the main thread does not, and
#     handles them: a reload changes the lease's length in the registry, pg_terminate_backend
#     releases the lease.
#  7. scripts/fleet.sh start --lease (aggregator = registry, 3 nodes in auto mode, ports
#     28995-28998): the nodes hold three distinct ids of 1-3, `status` shows them; two sessions
#     per node generate 20,000 ids each at once: 0 duplicates of 120,000, each of its node's id;
#     after fleet.sh stop and start --lease every node has its id back (sticky).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

A=it_lea
B=it_leb
PA=$(itport 28991)
TTL=(-c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1)
reload_with() {   # NAME SETTING VALUE
    q "$1" "ALTER SYSTEM SET $2 = '$3'" "SELECT pg_reload_conf()" >/dev/null
}

# ---- 1. invalid lease_range refuses the start ----
cluster_start "$A" 28991 -c pg_idgen.worker_id=-1
"$CLUSTER" stop "$A" 2>/dev/null
CD=$("$CLUSTER" sockdir "$A")
try_start() {
    local desc=$1 re=$2; shift 2
    local before; before=$(cat "$CD/startup.log" 2>/dev/null | wc -l)
    if "$CLUSTER" start "$A" "$PA" "$@" >/dev/null 2>&1; then
        ko "$desc: the server started"; "$CLUSTER" stop "$A" 2>/dev/null; return
    fi
    local why; why=$(tail -n +"$((before + 1))" "$CD/startup.log" | grep -E 'FATAL|DETAIL' | tr '\n' ' ' || true)
    if [[ $why =~ $re ]]; then ok "1: $desc: the server refused to start and the log says why"; else ko "1: $desc: log does not match /$re/: $why"; fi
}
try_start "lease_range 'abc'" 'FATAL: +invalid value for pg_idgen\.lease_range: "abc" is not a range' -c pg_idgen.lease_range=abc
try_start "auto mode, lease_range 5-2000 (default layout: 0 .. 1023)" 'FATAL: +invalid value for pg_idgen\.lease_range: .*hi <= 1023' -c pg_idgen.lease_mode=auto -c pg_idgen.lease_range=5-2000

# ---- 2. no registry ----
cluster_start "$A" 28991 -c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto "${TTL[@]}" -c pg_idgen.node_name=a
q "$A" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE DATABASE noext" "CREATE DATABASE reg" >/dev/null
wait_for "2: without pg_idgen.registry: 'misconfigured'" state_is "$A" misconfigured
expect_sql_error "$A" 55000 'pg_idgen cannot generate: pg_idgen.registry is not set' "SELECT snowflake_next()"
check "2: snowflake_worker(): no id, lease state shown" "$(q "$A" "SELECT coalesce(worker_id::text, '-') || ' ' || lease FROM snowflake_worker()")" \
    == "- misconfigured (auto mode, not valid)"

# ---- 2. a malformed connection string: misconfigured, not unreachable ----
reload_with "$A" pg_idgen.registry "host=127.0.0.1 port=notaport"
wait_for "2: a malformed pg_idgen.registry: the detail has the parse error" \
    detail_matches "$A" '^pg_idgen.registry is not a valid connection string: .*port'
check "2: a malformed pg_idgen.registry: 'misconfigured'" "$(lease "$A" state)" == misconfigured
expect_sql_error "$A" 55000 'pg_idgen cannot generate: pg_idgen.registry is not a valid connection string' "SELECT snowflake_next()"
# A string that does not parse is refused when set (ALTER SYSTEM, or at a reload of the file),
# as one holding a password is: the error names the problem (and the option it follows), never a
# character, a position or a value of the string (it goes to the client and to the server log).
# The setting keeps its value (port=notaport: still misconfigured by it).
refused_registry() {   # DESCRIPTION VALUE REGEX SECRET-REGEX
    expect_sql_error "$A" 22023 "invalid value for parameter \"pg_idgen.registry\": pg_idgen.registry is not a valid connection string: .*$3" \
        "ALTER SYSTEM SET pg_idgen.registry = '$2'"
    check "2: $1: the error has no part of the value, no byte offset" \
        "$([[ $LAST_ERR =~ $4|byte ]] && echo echoes || echo clean)" == clean
}
refused_registry "an unquoted password with a space" \
    "host=127.0.0.1 port=$PA user=postgres password=Secret Bpart dbname=reg" 'after the value of "password"' "Secret|Bpart|'B'| B "
refused_registry "an unterminated quote" \
    "host=127.0.0.1 port=$PA user=postgres password=''Secret dbname=reg" unterminated "Secret|dbname"  # '' : one quote in the SQL literal
refused_registry "a URI with a bad percent-escape in the password" \
    "postgresql://postgres:Sec%ZZret@127.0.0.1:$PA/reg" percent "Sec|ZZ|ret"
check "2: the refused values left the setting as it was" "$(q "$A" "SHOW pg_idgen.registry")" == "host=127.0.0.1 port=notaport"
check "2: ... and the worker's detail" "$(lease "$A" state)" == misconfigured

# ---- 3. a registry database without the extension ----
reload_with "$A" pg_idgen.registry "host=127.0.0.1 port=$PA user=postgres dbname=noext"
wait_for "3: registry without the extension: 'registry unreachable' saying to CREATE EXTENSION" \
    detail_matches "$A" 'no pg_idgen_leases table: run CREATE EXTENSION pg_idgen'
expect_sql_error "$A" 55000 'no worker id lease, and the registry cannot be reached.*DETAIL: +Lease worker: registry unreachable: the registry database has no pg_idgen_leases table' \
    "SELECT snowflake_next()"

# ---- 4. privileges ----
q "$A" "CREATE ROLE leaser LOGIN" >/dev/null
qdb "$A" reg "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
reload_with "$A" pg_idgen.registry "host=127.0.0.1 port=$PA user=leaser dbname=reg"
wait_for "4: a registry role without privileges: 'permission denied' in the detail" detail_matches "$A" 'permission denied for function pg_idgen_lease_claim'
expect_sql_error "$A" 42501 'permission denied to examine "pg_idgen.registry"|must be superuser' "SET ROLE leaser" "SHOW pg_idgen.registry"
PGDATABASE=reg expect_sql_error "$A" 42501 'permission denied for table pg_idgen_leases' "SET ROLE leaser" "SELECT * FROM pg_idgen_leases"
qdb "$A" reg "$(registry_node_sql leaser 0 1023)" "DELETE FROM pg_idgen_registry_nodes" >/dev/null
wait_for "4: EXECUTE but no row in pg_idgen_registry_nodes: 'may not act' in the detail" \
    detail_matches "$A" 'role "leaser" may not act for any worker id of 0-1023'
qdb "$A" reg "INSERT INTO pg_idgen_registry_nodes VALUES ('leaser', 0, 1023)" >/dev/null
wait_for "4: after the mapping row: held" state_is "$A" held
check "4: A leased id 0" "$(q "$A" "SELECT worker_id FROM uid_decode(snowflake_next())")" == 0
check "4: the registry row names node a" "$(qdb "$A" reg "SELECT worker_id || ' ' || node_name FROM pg_idgen_leases")" == "0 a"
check "4: A warns that it is its own registry" \
    "$(grep -c 'pg_idgen.registry names this server itself' "$("$CLUSTER" pgdata "$A")/log/postgresql.log" || true)" -ge 1

# ---- 5. range exhausted, retirement ----
# id 1 was held by a node that is gone and released it an hour ago (by the registry's clock)
qdb "$A" reg "INSERT INTO pg_idgen_leases VALUES (1, 1, 'gone', 'old-host', 5432, 1, now() - interval '2 hours', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour')" >/dev/null
REG="host=127.0.0.1 port=$PA user=leaser dbname=reg"
cluster_start "$B" 28992 -c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto "${TTL[@]}" -c pg_idgen.node_name=b \
    -c "pg_idgen.registry=$REG" -c pg_idgen.lease_range=0-1
q "$B" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "5: B with lease_range 0-1 (0 held by A, 1 released 1 h ago, lease_retire 7 days): 'no free worker id'" \
    state_is "$B" "no free worker id"
expect_sql_error "$B" 55000 'every worker id of pg_idgen.lease_range 0-1 is leased or not yet retired' "SELECT snowflake_next()"
reload_with "$B" pg_idgen.lease_retire 3000
wait_for "5: with lease_retire = 3000 s (50 min), B takes id 1" state_is "$B" held
check "5: B generates with 1" "$(q "$B" "SELECT worker_id FROM uid_decode(snowflake_next())")" == 1
check "5: the registry row of 1 is B's" "$(qdb "$A" reg "SELECT node_name || ' ' || (released_at IS NULL)::text FROM pg_idgen_leases WHERE worker_id = 1")" == "b true"
check "5: A still holds 0" "$(lease "$A" "worker_id || ' ' || state")" == "0 held"

# ---- 6. fixed mode ----
cluster_start "$B" 28992 -c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=fixed "${TTL[@]}" -c pg_idgen.node_name=b -c "pg_idgen.registry=$REG"
wait_for "6: fixed mode without pg_idgen.worker_id: 'misconfigured'" state_is "$B" misconfigured
check "6: the detail says what is missing" "$(lease "$B" detail)" == "pg_idgen.lease_mode = fixed needs pg_idgen.worker_id in postgresql.conf"
expect_sql_error "$B" 55000 'pg_idgen worker id is not configured' "SELECT snowflake_next()"
cluster_start "$B" 28992 -c pg_idgen.worker_id=5 -c pg_idgen.lease_mode=fixed "${TTL[@]}" -c pg_idgen.node_name=b -c "pg_idgen.registry=$REG"
wait_for "6: fixed mode with worker_id 5: held" state_is "$B" held
check "6: B generates with 5" "$(q "$B" "SELECT worker_id FROM uid_decode(snowflake_next())")" == 5
check "6: snowflake_worker(): source setting, lease held" \
    "$(q "$B" "SELECT worker_id || ' ' || source || ' ' || (lease LIKE 'held (fixed mode, valid %')::text FROM snowflake_worker()")" == "5 setting true"
expect_sql_error "$B" 55000 'pg_idgen worker id 6 is not leased by this node: its lease is for worker id 5' \
    "SET pg_idgen.worker_id = 6" "SELECT snowflake_next()"
expect_sql_error "$B" 55000 'pg_idgen worker id 6 is not leased by this node: its lease is for worker id 5.*takes precedence over a stored worker id' \
    "SELECT set_worker_id(6)"
check "6: set_worker_id() with the leased id is accepted" "$(q "$B" "SELECT set_worker_id(5)" "SELECT worker_id FROM pg_idgen_worker" | tail -n 1)" == 5

# ---- 8. signals reach the worker's main thread only ----
# A host name makes tokio resolve it on a thread of its blocking pool (an IP address does not);
# that thread must block every signal, or PostgreSQL's handlers (SIGHUP, SIGTERM, SIGUSR1 ...)
# could run on it. Same registry (identity), so the reload is accepted; the worker reconnects.
# B restarted with its registry and lease_ttl in postgresql.auto.conf, not on the command line
# (a -c option of the postmaster outranks ALTER SYSTEM: the reloads below would change nothing)
q "$B" "ALTER SYSTEM SET pg_idgen.registry = '$REG'" "ALTER SYSTEM SET pg_idgen.lease_ttl = 6" \
    "ALTER SYSTEM SET pg_idgen.lease_margin = 1" >/dev/null
cluster_start "$B" 28992 -c pg_idgen.worker_id=5 -c pg_idgen.lease_mode=fixed -c pg_idgen.node_name=b
wait_for "8: B (settings in postgresql.auto.conf) holds worker id 5 again" state_is "$B" held
reload_with "$B" pg_idgen.registry "host=localhost port=$PA user=leaser dbname=reg"
wpid=$(q "$B" "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_idgen lease'")
threads() { find "/proc/$wpid/task" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | grep -cvx "$wpid" || true; }
resolved() { [ "$(threads)" -ge 1 ] && state_is "$B" held; }
wait_for "8: registry by host name (localhost): the worker resolved it on a thread of tokio's pool, and holds the lease" resolved
# SigBlk is a hex mask, bit n-1 for signal n: SIGHUP 1, SIGINT 2, SIGQUIT 3, SIGUSR1 10,
# SIGUSR2 12, SIGALRM 14, SIGTERM 15, SIGCHLD 17
sigmask() { awk '/^SigBlk:/ { print $2 }' "$1"; }
blocked() { local m=$((16#$1)) s; for s in 1 2 3 10 12 14 15 17; do (( (m >> (s - 1)) & 1 )) || return 1; done; }
n_ok=0 n_bad=0
for t in /proc/$wpid/task/*; do
    [ "${t##*/}" = "$wpid" ] && continue
    if blocked "$(sigmask "$t/status")"; then n_ok=$((n_ok + 1)); else n_bad=$((n_bad + 1)); log "8: thread ${t##*/} SigBlk $(sigmask "$t/status")"; fi
done
check "8: every other thread of the worker blocks SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGTERM and SIGCHLD ($n_ok of $((n_ok + n_bad)))" "$n_bad" -eq 0
check "8: ... and there is one such thread (max_blocking_threads 1)" "$((n_ok + n_bad))" -eq 1
check "8: the worker's main thread blocks neither SIGHUP nor SIGTERM (it handles them)" \
    "$(( ( (16#$(sigmask "/proc/$wpid/task/$wpid/status")) & 1) | (( (16#$(sigmask "/proc/$wpid/task/$wpid/status")) >> 14) & 1) ))" -eq 0
# the main thread handles them: a reload is seen, and SIGTERM (pg_terminate_backend) releases
reload_with "$B" pg_idgen.lease_ttl 8
row5() { qdb "$A" reg "SELECT $1 FROM pg_idgen_leases WHERE worker_id = 5"; }
ttl_is_8() { [ "$(row5 "round(extract(epoch FROM lease_until - renewed_at))")" = 8 ]; }
wait_for "8: SIGHUP: the worker reloaded (the registry row's lease is now 8 s long)" ttl_is_8
q "$B" "SELECT pg_terminate_backend($wpid)" >/dev/null
# (the restarted worker claims again a second later: the log, not the row, shows the release)
released() { grep -q "\[$wpid\] LOG: *pg_idgen lease: released: worker id 5 released" "$("$CLUSTER" pgdata "$B")/log/postgresql.log" && [ ! -d "/proc/$wpid" ]; }
wait_for "8: SIGTERM: the worker released the lease (its log line) and exited" released
wait_for "8: ... and the restarted worker holds it again" state_is "$B" held

# ---- 7. scripts/fleet.sh --lease ----
FLEET=$ROOT/scripts/fleet.sh
F=it_lfleet
RUN_DIR=$("$CLUSTER" rundir)
for c in "${F}agg" "${F}1" "${F}2" "${F}3"; do register_cluster "$c"; done
trap 'rc=$?; set +e; rm -f "$RUN_DIR/$F.fleet"; (exit $rc); cleanup' EXIT
fleet_start() { "$FLEET" start --name "$F" --nodes 3 --base-port "$(itport 28995)" --lease --lease-ttl 6 >"$TMP/fleet.out" 2>&1 \
    || { cat "$TMP/fleet.out"; ko "7: fleet.sh start --lease failed"; }; }
fleet_start
st=$("$FLEET" status --name "$F" 2>&1 || true)
log "7: fleet.sh status: $(tr '\n' ';' <<<"$st")"
for i in 1 2 3; do
    check_match "7: status shows node $i holding a lease" "$st" "node$i +it_lfleet$i +port [0-9]+ +worker_id [123] \(lease held\) +running"
done
ids_of() { local i; for i in 1 2 3; do "$FLEET" psql --name "$F" "$i" -At -c "SELECT (uid_decode(snowflake_next())).worker_id"; done | tr '\n' ' '; }
first=$(ids_of)
check "7: the three nodes generate with three distinct ids of 1-3 ($first)" "$(tr ' ' '\n' <<<"$first" | grep -v '^$' | sort -u | tr '\n' ' ')" == "1 2 3 "
check "7: the aggregator's registry has the three leases" \
    "$("$FLEET" psql --name "$F" agg -At -c "SELECT string_agg(node_name, ',' ORDER BY node_name) FROM pg_idgen_leases WHERE released_at IS NULL")" == "node1,node2,node3"
# two sessions per node at once, 20,000 ids each: 120,000 ids, none twice, each of its node's id
gens=()
for i in 1 2 3; do
    for k in 1 2; do
        "$FLEET" psql --name "$F" "$i" -At -c "SELECT id, (uid_decode(id)).worker_id FROM (SELECT snowflake_next() AS id FROM generate_series(1, 20000)) s" \
            > "$TMP/fleet.$i.$k" 2>&1 &
        gens+=($!)
    done
done
wait "${gens[@]}"
check "7: 120,000 ids generated concurrently on the three nodes" "$(cat "$TMP"/fleet.?.? | grep -cE '^[0-9]+\|[0-9]+$')" -eq 120000
check "7: ... none twice" "$(cut -d'|' -f1 "$TMP"/fleet.?.? | sort | uniq -d | wc -l)" -eq 0
wrong=0
for i in 1 2 3; do
    w=$(cut -d' ' -f"$i" <<<"$first")
    wrong=$((wrong + $(cut -d'|' -f2 "$TMP/fleet.$i.1" "$TMP/fleet.$i.2" | grep -cvx "$w" || true)))
done
check "7: ... each decodes to its node's leased id" "$wrong" -eq 0
"$FLEET" stop --name "$F" fast >/dev/null 2>&1
fleet_start
check "7: restarted (fleet.sh stop, start --lease): every node has its id back (sticky)" "$(ids_of)" == "$first"
finish
