#!/usr/bin/env bash
# segment/001_concurrency: segment_next() shared by concurrent sessions: one instance-wide
# order, no value twice.
#  4 psql clients at once, 250,000 values each of one tag (step 1000):
#  * all 1,000,000 values distinct;
#  * each client's values strictly increasing in its call order g;
#  * gaps only at segment ends: every run of consecutive values in the union starts at a segment
#    start (value % 1000 == 1) and every run but the last ends at a segment end (value % 1000 == 0);
#  * segment_status counts 1,000,000 values issued and its persisted high-water mark covers them.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_seg_conc
cluster_start "$C" 28971
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT segment_create('conc')" >/dev/null

N=250000
s=$(date +%s.%N)
pids=()
for c in 1 2 3 4; do
    "$CLUSTER" psql "$C" -c "COPY (SELECT segment_next('conc'), $c, g FROM generate_series(1, $N) g) TO STDOUT" \
        >"$TMP/vals.$c" &
    pids+=($!); BG_PIDS+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
log "4 clients x $N values: $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s"

q "$C" "CREATE TABLE vals (v bigint, client int, g int)" >/dev/null
cat "$TMP"/vals.* | q "$C" "COPY vals FROM STDIN" >/dev/null
read -r cnt dist <<<"$(q "$C" "SELECT count(*), count(DISTINCT v) FROM vals" | tr '|' ' ')"
check "values returned" "$cnt" -eq $((4 * N))
check "all values distinct" "$dist" -eq $((4 * N))
bad=$(q "$C" "SELECT count(*) FROM (SELECT v, lag(v) OVER (PARTITION BY client ORDER BY g) p FROM vals) s WHERE v <= p")
check "each client strictly increasing" "$bad" -eq 0
# runs of consecutive values (gaps-and-islands)
q "$C" "CREATE TABLE runs AS SELECT min(v) AS lo, max(v) AS hi FROM (SELECT v, v - row_number() OVER (ORDER BY v) AS grp FROM vals) s GROUP BY grp" >/dev/null
runs=$(q "$C" "SELECT count(*) FROM runs")
log "runs of consecutive values: $runs (gaps: $((runs - 1)))"
bad_start=$(q "$C" "SELECT count(*) FROM runs WHERE lo % 1000 <> 1")
check "every run starts at a segment start" "$bad_start" -eq 0
bad_end=$(q "$C" "SELECT count(*) FROM runs WHERE hi % 1000 <> 0 AND hi <> (SELECT max(hi) FROM runs)")
check "every run but the last ends at a segment end" "$bad_end" -eq 0
read -r issued hwm <<<"$(q "$C" "SELECT values_issued, persisted_hwm FROM segment_status WHERE tag = 'conc'" | tr '|' ' ')"
check "segment_status counts the values issued" "$issued" -eq $((4 * N))
maxv=$(q "$C" "SELECT max(v) FROM vals")
check "persisted high-water mark covers every value" "$hwm" -ge "$maxv"
log "status: $(q "$C" "SELECT format('step %s refills %s sync_refills %s discarded %s', step, refills, sync_refills, discarded) FROM segment_status WHERE tag = 'conc'")"
finish
