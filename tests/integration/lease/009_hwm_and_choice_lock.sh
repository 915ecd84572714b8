#!/usr/bin/env bash
# lease/009_hwm_and_choice_lock — a lease's high-water mark survives a release after a crash
# restart, a floor inherited with one worker id is never used for another, and no role without
# privileges on pg_idgen_leases can block auto mode's choice. Clusters on ports 29020-29024
# (+ IT_PORT_OFFSET): R the registry (leases off), A and B in fixed mode for worker id 3, C for
# worker id 5, D in fixed mode with its worker id set by ALTER SYSTEM, E in auto mode.
#  1. A release after a crash restart keeps the high-water mark: A generates, its reservation
#     passes, a CHECKPOINT, a backend is killed (-9): the crash restart folds the passed
#     reservation into the floor and WAL redo (from the checkpoint) does not bring the slot back.
#     A's clean stop then releases worker id 3: the row's hwm_ms must still be above A's last id
#     (a release that sent 0 would set hwm_ms to 0 and let B, its clock behind, issue ids equal
#     to A's). B then takes 3 and never issues an id at or below A's last id.
#  2. The floor inherited with one worker id does not stand for another: B releases 3; C (fixed
#     5) generates after B's bound and releases 5, whose bound is then above 3's; D takes 5, then
#     a reload of pg_idgen.worker_id makes it take 3: its generator for 3 must be raised to 3's
#     bound before it generates (comparing with the floor of 5 instead would skip the raise, and
#     D, its clock 2 s behind B's, would issue ids equal to B's: 111,865 of them when this was seen).
#  3. A role that may only connect to the registry database cannot stop auto mode's choice: it
#     holds the advisory lock the choice used to take (pg_advisory_lock(1885956460, 1)) and
#     cannot lock pg_idgen_leases; E (auto, its registry role with the documented grants) gets
#     an id meanwhile (a choice serialised by that advisory lock would fail with a statement
#     timeout).
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_lhwreg
A=it_lhwa
B=it_lhwb
C=it_lhwc
D=it_lhwd
E=it_lhwe
PR=$(itport 29020)
REG="host=127.0.0.1 port=$PR user=postgres dbname=postgres connect_timeout=2"
L0=(-c pg_idgen.lease_mode=fixed -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1 -c "pg_idgen.registry=$REG")
L=("${L0[@]}" -c pg_idgen.worker_id=3)
holds() { [ "$(lease "$1" "state || ' ' || worker_id" 2>/dev/null)" = "held $2" ]; }
reservation_passed() { [ "$(q "$A" "SELECT bool_and(reserved_until < now()) FROM snowflake_stats() WHERE worker_id = 3")" = t ]; }
sleeper_runs() { [ "$(q "$A" "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'")" = 1 ]; }
log_has() { grep -qE "$2" "$("$CLUSTER" pgdata "$1")/log/postgresql.log"; }

cluster_start "$R" 29020 -c pg_idgen.worker_id=-1
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null

# ---- 1. a release after a crash restart ----
cluster_start "$A" 29021 "${L[@]}" -c pg_idgen.node_name=a
q "$A" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "1: A holds worker id 3" state_is "$A" held
q "$A" "SELECT snowflake_next() FROM generate_series(1, 20000)" > "$TMP/a.ids"
a_last=$(sort -n "$TMP/a.ids" | tail -1)
a_last_ms=$(q "$A" "SELECT (extract(epoch FROM ts) * 1000)::bigint FROM uid_decode($a_last)")
wait_for "1: A's reservation of worker id 3 has passed" reservation_passed
q "$A" "CHECKPOINT" >/dev/null
"$CLUSTER" psql "$A" -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
BG_PIDS+=($!)
wait_for "1: a session of A sleeps" sleeper_runs
kill -9 "$(q "$A" "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'")"
wait_for "1: A restarted after the crash (its passed reservation folded into the floor)" \
    log_has "$A" 'generator state loaded: 0 worker id\(s\) with a reservation ahead, 1 folded'
wait_for "1: A holds worker id 3 again (same postmaster: a renewal)" state_is "$A" held
"$CLUSTER" stop "$A" fast >/dev/null 2>&1
check "1: A released worker id 3" "$(q "$R" "SELECT released_at IS NOT NULL FROM pg_idgen_leases WHERE worker_id = 3")" == t
check "1: the row's hwm_ms is still above A's last id ($a_last_ms ms)" \
    "$(q "$R" "SELECT hwm_ms FROM pg_idgen_leases WHERE worker_id = 3")" -gt "$a_last_ms"
cluster_start "$B" 29022 "${L[@]}" -c pg_idgen.node_name=b
q "$B" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "1: B takes worker id 3 (released)" state_is "$B" held
q "$B" "SELECT snowflake_next() FROM generate_series(1, 1000)" > "$TMP/b.ids" 2>/dev/null || true
check "1: ids of B at or below A's last id" "$(awk -v m="$a_last" '$1 <= m' "$TMP/b.ids" | wc -l)" -eq 0

# ---- 2. a floor inherited with another worker id ----
"$CLUSTER" stop "$B" fast >/dev/null 2>&1
hwm3=$(q "$R" "SELECT hwm_ms FROM pg_idgen_leases WHERE worker_id = 3 AND released_at IS NOT NULL")
check "2: B released worker id 3 with a bound" "$hwm3" -gt 0
past_hwm3() { [ "$(q "$R" "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint > $hwm3")" = t ]; }
wait_for "2: the registry's clock is past 3's bound" past_hwm3
cluster_start "$C" 29023 "${L0[@]}" -c pg_idgen.worker_id=5 -c pg_idgen.node_name=c
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "2: C holds worker id 5" holds "$C" 5
q "$C" "SELECT snowflake_next() FROM generate_series(1, 1000)" >/dev/null
"$CLUSTER" stop "$C" fast >/dev/null 2>&1
check "2: the bound of 5 is above the bound of 3" \
    "$(q "$R" "SELECT hwm_ms FROM pg_idgen_leases WHERE worker_id = 5 AND released_at IS NOT NULL")" -gt "$hwm3"
cluster_start "$D" 29024 "${L0[@]}" -c pg_idgen.node_name=d
q "$D" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "ALTER SYSTEM SET pg_idgen.worker_id = 5" "SELECT pg_reload_conf()" >/dev/null
wait_for "2: D takes worker id 5 over" holds "$D" 5
q "$D" "ALTER SYSTEM SET pg_idgen.worker_id = 3" "SELECT pg_reload_conf()" >/dev/null
wait_for "2: D takes worker id 3 over (reload)" holds "$D" 3
check "2: D's generator for worker id 3 was raised to 3's bound before it generated" \
    "$(q "$D" "SELECT count(*) FROM snowflake_stats() WHERE worker_id = 3 AND ids_issued = 0
                 AND reserved_until >= to_timestamp($hwm3 / 1000.0)")" -eq 1

# ---- 3. an advisory lock held by any role does not stop auto mode's choice ----
q "$R" "CREATE ROLE it_lhw_lease LOGIN" "$(registry_node_sql it_lhw_lease 0 1023)" \
    "CREATE ROLE it_lhw_mallory LOGIN" >/dev/null
"$CLUSTER" psql "$R" -U it_lhw_mallory -c "SELECT pg_advisory_lock(1885956460, 1), pg_sleep(600)" >/dev/null 2>&1 &
BG_PIDS+=($!)
mallory_locks() { [ "$(q "$R" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = 1885956460")" = 1 ]; }
wait_for "3: a role without privileges holds the advisory lock" mallory_locks
expect_sql_error "$R" 42501 'permission denied' "SET ROLE it_lhw_mallory" "BEGIN" "LOCK TABLE pg_idgen_leases IN SHARE ROW EXCLUSIVE MODE"
cluster_start "$E" 29025 -c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1 \
    -c "pg_idgen.registry=host=127.0.0.1 port=$PR user=it_lhw_lease dbname=postgres connect_timeout=2" -c pg_idgen.node_name=e
q "$E" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "3: E gets a worker id while that lock is held" state_is "$E" held
q "$R" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'it_lhw_mallory'" >/dev/null
finish
