#!/usr/bin/env bash
# layouts/003_js_safe — JavaScript-safe layouts: ids that stay <= 2^53 - 1 for the layout's
# whole lifetime, and an error (never a wrap) when a narrow layout's time field runs out.
#   A  a cluster started with pg_idgen.layout = js53 and worker id 37: 100,000 ids from 4
#      concurrent sessions, all <= 9007199254740991, distinct, increasing in each session's
#      order, decoding back to worker 37; the layout as published (37/6/10 bits, 10 ms).
#   B  a cluster under libfaketime with a short-lived custom layout (20 bits of 1 ms = 17.5
#      minutes, 4 worker bits, 4 sequence bits: 28 bits in all) whose field ends 10 minutes
#      after the start, and pg_idgen.max_drift_ms and reserve_ms at their maxima (the generator
#      may run ahead of the clock to the end of the field): ids are below 2^28; with the clock moved 10 s before
#      the end one session generates (16 ids per ms: 160,000 ids, a fraction of a second) until
#      the field is exhausted: the last id is the largest of worker 9, then 22003 (never another
#      error, never a wrap); with the clock past the end every call, and decode and compose
#      beyond the field, fail (22003/22023), also after a restart.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

JS_MAX=9007199254740991

# ---- A: js53 ----
cluster_start js 28966 -c pg_idgen.layout=js53 -c pg_idgen.worker_id=37
q js "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
check "js53 layout in force: name, bits, unit, epoch, end" \
    "$(q js "SELECT name || ' ' || time_bits || '/' || worker_bits || '/' || sequence_bits || ' ' || unit_ms || ' ' || epoch || ' ' || time_field_ends FROM snowflake_layout()")" \
    == "js53 37/6/10 10 2026-01-01 00:00:00+00 2069-07-21 06:52:14.72+00"
check "the largest js53 id is 2^53 - 1" \
    "$(q js "SELECT uid_compose('2069-07-21 06:52:14.71+00', 63, 1023)")" == "$JS_MAX"
expect_sql_error js 22003 'outside the time range' "SELECT uid_compose('2069-07-21 06:52:14.72+00', 0, 0)"
expect_sql_error js 22023 'has bits set above' "SELECT uid_decode($((JS_MAX + 1)))"
expect_sql_error js 22003 'out of range' "SELECT uid_compose(now(), 64, 0)"

for s in 1 2 3 4; do
    q js "COPY (SELECT $s, g, snowflake_next() FROM generate_series(1, 25000) g) TO STDOUT" \
        >"$TMP/js.$s" &
    BG_PIDS+=($!)
done
wait
cat "$TMP"/js.[1-4] >"$TMP/js.all"
check "ids returned" "$(wc -l <"$TMP/js.all")" -eq 100000
check "distinct ids" "$(cut -f3 "$TMP/js.all" | sort -u | wc -l)" -eq 100000
check "ids above 2^53 - 1 (Number.MAX_SAFE_INTEGER)" \
    "$(awk -F'\t' -v m="$JS_MAX" '$3 > m || $3 < 1' "$TMP/js.all" | wc -l)" -eq 0
check "decreases within a session (in call order)" \
    "$(awk -F'\t' '{ if ($1 in last && $3 <= last[$1]) bad++; last[$1] = $3 } END { print bad + 0 }' "$TMP/js.all")" -eq 0
# load the ids into a table and decode them on the server: worker 37, times of this run
q js "CREATE TABLE ids (s int, g int, id bigint)" >/dev/null
"$CLUSTER" psql js -c "\\copy ids FROM '$TMP/js.all'" >/dev/null
check "every id decodes to worker 37, sequence < 1024, a time within the last hour" \
    "$(q js "SELECT count(*) FROM ids, uid_decode(id) d WHERE d.worker_id = 37 AND d.sequence BETWEEN 0 AND 1023 AND d.ts > now() - interval '1 hour' AND d.ts < now() + interval '2 seconds'")" \
    -eq 100000
check "uid_compose inverts uid_decode for every id" \
    "$(q js "SELECT count(*) FROM ids, uid_decode(id) d WHERE uid_compose(d.ts, d.worker_id, d.sequence) = id")" -eq 100000
check "the largest id, read as a double (as JSON.parse does), is exact" \
    "$(q js "SELECT count(*) FROM ids WHERE id::float8::numeric <> id::numeric")" -eq 0
check "snowflake_next_text() is a decimal JS-safe id of worker 37" \
    "$(q js "SELECT t ~ '^[1-9][0-9]*\$' AND t::bigint <= $JS_MAX AND (uid_decode(t::bigint)).worker_id = 37 FROM snowflake_next_text() t")" == t
expect_sql_error js 22023 'does not fit the 6 worker bits' "SET pg_idgen.worker_id = 64"
"$CLUSTER" stop js fast >/dev/null

