#!/usr/bin/env bash
# snowflake/005_state_file: the snowflake generator's durable state ($PGDATA/pg_idgen/snowflake.state).
#  A. worker slots: 256 distinct worker ids fill the slots (the 257th: 53400); a clean restart
#     frees every slot whose reservation has passed (folded into the floor), so a new worker id
#     works again; ids of an old worker id continue above the ones before.
#  B. integrity: a truncated or edited file stops the server from starting (it says why); the
#     restored file starts it; a missing file starts from the clock with a clear log line.
#  C. crash restart (kill -9 of a backend): the postmaster does not rewrite the file from the
#     shared memory it has just declared untrustworthy; the file is byte-identical afterwards.
#  D. redo writes the file before raising memory, and a failed write stops recovery: a state
#     file behind the WAL (restored from an older copy) in a read-only directory makes recovery
#     fail; with the directory writable it recovers, and ids continue above every id before.
#  E. pg_idgen_state_import takes the worker-id slots of a state all or none: a state naming one
#     worker id more than the slots free here fails (53400) and takes no slot (the slots in use
#     are as before); then a state naming exactly as many other worker ids as are free is
#     imported, and takes them.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_state
PORT=28947
OPTS=(-c pg_idgen.reserve_ms=100)
cluster_start "$C" "$PORT" "${OPTS[@]}"
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
DATA=$("$CLUSTER" pgdata "$C")
STATE=$DATA/pg_idgen/snowflake.state
up() { "$CLUSTER" start "$C" "$PORT" "${OPTS[@]}" >/dev/null 2>&1; }
# past_reservations: the server's clock is past every worker id's reservation (reserve_ms = 100
# ahead of its last id), so that a restart folds them all — bounded, 5 s
past_reservations() {
    local i
    for i in $(seq 1 250); do
        [ "$(q "$C" "SELECT coalesce(bool_and(reserved_until IS NULL OR reserved_until < clock_timestamp()), true) FROM snowflake_stats()")" = t ] && return 0
        sleep 0.02
    done
    ko "the reservations did not end within 5 s"
}
gen_as() { q "$C" "SET pg_idgen.worker_id = $1" "SELECT max(snowflake_next()) FROM generate_series(1, ${2:-1})" | tail -1; }

# ---- A ----
sql=()
for w in $(seq 0 255); do sql+=("SET pg_idgen.worker_id = $w" "SELECT snowflake_next()"); done
q "$C" "${sql[@]}" >/dev/null
before5=$(gen_as 5 100)
expect_sql_error "$C" 53400 "at most 256 distinct worker ids" "SET pg_idgen.worker_id = 300; SELECT snowflake_next()"
"$CLUSTER" restart "$C" "${OPTS[@]}" >/dev/null
past_reservations   # the restart folds only reservations that ended
"$CLUSTER" restart "$C" "${OPTS[@]}" >/dev/null
check_match "A: the restart folded the old worker ids into the floor" "$("$CLUSTER" log "$C" 200 | grep 'generator state loaded' | tail -1)" 'loaded: 0 worker id\(s\) with a reservation ahead, 256 folded'
check "A: a 257th worker id works after the restart" "$(gen_as 300)" -gt 0
after5=$(gen_as 5)
check "A: worker 5 continues above its ids before the restart" "$after5" -gt "$before5"
check "A: the state file keeps worker 5 and 300 only" "$(grep -c '^worker ' "$STATE")" -eq 2

# ---- B ----
"$CLUSTER" stop "$C" >/dev/null
cp -p "$STATE" "$TMP/good.state"
head -c -5 "$TMP/good.state" >"$STATE"
if up; then check "B: a truncated state file is refused" 1 -eq 0; else check "B: a truncated state file is refused" 0 -eq 0; fi
check_match "B: the log says why" "$("$CLUSTER" log "$C" 40)" 'state file .* is corrupt: the checksum line is missing'
sed 's/^worker 5 \([0-9]*\)/worker 5 1/' "$TMP/good.state" >"$STATE"
if up; then check "B: an edited state file is refused" 1 -eq 0; else check "B: an edited state file is refused" 0 -eq 0; fi
check_match "B: checksum mismatch reported" "$("$CLUSTER" log "$C" 40)" 'corrupt: checksum mismatch'
cp -p "$TMP/good.state" "$STATE"
up
check "B: the restored file starts the server" "$(gen_as 5)" -gt "$after5"
"$CLUSTER" stop "$C" >/dev/null
rm -f "$STATE"
up
check_match "B: a missing file is said in the log" "$("$CLUSTER" log "$C" 60)" 'no generator state file .* snowflake ids start from the system clock'
check "B: the file exists again at once" "$(test -s "$STATE" && echo 1 || echo 0)" -eq 1

# ---- C ----
gen_as 7 1000 >/dev/null
past_reservations
cp "$STATE" "$TMP/before_crash.state"
"$CLUSTER" psql "$C" -At -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
BG_PIDS+=($!)
bpid=
for i in $(seq 1 200); do
    bpid=$(q "$C" "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(60)%' LIMIT 1")
    [ -n "$bpid" ] && break; sleep 0.05
done
kill -9 "$bpid"
for i in $(seq 1 100); do q "$C" "SELECT 1" >/dev/null 2>&1 && break; sleep 0.2; done
check "C: the state file is byte-identical after the crash restart" "$(cmp -s "$STATE" "$TMP/before_crash.state" && echo 1 || echo 0)" -eq 1

# ---- D ----
gen_as 7 10 >/dev/null
cp "$STATE" "$TMP/old.state"
past_reservations
top=$(gen_as 7 5000)
"$CLUSTER" stop "$C" immediate >/dev/null
cp "$TMP/old.state" "$STATE"
chmod 555 "$DATA/pg_idgen"
if up; then check "D: recovery refuses to go on when it cannot write the state file" 1 -eq 0; else check "D: recovery refuses to go on when it cannot write the state file" 0 -eq 0; fi
check_match "D: the log says so" "$("$CLUSTER" log "$C" 60)" 'PANIC: .*could not write pg_idgen state file'
chmod 700 "$DATA/pg_idgen"
up
check "D: after recovery, ids continue above every id before" "$(gen_as 7)" -gt "$top"

# ---- E ----
slots_used() { q "$C" "SELECT count(worker_id) FROM pg_idgen_snowflake_marks()"; }
# import_sql FIRST N: the import of this database's state as if from another one, naming N worker
# ids this instance has no slot for (FIRST …), their ids all in the past
import_sql() {
    echo "SELECT count(*) FROM pg_idgen_state_import(jsonb_set(jsonb_set(pg_idgen_state_export(), '{database}', '\"elsewhere\"'),
        '{snowflake}', (SELECT jsonb_agg(jsonb_build_object('worker_id', w, 'until_ms', 1000)) FROM generate_series($1, $1 + $2 - 1) w)))"
}
used=$(slots_used)
free=$((256 - used))
log "E: $used worker-id slots in use, $free free"
expect_sql_error "$C" 53400 "256" "$(import_sql 600 $((free + 1)))"
check "E: the refused import took no slot" "$(slots_used)" -eq "$used"
check "E: an import naming as many other worker ids as slots are free works" "$(q "$C" "$(import_sql 320 "$free")")" -gt 0
check "E: ... and takes them all" "$(slots_used)" -eq 256
finish
