#!/usr/bin/env bash
# snowflake/008_promotion — a streaming standby promoted with its clock behind: no id at or below the old
# primary's.
#  1. primary (worker id 7) generates ids continuously (one session, batches of 1000, every id
#     kept in return order); meanwhile `cluster.sh standby` takes pg_basebackup -R -X stream of it
#     into another cluster directory and starts it on another port: preloaded, worker id 7, under
#     libfaketime (offset +0).
#  2. hot standby, replayed up to the primary's WAL position after the last id: pg_is_in_recovery,
#     snowflake_next() -> 25006 "during recovery", set_worker_id() / clear_worker_id() -> 25006
#     (what must write fails with 25006 on a standby), snowflake_worker(), uid_layouts()
#     and uid_decode (server layout and a custom layout registered on the primary) work,
#     snowflake_stats() shows worker 7's reserved_until >= the last id's time (replayed WAL).
#  3. the primary generates some more; its largest id M is recorded, the standby replays up to
#     the primary's WAL position, the primary is stopped (immediate).
#  4. the standby's clock is set 30 s behind and it is promoted (pg_ctl promote -w): reserved_until
#     >= time(M); with the default max_drift_ms (1000) snowflake_next() -> 55000 "ahead of the
#     system clock".
#  5. restart of the promoted node with -c pg_idgen.max_drift_ms=120000 (still 30 s behind):
#     100,000 ids, all > M, all distinct (also from every id the old primary issued), increasing,
#     all worker 7.
# Pass/fail never depends on timing: waits poll for a state (with a generous limit).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

P=it_prim
SB=it_stby
W=7
FT=$TMP/faketime.standby                  # the standby's clock offset (explicit file: kept across restarts)
echo "+0" >"$FT"; chmod 644 "$FT"
OLD=$TMP/primary.ids                      # phase <tab> batch <tab> g <tab> id, in return order
: >"$OLD"

# gen PHASE STOPFILE: ONE session on the primary, batches of 1000 ids until STOPFILE exists
# (and at least 3 batches ran) -> $TMP/PHASE.out / .err; any error fails the session
gen() {
    local phase=$1 stop=$2 b=0
    {
        while [ ! -e "$stop" ] || [ $b -lt 3 ]; do
            b=$((b + 1))
            echo "COPY (SELECT '$phase', $b, g, snowflake_next() FROM generate_series(1, 1000) g) TO STDOUT;"
            sleep 0.05
        done
    } | "$CLUSTER" psql "$P" >"$TMP/$phase.out" 2>"$TMP/$phase.err"
}
# await_lines FILE N: FILE has at least N lines (ids) — bounded, 60 s
await_lines() {
    local i
    for i in $(seq 1 1200); do [ "$(wc -l <"$1" 2>/dev/null || echo 0)" -ge "$2" ] && return 0; sleep 0.05; done
    ko "$(basename "$1"): $2 ids not reached within 60 s"
}
max_old() { awk -F'\t' 'BEGIN { m = 0 } $4 + 0 > m + 0 { m = $4 } END { print m }' "$OLD"; }
# wait_replay LSN: the standby replayed at least up to LSN
wait_replay() {
    local lsn=$1 i
    for i in $(seq 1 1200); do
        [ "$(q "$SB" "SELECT pg_wal_lsn_diff(pg_last_wal_replay_lsn(), '$lsn') >= 0")" = t ] && return 0
        sleep 0.05
    done
    return 1
}
# skew NAME: server clock - real clock, ms
skew() { q "$1" "SELECT round(extract(epoch FROM clock_timestamp()) * 1000)::bigint - $(date +%s%3N)"; }
abs() { local v=$1; echo $(( v < 0 ? -v : v )); }
stats() { q "$1" "SELECT 'ids_issued=' || ids_issued || ' logical_time=' || coalesce(logical_time::text, '-') || ' lead_ms=' || coalesce(lead_ms::text, '-') || ' reserved_until=' || coalesce(reserved_until::text, '-') FROM snowflake_stats() WHERE worker_id = $W"; }
# reserved_ge NAME TS: worker W's reserved_until >= TS ('t' / 'f' / '' when there is no row)
reserved_ge() { q "$1" "SELECT reserved_until >= '$2'::timestamptz FROM snowflake_stats() WHERE worker_id = $W"; }

