#!/usr/bin/env bash
# segment/007_sync_standby: segment reservations with a synchronous standby
# (synchronous_standby_names = '*'), the one path where SyncRepWaitForLSN really waits.
#  * with the standby streaming, values come and every reservation is confirmed;
#  * with the standby down, a reservation waits; a cancel (statement_timeout) ends the statement
#    with 57014 — SyncRepWaitForLSN itself only logs a WARNING and returns, so without our check
#    the statement would go on with unconfirmed values and block again at its next reservation;
#  * pg_terminate_backend during the wait ends the session (FATAL), the server stays up;
#  * with the standby back, values continue above every value handed out before.
# On an assert-enabled server (make test-assert) it also checks that the wait runs with
# interrupts held (SyncRepWaitForLSN asserts InterruptHoldoffCount > 0).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

P=it_sync_primary
S=it_sync_standby
cluster_start "$P" 28981
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT segment_create('t', 100)" >/dev/null
standby_start "$S" "$P" 28982
q "$P" "ALTER SYSTEM SET synchronous_standby_names = '*'" "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 100); do
    [ "$(q "$P" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = 1 ] && break
    sleep 0.1
done
check "the standby is synchronous" "$(q "$P" "SELECT string_agg(sync_state, ',') FROM pg_stat_replication")" == "sync"

check "standby up: 1000 values across reservations" \
    "$(q "$P" "SELECT count(DISTINCT v) FROM (SELECT segment_next('t') v FROM generate_series(1, 1000)) s")" -eq 1000
max1=$(q "$P" "SELECT max(v) FROM (SELECT segment_next('t') v FROM generate_series(1, 10)) s")

"$CLUSTER" stop "$S" fast 2>/dev/null
# WAL past what the standby confirmed (no xid: this commit does not wait itself)
q "$P" "SELECT pg_logical_emit_message(false, 'pg_idgen', 'x')" >/dev/null
t0=$(date +%s.%N)
expect_sql_error "$P" 57014 "synchronous standbys to confirm a segment reservation was cancelled" \
    "SET statement_timeout = '1s'" "SELECT count(*) FROM (SELECT segment_next('t') v FROM generate_series(1, 1000)) s"
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%d", b - a }')
check "the cancel ends the statement (no second wait), seconds" "$secs" -lt 10
check_match "SyncRepWaitForLSN's own WARNING came first" "$LAST_ERR" "canceling wait for synchronous replication"

( q "$P" "SELECT count(*) FROM (SELECT segment_next('t') v FROM generate_series(1, 1000)) s" >"$TMP/term.out" 2>&1 || true ) &
BG_PIDS+=($!)
n=0
for _ in $(seq 1 100); do
    n=$(q "$P" "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
    [ "$n" -ge 1 ] && break
    sleep 0.1
done
check "a reservation waits for the stopped standby" "$n" -ge 1
q "$P" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'" >/dev/null
wait "${BG_PIDS[@]}" 2>/dev/null || true
check_match "terminated during the wait" "$(cat "$TMP/term.out")" "terminating connection|server closed the connection"
check "the server is up" "$(q "$P" "SELECT 1")" -eq 1

"$CLUSTER" start "$S" "$(itport 28982)" 2>/dev/null
max2=$(q "$P" "SELECT min(v) FROM (SELECT segment_next('t') v FROM generate_series(1, 10)) s")
check "standby back: values continue above every value before" "$max2" -gt "$max1"
finish
