#!/usr/bin/env bash
# segment/010_sync_standby_removed: a reservation waiting for a synchronous standby that is not there
# completes when synchronous_standby_names is emptied and reloaded, as a waiting COMMIT does
# (the checkpointer releases every waiter once no standby is required); a cancel still ends
# the wait with 57014.
#  * synchronous_standby_names names a standby that never connects: a COMMIT, a snowflake_next
#    (its time reservation), a segment_next (a new segment) and a keyed_next (a new bound) wait;
#  * the setting is reset and reloaded: each of the four completes, the three functions with a
#    value (no 57014: nobody cancelled);
#  * the setting is back: three new waits, each ended by pg_cancel_backend with 57014.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

P=it_syncrel
cluster_start "$P" 29040
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT segment_create('t', 100)" "SELECT segment_create('t2', 100)" \
    "SELECT keyed_create('k')" "SELECT keyed_create('k2')" \
    "CREATE TABLE c (i int)" >/dev/null

sync_names() {
    q "$P" "ALTER SYSTEM SET synchronous_standby_names = '$1'" "SELECT pg_reload_conf()" >/dev/null
    # the checkpointer applies it; a new session reads it at start
    wait_until 10 "synchronous_standby_names = '$1'" names_are "$1"
}
names_are() { [ "$(q "$P" "SHOW synchronous_standby_names")" = "$1" ]; }
waiting() { q "$P" "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'"; }
waiters_are() { [ "$(waiting)" -eq "$1" ]; }
# client NAME SQL...: runs in the background, output (with the SQLSTATE of an error) and exit
# code in $TMP/NAME.out and $TMP/NAME.rc
client() {
    local name=$1; shift
    ( rc=0; PGAPPNAME=$name q "$P" '\set VERBOSITY verbose' "$@" >"$TMP/$name.out" 2>&1 || rc=$?
      echo "$rc" >"$TMP/$name.rc" ) &
    BG_PIDS+=($!)
}
done_all() { local n; for n in "$@"; do [ -f "$TMP/$n.rc" ] || return 1; done; }

sync_names absent_standby
# snowflake_next waits when its time reservation (pg_idgen.reserve_ms = 1 s) runs out
client commit "INSERT INTO c VALUES (1)"
client sf "SELECT pg_sleep(1.5)" "SELECT snowflake_next()"
client seg "SELECT segment_next('t')"
client kd "SELECT keyed_next('k', 1)"
wait_until 20 "the COMMIT and the three functions wait for the absent standby" waiters_are 4
check "waiting for the absent standby" "$(waiting)" -eq 4
sleep 0.5   # nothing ends by itself: still 4
check "still waiting (no timeout, no standby)" "$(waiting)" -eq 4

q "$P" "ALTER SYSTEM RESET synchronous_standby_names" "SELECT pg_reload_conf()" >/dev/null
wait_until 20 "every waiter ends" done_all commit sf seg kd
for n in commit sf seg kd; do
    check "$n: completes after the reload (exit code)" "$(cat "$TMP/$n.rc")" -eq 0
    check "$n: no cancel" "$(grep -c 57014 "$TMP/$n.out" || true)" -eq 0
done
check "COMMIT: the row is there" "$(q "$P" "SELECT count(*) FROM c")" -eq 1
check "snowflake_next: a value" "$(tail -n1 "$TMP/sf.out")" -gt 0
check "segment_next: a value" "$(tail -n1 "$TMP/seg.out")" -ge 1
check "keyed_next: a value" "$(tail -n1 "$TMP/kd.out")" -ge 1
check "the server is up, nobody waits" "$(waiting)" -eq 0

# a real cancel still ends the wait with 57014
rm -f "$TMP"/*.rc
sync_names absent_standby
client sf2 "SELECT pg_sleep(1.5)" "SELECT snowflake_next()"
client seg2 "SELECT segment_next('t2')"
client kd2 "SELECT keyed_next('k2', 1)"
wait_until 20 "the three functions wait again" waiters_are 3
q "$P" "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'" >/dev/null
wait_until 20 "every cancelled waiter ends" done_all sf2 seg2 kd2
for n in sf2 seg2 kd2; do
    check "$n: cancelled (exit code)" "$(cat "$TMP/$n.rc")" -ne 0
    check_match "$n: 57014, the wait was cancelled" "$(cat "$TMP/$n.out")" \
        "ERROR:  57014: canceling statement: the wait for synchronous standbys to confirm .* was cancelled"
done
check "sf2: one WARNING of SyncRepWaitForLSN, not two" \
    "$(grep -c "canceling wait for synchronous replication" "$TMP/sf2.out" || true)" -eq 1
q "$P" "ALTER SYSTEM RESET synchronous_standby_names" "SELECT pg_reload_conf()" >/dev/null
finish