# ---- 1. primary generating, standby created meanwhile ----
cluster_start "$P" 28955 -c pg_idgen.worker_id=$W
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT uid_layout_register('legacy', '2016-09-20 00:00:00+08', 29, 21, 13, unit_ms => 1000)" >/dev/null
rm -f "$TMP/stop1"
gen G1 "$TMP/stop1" &
gp=$!; BG_PIDS+=("$gp")
for i in $(seq 1 200); do [ -s "$TMP/G1.out" ] && break; sleep 0.05; done   # generation under way
t0=$(date +%s.%N)
FAKETIME_FILE=$FT standby_start "$SB" "$P" 28956 -c pg_idgen.worker_id=$W
log "1: pg_basebackup + standby start: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s (primary generating meanwhile)"
await_lines "$TMP/G1.out" $(( $(wc -l <"$TMP/G1.out") + 2000 ))   # two more batches with the standby up
touch "$TMP/stop1"
rc=0; wait "$gp" || rc=$?
check "1: the primary's generating session succeeded" "$rc" -eq 0
cat "$TMP/G1.out" >>"$OLD"
lsn1=$(q "$P" "SELECT pg_current_wal_lsn()")
m1=$(max_old)
log "1: primary: $(wc -l <"$OLD") ids, max $m1 ($(q "$P" "SELECT ts FROM uid_decode($m1)")), WAL at $lsn1"

# ---- 2. hot standby ----
check "2: the standby is in recovery (hot standby)" "$(q "$SB" "SELECT pg_is_in_recovery()")" == t
check "2: its WAL receiver is streaming" "$(q "$SB" "SELECT status FROM pg_stat_wal_receiver")" == streaming
check "2: standby: preloaded, worker id $W" "$(q "$SB" "SELECT current_setting('shared_preload_libraries') || ' ' || current_setting('pg_idgen.worker_id')")" == "pg_idgen $W"
check "2: standby: faketime +0 (|skew| < 1000 ms)" "$(abs "$(skew "$SB")")" -lt 1000
if wait_replay "$lsn1"; then ok "2: standby replayed up to the primary's $lsn1"; else ko "2: standby did not replay up to $lsn1"; fi
expect_sql_error "$SB" 25006 'during recovery' "SELECT snowflake_next()"
expect_sql_error "$SB" 25006 'recovery|read-only' "SELECT set_worker_id($W)"
expect_sql_error "$SB" 25006 'recovery|read-only' "SELECT clear_worker_id()"
check "2: standby: snowflake_worker()" "$(q "$SB" "SELECT worker_id || ' ' || source FROM snowflake_worker()")" == "$W setting"
check "2: standby: uid_decode(max id) as on the primary" "$(q "$SB" "SELECT ts || ' ' || worker_id FROM uid_decode($m1)")" \
    == "$(q "$P" "SELECT ts || ' ' || worker_id FROM uid_decode($m1)")"
check "2: standby: uid_layouts() lists the replicated custom layout" \
    "$(q "$SB" "SELECT count(*) FROM uid_layouts() WHERE name = 'legacy'")" == 1
check "2: standby: uid_decode(id, custom layout) as on the primary" \
    "$(q "$SB" "SELECT ts || ' ' || worker_id FROM uid_decode(1718986769072512999, 'legacy')")" \
    == "$(q "$P" "SELECT ts || ' ' || worker_id FROM uid_decode(1718986769072512999, 'legacy')")"
ts1=$(q "$P" "SELECT ts FROM uid_decode($m1)")
check "2: standby: snowflake_stats() reserved_until >= time of the primary's max id ($ts1)" "$(reserved_ge "$SB" "$ts1")" == t
log "2: standby stats: $(stats "$SB")"

# ---- 3. more ids on the primary, then it stops ----
rm -f "$TMP/stop2"
gen G2 "$TMP/stop2" &
gp=$!; BG_PIDS+=("$gp")
await_lines "$TMP/G2.out" 3000
touch "$TMP/stop2"
rc=0; wait "$gp" || rc=$?
check "3: the primary's second generating session succeeded" "$rc" -eq 0
cat "$TMP/G2.out" >>"$OLD"
M=$(max_old)
TSM=$(q "$P" "SELECT ts FROM uid_decode($M)")
lsn2=$(q "$P" "SELECT pg_current_wal_lsn()")
log "3: primary: $(wc -l <"$OLD") ids in all, max M = $M ($TSM), WAL at $lsn2; primary stats: $(stats "$P")"
if wait_replay "$lsn2"; then ok "3: standby replayed up to the primary's $lsn2"; else ko "3: standby did not replay up to $lsn2"; fi
check "3: standby: reserved_until >= time(M) before the primary stops" "$(reserved_ge "$SB" "$TSM")" == t
"$CLUSTER" stop "$P" immediate 2>/dev/null
log "3: primary stopped (immediate); standby stats: $(stats "$SB")"

