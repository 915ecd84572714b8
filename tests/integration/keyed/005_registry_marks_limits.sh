#!/usr/bin/env bash
# keyed/005_registry_marks_limits — what a role short of superuser can do to the registry marks of
# keyed spaces created with registry => true, on the node and in the registry. Two clusters on
# ports 29185-29186 (+ IT_PORT_OFFSET): R the registry (node role node_a for worker id 1), P a node
# (fixed lease of worker id 1 through R) with a space 'reg' (registry => true, step 1: every value
# is a raise, a registry round trip) that the ordinary role app may use.
#  1. The node's request slots (64 for the instance) come back when their backend stops waiting:
#     with the registry blocked (a lock on pg_idgen_keyed_marks; the lease worker's registry
#     timeout is about 10 s with lease_ttl 40), 80 sessions of app wait, and are cancelled
#     (pg_cancel_backend: an ERROR), then 80 more are terminated (pg_terminate_backend: a FATAL, no
#     unwinding); each time, once the registry answers, another role's raise is served at once —
#     not refused with 55000 "no free request slot" because every slot still holds an abandoned
#     request (which app could repeat to keep every registry space of the instance from raising).
# 1b. A role without USAGE on a registry space that is not in use yet gets 42501 before anything is
#     claimed or asked of the registry (it neither waits for a blocked registry nor takes an
#     entry of the node's shared table of spaces).
#  2. The registry's marks tables cannot be filled by a node role: it owns the marks of at most
#     twice as many system identifiers as it has worker ids (53400 beyond: reading or writing the
#     marks of another one), and writes marks of at most 1024 (database, space) pairs per system
#     identifier (53400 beyond); a superuser may do either. The function's arguments: NULLs, arrays of different lengths, a million elements,
#     NULL elements, a bucket out of range — each a real SQLSTATE, never XX000.
# Pass/fail never depends on timing: waits poll for states (bounded).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_kmlreg
P=it_kmlp
PR=$(itport 29185)
REG="host=127.0.0.1 port=$PR user=node_a dbname=postgres connect_timeout=2"
rq() { q "$R" "$@"; }
# sqlstate C ROLE SQL...: the SQLSTATE of the first error of SQL run in cluster C as ROLE (empty: none)
sqlstate() {
    local c=$1 role=$2 args=() s; shift 2
    for s in "$@"; do args+=(-c "$s"); done
    "$CLUSTER" psql "$c" -U "$role" -At -v VERBOSITY=verbose -c '\set VERBOSITY verbose' "${args[@]}" 2>&1 \
        | grep -oE 'ERROR: +[0-9A-Z]{5}' | head -1 | grep -oE '[0-9A-Z]{5}$' || true
}
# block_registry / unblock_registry: a session of R holding pg_idgen_keyed_marks locked (every
# marks call of the lease worker waits for it, until the worker's own timeout)
BLOCKER=
block_registry() {
    "$CLUSTER" psql "$R" -q -c "SET application_name = 'marks_blocker'" \
        -c "BEGIN" -c "LOCK TABLE pg_idgen_keyed_marks IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(300)" >/dev/null 2>&1 &
    BLOCKER=$!
    poll 400 eval '[ "$(rq "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.application_name = '"'"'marks_blocker'"'"' AND l.mode = '"'"'AccessExclusiveLock'"'"' AND l.granted")" = 1 ]'
}
unblock_registry() {
    rq "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'marks_blocker'" >/dev/null
    wait "$BLOCKER" 2>/dev/null || true
}
# served: a raise by the superuser (another role than app's) is answered, within the 15 s wait
served() { q "$P" "SELECT keyed_next('reg', 777000) > 0" 2>&1; }

# ---- the registry and the node ----
cluster_start "$R" 29185 -c pg_idgen.worker_id=-1
rq "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE ROLE node_a LOGIN" >/dev/null
"$CLUSTER" psql "$R" -v ON_ERROR_STOP=1 -q <<<"$(registry_node_sql node_a 1 1);
    GRANT EXECUTE ON FUNCTION pg_idgen_keyed_marks(text, oid, text, int[], bigint[]) TO node_a;" >/dev/null