# ---- B: a short-lived custom layout under libfaketime ----
export FAKETIME_FILE=$TMP/faketime
echo "+0" >"$FAKETIME_FILE"; chmod 644 "$FAKETIME_FILE"
now_ms=$(date +%s%3N)
FIELD_MS=$((1 << 20))                 # 20 bits of 1 ms
END_MS=$((now_ms + 600000))           # the field ends 10 minutes from now
EPOCH_MS=$((END_MS - FIELD_MS))
SPEC="time=20,worker=4,sequence=4,unit_ms=1,epoch=$EPOCH_MS"
MAX28=$(((1 << 28) - 1))
LAST9=$(( (((1 << 20) - 1) << 8) | (9 << 4) | 15 ))   # last tick, worker 9, last sequence
# max_drift_ms and reserve_ms at their maxima: the generator may run ahead of the clock to the end
# of the field, under one durable reservation (no fsync every 8,000 ids to slow it down)
start_short() {
    cluster_start short 28967 -c "pg_idgen.layout=$SPEC" -c pg_idgen.worker_id=9 \
        -c pg_idgen.max_drift_ms=3600000 -c pg_idgen.reserve_ms=600000
}
start_short
offset() { "$CLUSTER" faketime short "$1" 2>/dev/null; }
q short "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
check "custom 28-bit layout in force, field end as computed" \
    "$(q short "SELECT time_bits + worker_bits + sequence_bits || ' ' || (extract(epoch FROM time_field_ends) * 1000)::bigint FROM snowflake_layout()")" \
    == "28 $END_MS"
q short "COPY (SELECT snowflake_next() FROM generate_series(1, 10000)) TO STDOUT" >"$TMP/short.0"
check "10,000 ids at the real clock, all below 2^28" \
    "$(awk -v m="$MAX28" '$1 > m || $1 < 1' "$TMP/short.0" | wc -l)" -eq 0

# 10 s before the end of the field: one session generates batches until the field runs out
lead_s=$(( (END_MS - 10000 - $(date +%s%3N)) ))
offset "+$(awk -v ms="$lead_s" 'BEGIN { printf "%.3f", ms / 1000 }')s"
check "server clock moved to the last 11 s of the field" \
    "$(q short "SELECT ($END_MS - extract(epoch FROM clock_timestamp()) * 1000)::int BETWEEN 0 AND 11000")" == t
{
    echo '\set VERBOSITY verbose'
    for b in $(seq 1 400); do
        echo "COPY (SELECT snowflake_next() FROM generate_series(1, 5000)) TO STDOUT;"
    done
} | { t0=$(date +%s%3N); "$CLUSTER" psql short -v ON_ERROR_STOP=1 >"$TMP/short.1" 2>"$TMP/short.err" || true
      log "the session ran $(( $(date +%s%3N) - t0 )) ms"; }
first_err=$(grep -m1 'ERROR:' "$TMP/short.err" || true)
log "end of the field: $(wc -l <"$TMP/short.1") ids, then: $first_err"
log "generator: $(q short "SELECT 'issued=' || ids_issued || ' lead_ms=' || coalesce(lead_ms::text, '-') || ' waits=' || waits || ' exhaustions=' || exhaustions FROM snowflake_stats() WHERE worker_id = 9")"
check_match "the session stopped with 22003 'time field is exhausted'" "$first_err" \
    'ERROR:  22003: cannot generate an id: the layout.s time field is exhausted'
check "ids before the end: some" "$(wc -l <"$TMP/short.1")" -gt 0
check "ids before the end: none above 2^28 - 1" \
    "$(awk -v m="$MAX28" '$1 > m || $1 < 1' "$TMP/short.1" | wc -l)" -eq 0
check "ids before the end: increasing, above the earlier ones" \
    "$(cat "$TMP/short.0" "$TMP/short.1" | awk 'NR > 1 && $1 <= prev { bad++ } { prev = $1 } END { print bad + 0 }')" -eq 0
last=$(tail -n 1 "$TMP/short.1")
check "the last id is the field's last tick, worker 9, the last sequence value" "$last" -eq "$LAST9"
check "the last id decodes to the field's last millisecond" \
    "$(q short "SELECT worker_id || ' ' || sequence || ' ' || (extract(epoch FROM ts) * 1000)::bigint FROM uid_decode($last)")" \
    == "9 15 $((END_MS - 1))"
expect_sql_error short 22003 'time field is exhausted' "SELECT snowflake_next()"

# past the end: every call fails, decode/compose beyond the field fail, also after a restart
offset "+$(( (END_MS - $(date +%s%3N)) / 1000 + 60 ))s"
expect_sql_error short 22003 'time field is exhausted' "SELECT snowflake_next()"
expect_sql_error short 22003 'time field is exhausted' "SELECT snowflake_next_text()"
expect_sql_error short 22003 'outside the time range' "SELECT uid_compose(clock_timestamp(), 9, 0)"
expect_sql_error short 22003 'outside the time range' "SELECT snowflake_at(clock_timestamp())"
expect_sql_error short 22023 'has bits set above' "SELECT uid_decode($((MAX28 + 1)))"
check "the largest id of the layout still decodes" \
    "$(q short "SELECT (extract(epoch FROM ts) * 1000)::bigint FROM uid_decode($MAX28)")" -eq $((END_MS - 1))
start_short
check "the server restarts with its clock past the field's end" \
    "$(q short "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint > $END_MS")" == t
expect_sql_error short 22003 'time field is exhausted' "SELECT snowflake_next()"
check "no XX000 or panic in the server log" \
    "$("$CLUSTER" log short 100000 | grep -c -E 'XX000|panicked|PANIC' || true)" -eq 0

finish
