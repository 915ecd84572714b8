#!/usr/bin/env bash
# snowflake/004_clock_faults: a real postmaster under libfaketime (scripts/cluster.sh FAKETIME_FILE=...),
# clock steps back, crashes and restarts with the clock behind. Every id ever returned is
# collected (in return order) and at the end: no duplicate, strictly increasing over the whole
# run, and each phase's first id above every earlier id.
#   P0  offset +0, defaults: baseline ids.
#   P1  defaults (max_drift_ms 1000, max_wait_ms 100): one session generating batches while the
#       clock steps back 5 s; each batch either succeeds or fails with SQLSTATE 55000 "... ahead
#       of the system clock ..." (never XX000 / anything else).
#   P2  restart with -c pg_idgen.max_drift_ms=10000: the same 5 s step back mid-generation; every
#       batch succeeds, ids keep increasing, steps_back >= 1 and the WARNING was sent.
#   P3  `cluster.sh stop immediate`, restart with the clock 65 s behind, defaults:
#       snowflake_next() fails with 55000 "ahead of the system clock".
#   P4  restart (still 65 s behind) with -c pg_idgen.max_drift_ms=120000: ids succeed, all above
#       the maximum issued before the crash.
#   P5  kill -9 of the backend generating ids (whole-instance crash restart), then more ids.
# integration: major 15
# (in make test's share of 15 and 18: one of the longest scripts, placed to even out the two)
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_clock
PORT=28944
export FAKETIME_FILE=$TMP/faketime        # explicit file: kept as is across restarts
echo "+0" >"$FAKETIME_FILE"; chmod 644 "$FAKETIME_FILE"
ALL=$TMP/all.ids                          # phase <tab> batch <tab> g <tab> id, in return order
: >"$ALL"

start() { cluster_start "$C" "$PORT" "$@"; }
offset() { "$CLUSTER" faketime "$C" "$1" 2>/dev/null; }
max_so_far() { awk -F'\t' 'BEGIN{m=""} { if (m == "" || $4+0 > m+0) m = $4 } END { print (m == "" ? 0 : m) }' "$ALL"; }
count_phase() { awk -F'\t' -v p="$1" '$1 == p' "$ALL" | wc -l; }

# gen_session PHASE STOPFILE: ONE psql session running batches of 1000 ids until STOPFILE
# exists (and at least 3 batches ran); errors do not stop the session. rows -> $TMP/PHASE.out,
# messages -> $TMP/PHASE.err
gen_session() {
    local phase=$1 stop=$2 b=0
    {
        echo '\set VERBOSITY verbose'
        while [ ! -e "$stop" ] || [ $b -lt 3 ]; do
            b=$((b + 1))
            echo "COPY (SELECT '$phase', $b, g, snowflake_next() FROM generate_series(1, 1000) g) TO STDOUT;"
            sleep 0.05
        done
    } | "$CLUSTER" psql "$C" -v ON_ERROR_STOP=0 >"$TMP/$phase.out" 2>"$TMP/$phase.err" || true
}

# batches_done PHASE: batches of a gen_session that ended, with ids or with an error
batches_done() {
    echo $(( $(awk -F'\t' '{ print $2 }' "$TMP/$1.out" 2>/dev/null | sort -u | wc -l) + $(grep -c 'ERROR:' "$TMP/$1.err" 2>/dev/null || true) ))
}
# await_batches PHASE N: until N batches of PHASE ended (bounded: 60 s)
await_batches() {
    local i
    for i in $(seq 1 1200); do [ "$(batches_done "$1")" -ge "$2" ] && return 0; sleep 0.05; done
    ko "$1: $2 batches did not end within 60 s"
}

# batches PHASE N: N batches of 1000 ids in one session; must succeed
batches() {
    local phase=$1 n=$2 b sql=()
    for b in $(seq 1 "$n"); do sql+=("COPY (SELECT '$phase', $b, g, snowflake_next() FROM generate_series(1, 1000) g) TO STDOUT"); done
    q "$C" "${sql[@]}" >>"$ALL"
}

# phase_first_above PHASE PREV_MAX
phase_first_above() {
    local first
    first=$(awk -F'\t' -v p="$1" '$1 == p { print $4; exit }' "$ALL")
    if [ -z "$first" ]; then ko "$1: no id returned"; return; fi
    check "$1: first id > every earlier id (max $2)" "$first" -gt "$2"
}