# ---- 4. clock 30 s behind, promotion ----
"$CLUSTER" faketime "$SB" -30s 2>/dev/null
sk=$(skew "$SB")
check "4: standby clock 30 s behind (|skew + 30000| < 2000 ms)" "$(abs $((sk + 30000)))" -lt 2000
"$CLUSTER" promote "$SB" 2>/dev/null
prom=f
for i in $(seq 1 600); do [ "$(q "$SB" "SELECT NOT pg_is_in_recovery()")" = t ] && { prom=t; break; }; sleep 0.05; done
check "4: promoted (pg_is_in_recovery() = false)" "$prom" == t
check "4: promoted: reserved_until >= time(M) ($TSM)" "$(reserved_ge "$SB" "$TSM")" == t
log "4: promoted stats: $(stats "$SB")"
expect_sql_error "$SB" 55000 'ahead of the system clock' "SELECT snowflake_next()"

# ---- 5. restart with max_drift_ms = 120000, clock still 30 s behind ----
FAKETIME_FILE=$FT cluster_start "$SB" 28956 -c pg_idgen.worker_id=$W -c pg_idgen.max_drift_ms=120000
check "5: restarted as a primary" "$(q "$SB" "SELECT pg_is_in_recovery()")" == f
sk=$(skew "$SB")
check "5: clock still 30 s behind (|skew + 30000| < 2000 ms)" "$(abs $((sk + 30000)))" -lt 2000
check "5: after the restart: reserved_until >= time(M)" "$(reserved_ge "$SB" "$TSM")" == t
N=100000
q "$SB" "COPY (SELECT 'NEW', 1, g, snowflake_next() FROM generate_series(1, $N) g) TO STDOUT" >"$TMP/new.ids"
q "$SB" "CREATE TABLE old_ids (phase text, batch int, g int, id bigint)" \
    "CREATE TABLE new_ids (phase text, batch int, g int, id bigint)" >/dev/null
q "$SB" "COPY old_ids FROM STDIN" <"$OLD" >/dev/null
q "$SB" "COPY new_ids FROM STDIN" <"$TMP/new.ids" >/dev/null
read -r n nd mn mx <<<"$(q "$SB" "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM new_ids" | tr '|' ' ')"
read -r no nod <<<"$(q "$SB" "SELECT count(*), count(DISTINCT id) FROM old_ids" | tr '|' ' ')"
log "5: old primary: $no ids ($nod distinct), max $M ($TSM); promoted node: $n ids, min $mn ($(q "$SB" "SELECT ts FROM uid_decode($mn)")), max $mx"
check "5: old primary's ids distinct (sanity)" "$nod" -eq "$no"
check "5: old primary's ids not decoding to worker $W" \
    "$(q "$SB" "SELECT count(*) FROM old_ids, LATERAL uid_decode(old_ids.id) u WHERE u.worker_id <> $W")" -eq 0
check "5: promoted node: ids" "$n" -eq $N
check "5: promoted node: distinct ids" "$nd" -eq $N
check "5: promoted node: smallest id > old primary's largest ($M)" "$mn" -gt "$M"
check "5: ids shared by the old primary and the promoted node" \
    "$(q "$SB" "SELECT count(*) FROM new_ids n JOIN old_ids o USING (id)")" -eq 0
check "5: promoted node: ids not increasing in call order" \
    "$(q "$SB" "SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev FROM new_ids) s WHERE prev IS NOT NULL AND NOT id > prev")" -eq 0
check "5: promoted node: ids not decoding to worker $W" \
    "$(q "$SB" "SELECT count(*) FROM new_ids, LATERAL uid_decode(new_ids.id) u WHERE u.worker_id <> $W")" -eq 0
log "5: promoted stats: $(stats "$SB")"

finish