cluster_start "$P" 29186 -c max_connections=150 -c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=1 \
    -c pg_idgen.lease_ttl=40 -c pg_idgen.lease_margin=1 -c pg_idgen.node_name=n1 -c "pg_idgen.registry=$REG"
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE ROLE app LOGIN" \
    "SELECT keyed_create('reg', 1, 100, registry => true)" "SELECT keyed_grant('reg', 'app')" \
    "SELECT keyed_create('reg2', 1, 100, registry => true)" "CREATE ROLE nousage LOGIN" >/dev/null
check "the space answers (its marks read and raised through the registry)" "$(q "$P" "SELECT keyed_next('reg', 1)")" -ge 1

# ---- 1. the request slots come back ----
# wait_then SIGNAL: 80 sessions of app call keyed_next on 'reg' while the registry is blocked; once
# every one waits for the lease worker, SIGNAL (pg_cancel_backend: an ERROR; pg_terminate_backend:
# a FATAL) stops them all; then the registry is unblocked
wait_then() {
    local fn=$1 i p pids=()
    block_registry && ok "1 ($fn): the registry's marks table is locked" || ko "1 ($fn): could not lock the registry's marks table"
    for i in $(seq 1 80); do
        "$CLUSTER" psql "$P" -U app -At -c "SELECT keyed_next('reg', 1)" >/dev/null 2>&1 &
        pids+=($!)
    done
    waiting() { [ "$(q "$P" "SELECT count(*) FROM pg_stat_activity WHERE usename = 'app' AND wait_event_type = 'Extension'")" -ge 80 ]; }
    poll 600 waiting && ok "1 ($fn): 80 sessions of app wait for the lease worker" || ko "1 ($fn): app's 80 sessions are not all waiting"
    check "1 ($fn): the 80 waiting sessions are stopped" \
        "$(q "$P" "SELECT count(*) FILTER (WHERE $fn(pid)) FROM pg_stat_activity WHERE usename = 'app'")" -eq 80
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    unblock_registry
}
wait_then pg_cancel_backend
r=$(served || true)
check "1: after 80 calls cancelled while waiting, another role's raise is served (no slot left taken)" "$r" == t
[ "$r" = t ] || log "    got: $r"
# whatever the cancelled calls left taken is reusable 20 s after it was answered: start the next
# scenario from free slots
for i in 1 2 3 4; do [ "$(served || true)" = t ] && break; done
wait_then pg_terminate_backend
r=$(served || true)
check "1: after 80 sessions terminated while waiting, another role's raise is served" "$r" == t
[ "$r" = t ] || log "    got: $r"

# ---- 1b. a role without USAGE asks nothing of the registry ----
block_registry || true
check "1b: a role without USAGE on an unused registry space, registry blocked: 42501 at once (no request, no wait for the registry)" \
    "$(sqlstate "$P" nousage "SELECT keyed_next('reg2', 1)")" == 42501
unblock_registry
check "1b: registry answering: 42501" "$(sqlstate "$P" nousage "SELECT keyed_next('reg2', 1)")" == 42501
check "1b: and the space took no entry of the shared table on its behalf (keyed_status.bound is NULL)" \
    "$(q "$P" "SELECT bound IS NULL FROM keyed_status WHERE space = 'reg2'")" == t
check "1b: a role without USAGE on keyed_last: 42501" "$(sqlstate "$P" nousage "SELECT keyed_last('reg2', 1)")" == 42501

# ---- 2. the registry's tables ----
check "2: node_a already owns the marks of P's system identifier (its lease worker wrote them)" \
    "$(rq "SELECT count(*) FROM pg_idgen_keyed_mark_owners WHERE role_name = 'node_a'")" -eq 1