stats() { q "$C" "SELECT 'ids_issued=' || ids_issued || ' lead_ms=' || coalesce(lead_ms::text, '-') || ' steps_back=' || steps_back || ' reserved_until=' || reserved_until || ' logical_time=' || coalesce(logical_time::text, '-') FROM snowflake_stats() WHERE worker_id = 1"; }

# ---- faketime works on the postmaster's backends ----
start
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
skew() { q "$C" "SELECT round(extract(epoch FROM clock_timestamp()) * 1000)::bigint - $(date +%s%3N)"; }
d0=$(skew)
check "faketime +0: server clock - real clock (ms) within ±1000" "${d0#-}" -lt 1000
offset -5s
d5=$(skew)
check "faketime -5s: server clock - real clock (ms) within -5000 ±1000" "$(( (d5 + 5000) < 0 ? -(d5 + 5000) : d5 + 5000 ))" -lt 1000
offset +0
log "faketime: skew at +0 = ${d0} ms, at -5s = ${d5} ms"

# ---- P0: baseline ----
batches P0 5
check "P0: ids" "$(count_phase P0)" -eq 5000
log "P0 stats: $(stats)"

# ---- P1: step back 5 s mid-generation, default max_drift_ms 1000 / max_wait_ms 100 ----
prev=$(max_so_far)
rm -f "$TMP/stop"
gen_session P1 "$TMP/stop" &
gp=$!; BG_PIDS+=($gp)
await_batches P1 2                                  # generating before the step
offset -5s
await_batches P1 $(( $(batches_done P1) + 3 ))      # three more batches across the step
touch "$TMP/stop"; wait $gp
offset +0
cat "$TMP/P1.out" >>"$ALL"
okb=$(awk -F'\t' '{ print $2 }' "$TMP/P1.out" | sort -u | wc -l)
e55=$(grep -c -E 'ERROR:  55000: cannot generate an id: .*ahead of the system clock' "$TMP/P1.err" || true)
eall=$(grep -c 'ERROR:' "$TMP/P1.err" || true)
log "P1: batches with ids: $okb; ids: $(count_phase P1); failed batches: $eall (55000 'ahead of the system clock': $e55)"
[ "$eall" -gt 0 ] && log "P1: first error: $(grep -m1 -A2 'ERROR:' "$TMP/P1.err" | tr '\n' ' ')"
check "P1: errors other than 55000 'ahead of the system clock' (e.g. XX000)" "$((eall - e55))" -eq 0
check "P1: every batch either returned ids or failed with 55000 (batches ok + failed >= 3)" "$((okb + eall))" -ge 3
phase_first_above P1 "$prev"
log "P1 stats: $(stats)"

# ---- P2: max_drift_ms = 10000: generation continues across the 5 s step back ----
prev=$(max_so_far)
start -c pg_idgen.max_drift_ms=10000
check "P2: max_drift_ms in force" "$(q "$C" "SHOW pg_idgen.max_drift_ms")" == "10s"
sb0=$(q "$C" "SELECT steps_back FROM snowflake_stats() WHERE worker_id = 1")
sb0=${sb0:-0}
rm -f "$TMP/stop"
gen_session P2 "$TMP/stop" &
gp=$!; BG_PIDS+=($gp)
await_batches P2 2
offset -5s
await_batches P2 $(( $(batches_done P2) + 3 ))
touch "$TMP/stop"; wait $gp
cat "$TMP/P2.out" >>"$ALL"
nb=$(awk -F'\t' '{ print $2 }' "$TMP/P2.out" | sort -u | wc -l)
eall=$(grep -c 'ERROR:' "$TMP/P2.err" || true)
nwarn=$(grep -c 'WARNING:  01000: pg_idgen: the system clock stepped back by' "$TMP/P2.err" || true)
log "P2: batches: $nb, ids: $(count_phase P2), errors: $eall, warnings: $nwarn: $(grep -m1 'stepped back' "$TMP/P2.err" || true)"
check "P2: errors" "$eall" -eq 0
check "P2: ids (1000 per batch)" "$(count_phase P2)" -eq $((nb * 1000))
check "P2: WARNING 'the system clock stepped back by N ms' sent to the client" "$nwarn" -ge 1
back=$(grep -m1 -o 'stepped back by [0-9]* ms' "$TMP/P2.err" | grep -o '[0-9]*' || echo 0)
check "P2: reported step back (ms) >= 4000" "$back" -ge 4000
sb=$(q "$C" "SELECT steps_back FROM snowflake_stats() WHERE worker_id = 1")
check "P2: snowflake_stats().steps_back" "$sb" -ge $((sb0 + 1))
lead=$(q "$C" "SELECT lead_ms FROM snowflake_stats() WHERE worker_id = 1")
check "P2: lead_ms over the (5 s behind) system clock" "$lead" -ge 1000
phase_first_above P2 "$prev"
log "P2 stats: $(stats)"

