#!/usr/bin/env bash
# keyed/002_section_bounds: a keyed space's durable bounds are per bucket of sections (section
# mod 1024), so after a restart a key continues above its own section's bound, not above the
# space's busiest key; and each bucket's bound survives every event on its own. Ports 29090-29091.
# Space 'jump' (step 100, sections of 10 keys): key 1 takes 5 values (bucket 0's bound: 100), key
# 50000 (section 5000, bucket 904) takes 100,000 (its bound: 100,000). Then, each event followed by
# the exact next values:
#  immediate stop (values of an open transaction: only keyed_next's own WAL flush made them
#    durable; wal_writer_delay = 10 s): key 1 -> 101, key 3 (same section) -> 101, key 50000 ->
#    100,001, key 25 (a section never used) -> 1;
#  kill -9 of the postmaster, then a start: each bucket above its own bound again;
#  a synchronous standby promoted after an immediate stop of the primary;
#  pg_dump of the promoted node restored into a fresh database.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

P=it_ksec
S=it_ksec_stby
OPTS=(-c wal_writer_delay=10000 -c checkpoint_timeout=3600 -c pg_idgen.keyed_cache_size=1000)
cluster_start "$P" 29090 "${OPTS[@]}"
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "SELECT keyed_create('jump', step => 100, section_size => 10)" >/dev/null
check "a space has 1,024 durable bounds, all 0" \
    "$(q "$P" "SELECT count(*) || ' ' || max(bound) FROM pg_idgen_keyed_bounds WHERE space = 'jump'")" == "1024 0"

# next values of keys 1, 3, 50000, 25 (in that order) on NODE [DB]
nexts() { qdb "$1" "${2:-postgres}" "SELECT keyed_next('jump', 1) || ' ' || keyed_next('jump', 3) || ' ' || keyed_next('jump', 50000) || ' ' || keyed_next('jump', 25)"; }
wait_up() {
    local node=$1 i
    for i in $(seq 1 200); do
        q "$node" "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}
# load in an open transaction that never commits (no commit flushes its WAL), then EVENT
open_load() {
    rm -f "$TMP/open.out"
    "$CLUSTER" psql "$1" -At -c "BEGIN" \
        -c "SELECT max(keyed_next('jump', 1)) FROM generate_series(1, 5)" \
        -c "SELECT max(keyed_next('jump', 50000)) FROM generate_series(1, 100000)" \
        -c "SELECT pg_sleep(600)" >"$TMP/open.out" 2>/dev/null &
    BG_PIDS+=($!)
    local i
    for i in $(seq 1 600); do
        [ "$(grep -cE '^[0-9]+$' "$TMP/open.out" 2>/dev/null || true)" -ge 2 ] && return 0
        sleep 0.05
    done
    return 1
}

open_load "$P"
check "the open transaction's last values: key 1, key 50000" "$(head -2 "$TMP/open.out" | xargs)" == "5 100000"
check "bounds in memory before the event: the busiest bucket's" \
    "$(q "$P" "SELECT bound FROM keyed_status WHERE space = 'jump'")" -eq 100000
"$CLUSTER" stop "$P" immediate >/dev/null 2>&1
cluster_start "$P" 29090 "${OPTS[@]}"
check "immediate stop: each key continues above its own section's bound (1, 3, 50000, 25)" \
    "$(nexts "$P")" == "101 101 100001 1"
check "durable bounds after the restart: buckets 0, 2 and 904 (the others untouched)" \
    "$(q "$P" "SELECT string_agg(bucket || ':' || bound, ' ' ORDER BY bucket) FROM pg_idgen_keyed_bounds WHERE space = 'jump' AND bound > 0")" == "0:200 2:100 904:100100"

# ---- kill -9 of the postmaster (and its backends) ----
open_load "$P"
pids=$(q "$P" "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
kill -9 "$(head -1 "$("$CLUSTER" pgdata "$P")/postmaster.pid")"
for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
"$CLUSTER" stop "$P" immediate >/dev/null 2>&1 || true
for i in $(seq 1 100); do
    cluster_start "$P" 29090 "${OPTS[@]}" >/dev/null 2>&1 && break
    sleep 0.2
done
wait_up "$P"
# key 1 was at 101, took 5 more (106, bound 200): continues at 201; key 3 at 101 -> 201 too;
# key 50000 was at 100,001, took 100,000 more (200,001, bound 200,100): 200,101; key 25 at 1
# (bucket 2's bound 100): 101
check "kill -9 of the postmaster: each key above its own bucket's bound" "$(nexts "$P")" == "201 201 200101 101"

# ---- synchronous standby, primary stopped immediately with an open transaction, promotion ----
standby_start "$S" "$P" 29091
q "$P" "ALTER SYSTEM SET synchronous_standby_names = '*'" "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 100); do
    [ "$(q "$P" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = 1 ] && break
    sleep 0.1
done
check "the standby is synchronous" "$(q "$P" "SELECT string_agg(sync_state, ',') FROM pg_stat_replication")" == "sync"
check "a standby's keyed_last: the key's bucket's durable bound as replayed" \
    "$(q "$S" "SELECT keyed_last('jump', 1) || ' ' || keyed_last('jump', 50000)")" == "300 200200"
open_load "$P"
"$CLUSTER" stop "$P" immediate >/dev/null 2>&1
q "$S" "SELECT pg_promote(true, 60)" >/dev/null
check "the standby is promoted" "$(q "$S" "SELECT pg_is_in_recovery()")" == "f"
# key 1 was at 201, +5 (206, bound 300): 301; key 50000 at 200,101, +100,000 (300,101, bound
# 300,200): 300,201; key 25 at 101 (bound 200): 201
check "promotion of the synchronous standby: each key above its own bucket's bound" "$(nexts "$S")" == "301 301 300201 201"

# ---- pg_dump of the promoted node, restored into a fresh database ----
SOCK=$("$CLUSTER" sockdir "$S"); PORT=$("$CLUSTER" port "$S")
"$PGBIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$TMP/db.dump" postgres
q "$S" "CREATE DATABASE restored" >/dev/null
"$PGBIN/pg_restore" -h "$SOCK" -p "$PORT" -U postgres -d restored --exit-on-error "$TMP/db.dump"
check "restored: the space's 1,024 bounds" \
    "$(qdb "$S" restored "SELECT count(*) FROM pg_idgen_keyed_bounds WHERE space = 'jump'")" -eq 1024
# bounds at the dump: bucket 0: 400, bucket 2: 300, bucket 904: 300,300
check "pg_dump/pg_restore: each key above its own bucket's bound" "$(nexts "$S" restored)" == "401 401 300301 301"
check "the dumped database goes on from where it was" "$(nexts "$S")" == "302 302 300202 202"
finish
