#!/usr/bin/env bash
# segment/004_standby: a streaming standby made with pg_basebackup -R on another port.
#  * on the hot standby, segment_next() fails with SQLSTATE 25006 and a clear message, and so
#    do the configuration functions;
#  * the old primary hands out values, the standby catches up, the primary crashes (stop -m
#    immediate), the standby is promoted: values on the promoted node are greater than every
#    value the old primary handed out (the backing sequence's state comes from WAL, logged
#    ahead of the values and flushed before any value was handed out).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

P=it_seg_primary
S=it_seg_standby
cluster_start "$P" 28975
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "SELECT segment_create('ha', 1000)" "SELECT segment_create('ha_small', 10)" >/dev/null
q "$P" "SELECT segment_next('ha') FROM generate_series(1, 500)" >/dev/null

"$CLUSTER" destroy "$S" >/dev/null 2>&1 || true
STARTED_CLUSTERS+=("$S")
SDATA=$("$CLUSTER" pgdata "$S")
mkdir -p "$(dirname "$SDATA")"; chown postgres:postgres "$(dirname "$SDATA")" 2>/dev/null || true
runuser -u postgres -- "$PGBIN/pg_basebackup" -h "$("$CLUSTER" sockdir "$P")" -p "$("$CLUSTER" port "$P")" \
    -U postgres -D "$SDATA" -R -X stream -c fast
cluster_start "$S" 28976
check "standby is in recovery" "$(q "$S" "SELECT pg_is_in_recovery()")" == "t"

expect_sql_error "$S" 25006 "cannot hand out segment values on a standby server" "SELECT segment_next('ha')"
check_match "the error has a hint" "$LAST_ERR" "HINT: .*primary"
expect_sql_error "$S" 25006 "standby" "SELECT segment_create('x')"
check "segment_status readable on the standby" "$(q "$S" "SELECT count(*) FROM segment_status")" -eq 2

# the primary hands out more values, in committed and uncommitted work
max1=$(q "$P" "SELECT max(segment_next('ha')) FROM generate_series(1, 20000)")
max2=$(q "$P" "BEGIN" "SELECT max(segment_next('ha_small')) FROM generate_series(1, 5000)" "ROLLBACK" | grep -E '^[0-9]+$' | head -1)
# a checkpoint on the primary, then more values: nextval's first WAL record after a checkpoint
q "$P" "CHECKPOINT" >/dev/null
max1=$(q "$P" "SELECT max(segment_next('ha')) FROM generate_series(1, 3000)")
lsn=$(q "$P" "SELECT pg_current_wal_flush_lsn()")
for i in $(seq 1 100); do
    caught=$(q "$S" "SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn")
    [ "$caught" = t ] && break
    sleep 0.1
done
check "standby replayed the primary's WAL" "$caught" == "t"
"$CLUSTER" stop "$P" immediate >/dev/null 2>&1
q "$S" "SELECT pg_promote(true, 60)" >/dev/null
check "promoted" "$(q "$S" "SELECT pg_is_in_recovery()")" == "f"
a1=$(q "$S" "SELECT segment_next('ha')")
a2=$(q "$S" "SELECT segment_next('ha_small')")
check "promoted node: ha continues above the old primary ($a1 > $max1)" "$a1" -gt "$max1"
check "promoted node: ha_small continues above values of a rolled-back transaction ($a2 > $max2)" "$a2" -gt "$max2"
finish
