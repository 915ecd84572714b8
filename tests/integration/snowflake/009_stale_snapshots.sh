#!/usr/bin/env bash
# snowflake/009_stale_snapshots: a REPEATABLE READ session older than a change of the extension's tables
# never acts on, or caches, the old contents (they are read by OID with a fresh snapshot).
#  A. set_worker_id(5) while a session (worker id from the table, was 3) holds an older snapshot:
#     its first id carries worker 5 (the table is read with a fresh snapshot, not the session's),
#     in the transaction and after it. (A value already cached by a transaction stays in use until
#     that transaction ends, as a changed setting applies from the next session.)
#  B. uid_layout_drop + re-register with other widths while such a session holds a snapshot: it
#     decodes with the new layout.
#  C. DROP EXTENSION commits while a session waits to read the extension's table: 55000.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_stale
cluster_start "$C" 28978
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT set_worker_id(3)" \
      "SELECT uid_layout_register('cust', '2020-01-01Z', 41, 10, 12)" >/dev/null

# session A: a psql reading from a fifo, worker id from the table (pg_idgen.worker_id unset)
mkfifo "$TMP/a.in"
"$CLUSTER" psql "$C" -At <"$TMP/a.in" >"$TMP/a.out" 2>&1 &
BG_PIDS+=($!)
exec 3>"$TMP/a.in"
send() { echo "$1" >&3; }
wait_for() { local i; for i in $(seq 1 200); do grep -q "$1" "$TMP/a.out" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
send "SET pg_idgen.worker_id = -1;"
send "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 'snap', count(*) FROM pg_class;"
wait_for '^snap'
q "$C" "SELECT set_worker_id(5)" "SELECT uid_layout_drop('cust')" \
      "SELECT uid_layout_register('cust', '2020-01-01Z', 41, 12, 10)" >/dev/null
send "SELECT 'in_tx', worker_id FROM uid_decode(snowflake_next());"
send "SELECT 'decode_in_tx', worker_id FROM uid_decode(4096, 'cust');"
send "COMMIT;"
send "SELECT 'after', worker_id FROM uid_decode(snowflake_next());"
exec 3>&-
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
val() { grep "^$1|" "$TMP/a.out" | head -1 | cut -d'|' -f2; }
check "A: inside the old snapshot, ids carry the new worker id" "$(val in_tx)" -eq 5
check "A: and after the transaction" "$(val after)" -eq 5
check "B: a fresh session decodes with the new layout (12 worker bits: 4096 -> worker 4)" "$(q "$C" "SELECT worker_id FROM uid_decode(4096, 'cust')")" -eq 4
check "B: inside the old snapshot, the re-registered layout is used (12 worker bits -> worker 4)" "$(val decode_in_tx)" -eq 4

# C. DROP EXTENSION commits while another session, which looked the extension's table up
#    before, waits for its lock: a clear 55000, not "could not open relation with OID" (XX000).
q "$C" "SELECT segment_create('c', 10)" >/dev/null
"$CLUSTER" psql "$C" -At -c "BEGIN" -c "SET client_min_messages = warning" -c "DROP EXTENSION pg_idgen" \
    -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 1 200); do
    [ "$(q "$C" "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'pg_idgen_segments' AND l.mode = 'AccessExclusiveLock' AND l.granted")" = 1 ] && break
    sleep 0.05
done
expect_sql_error "$C" 55000 "dropped by a concurrent transaction" "SELECT segment_next('c')"
wait "${BG_PIDS[@]}" 2>/dev/null || true
BG_PIDS=()
check "C: the extension is gone afterwards" "$(q "$C" "SELECT count(*) FROM pg_extension WHERE extname = 'pg_idgen'")" -eq 0
finish