# ---- P3: crash, restart with the clock 65 s behind, default max_drift_ms ----
prev=$(max_so_far)
"$CLUSTER" stop "$C" immediate 2>/dev/null
offset -65s
start
expect_sql_error "$C" 55000 'cannot generate an id: .*ahead of the system clock.*max_drift_ms' "SELECT snowflake_next()"
check_match "P3: the error has a HINT" "$LAST_ERR" 'HINT: '
log "P3 stats: $(stats)"

# ---- P4: restart with max_drift_ms = 120000, clock still 65 s behind ----
start -c pg_idgen.max_drift_ms=120000
batches P4 5
check "P4: ids" "$(count_phase P4)" -eq 5000
phase_first_above P4 "$prev"
min4=$(awk -F'\t' '$1 == "P4" && (m == "" || $4 + 0 < m + 0) { m = $4 } END { print m }' "$ALL")
check "P4: smallest id after the crash > largest before ($prev)" "$min4" -gt "$prev"
log "P4 stats: $(stats)"

# ---- P5: kill -9 of the backend generating ids ----
prev=$(max_so_far)
"$CLUSTER" psql "$C" -c "COPY (SELECT 'P5k', 1, g, snowflake_next() FROM (SELECT generate_series(1, 200000000) AS g) s) TO STDOUT" \
    >"$TMP/P5k.out" 2>"$TMP/P5k.err" &
kp=$!; BG_PIDS+=($kp)
bpid=""
for i in $(seq 1 100); do
    bpid=$(q "$C" "SELECT pid FROM pg_stat_activity WHERE query LIKE 'COPY (SELECT ''P5k''%' AND state = 'active'" 2>/dev/null || true)
    [ -n "$bpid" ] && break
    sleep 0.1
done
check_match "P5: found the generating backend" "$bpid" '^[0-9]+$'
# generate_series in the select list streams (in FROM it would be materialized first)
for i in $(seq 1 100); do [ "$(stat -c %s "$TMP/P5k.out")" -gt 1000000 ] && break; sleep 0.05; done
kill -9 "$bpid"
wait $kp || true
# only complete rows (the stream was cut)
awk -F'\t' 'NF == 4 && $4 ~ /^[0-9]+$/' "$TMP/P5k.out" >>"$ALL"
check "P5: ids the killed backend returned before it died" "$(count_phase P5k)" -gt 0
log "P5: backend $bpid killed after returning $(count_phase P5k) ids; psql said: $(grep -m1 -i 'server\|terminat\|closed' "$TMP/P5k.err" || true)"
up=0
for i in $(seq 1 150); do
    if q "$C" "SELECT 1" >/dev/null 2>&1; then up=1; break; fi
    sleep 0.2
done
check "P5: server accepts connections again after the crash restart" "$up" -eq 1
grep -q 'terminated by signal 9' "$("$CLUSTER" pgdata "$C")/log/postgresql.log" \
    && ok "P5: server log shows the crash restart (terminated by signal 9)" \
    || ko "P5: server log does not show 'terminated by signal 9'"
prev=$(max_so_far)
batches P5 5
check "P5: ids" "$(count_phase P5)" -eq 5000
phase_first_above P5 "$prev"
log "P5 stats: $(stats)"

# ---- every id ever returned ----
offset +0
q "$C" "CREATE TABLE allids (n bigserial, phase text, batch int, g bigint, id bigint)" >/dev/null
q "$C" "COPY allids (phase, batch, g, id) FROM STDIN" <"$ALL" >/dev/null
read -r total dist bad <<<"$(q "$C" "SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE prev IS NOT NULL AND NOT id > prev) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM allids) s" | tr '|' ' ')"
log "all phases: $(q "$C" "SELECT string_agg(phase || '=' || c, ' ' ORDER BY m) FROM (SELECT phase, count(*) c, min(n) m FROM allids GROUP BY phase) s")"
check "all phases: ids collected" "$total" -ge 25000
check "all phases: duplicates" "$((total - dist))" -eq 0
check "all phases: ids not increasing in return order" "$bad" -eq 0
nw=$(q "$C" "SELECT count(*) FROM allids, LATERAL uid_decode(allids.id) u WHERE u.worker_id <> 1")
check "all phases: ids not decoding to worker 1" "$nw" -eq 0

finish