check "2: node_a writes the marks of a second system identifier (twice its one worker id)" \
    "$(sqlstate "$R" node_a "SELECT count(*) FROM pg_idgen_keyed_marks('1001', 5, 's', '{0}', '{10}')")" == ""
check "2: not of a third, not even to read them: 53400" \
    "$(sqlstate "$R" node_a "SELECT count(*) FROM pg_idgen_keyed_marks('1002', 5, 's', '{}', '{}')")" == 53400
sqlstate "$R" node_a "SELECT count(*) FROM generate_series(1003, 1200) g, pg_idgen_keyed_marks(g::text, 5, 's', '{0}', '{10}')" >/dev/null
check "2: node_a owns the marks of 2 system identifiers, not more" \
    "$(rq "SELECT count(*) FROM pg_idgen_keyed_mark_owners WHERE role_name = 'node_a'")" -eq 2
check "2: node_a writes marks of 1023 more (database, space) pairs under it (1024 in all)" \
    "$(sqlstate "$R" node_a "SELECT count(*) FROM generate_series(1, 1023) g, pg_idgen_keyed_marks('1001', 5, 's' || g, '{0,1,2}', '{1,2,3}')")" == ""
check "2: the 1025th (database, space) of one system identifier: 53400" \
    "$(sqlstate "$R" node_a "SELECT count(*) FROM pg_idgen_keyed_marks('1001', 6, 's', '{0}', '{1}')")" == 53400
sqlstate "$R" node_a "SELECT count(*) FROM generate_series(1, 1100) g, pg_idgen_keyed_marks('1001', 7, 's' || g, '{0}', '{1}')" >/dev/null
check "2: (database, space) pairs under it: 1024, not more" \
    "$(rq "SELECT count(DISTINCT (database, space)) FROM pg_idgen_keyed_marks WHERE system_identifier = 1001")" -eq 1024
check "2: reading the marks of a new space is no write: allowed" \
    "$(sqlstate "$R" node_a "SELECT count(*) FROM pg_idgen_keyed_marks('1001', 8, 's', '{}', '{}')")" == ""
check "2: a space already there is still raised" \
    "$(sqlstate "$R" node_a "SELECT count(*) FROM pg_idgen_keyed_marks('1001', 5, 's', '{0}', '{11}')")" == ""
check "2: a superuser is not limited" \
    "$(sqlstate "$R" postgres "SELECT count(*) FROM generate_series(1, 3) g, pg_idgen_keyed_marks((5000 + g)::text, 5, 's', '{0}', '{10}')")" == ""
check "2: NULL arrays: 22004" \
    "$(sqlstate "$R" node_a "SELECT * FROM pg_idgen_keyed_marks('1001', 5, 's', NULL, '{1}')")" == 22004
check "2: arrays of different lengths: 22023" \
    "$(sqlstate "$R" node_a "SELECT * FROM pg_idgen_keyed_marks('1001', 5, 's', '{0,1}', '{1}')")" == 22023
check "2: NULL elements are skipped" \
    "$(sqlstate "$R" node_a "SELECT * FROM pg_idgen_keyed_marks('1001', 5, 's', '{NULL,3}', '{5,NULL}')")" == ""
check "2: a million elements: one row per bucket, no error" \
    "$(rq "SET SESSION AUTHORIZATION node_a" "SELECT count(*) FROM pg_idgen_keyed_marks('1001', 5, 's', (SELECT array_agg(g % 1024) FROM generate_series(1, 1000000) g), (SELECT array_agg(g::bigint) FROM generate_series(1, 1000000) g))" | tail -1)" -eq 1024
check "2: a bucket out of range: 22023" \
    "$(sqlstate "$R" node_a "SELECT * FROM pg_idgen_keyed_marks('1001', 5, 's', '{1024}', '{1}')")" == 22023
check "2: a system identifier that is no number: 22023" \
    "$(sqlstate "$R" node_a "SELECT * FROM pg_idgen_keyed_marks('abc', 5, 's', '{}', '{}')")" == 22023
finish
