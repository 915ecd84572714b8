#!/usr/bin/env bash
# snowflake/001_bulk: snowflake_next() as a column DEFAULT under every bulk-insert path of one session
# after another: multi-row VALUES, INSERT ... SELECT (1,000,000 rows), COPY FROM STDIN
# (100,000 rows), INSERT ... RETURNING, a prepared statement. Asserts the row count, that
# every id is distinct, decodes to worker 1, increases strictly in insertion order (ord, a
# bigserial filled by the same INSERT), and carries a time between the start and end of the run.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_bulk
cluster_start "$C" 28941
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
q "$C" "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next(), ord bigserial, v int)" \
       "CREATE TABLE t0 AS SELECT clock_timestamp() AS t0" >/dev/null

expected=0
# 1. multi-row VALUES
q "$C" "INSERT INTO t (v) VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10)" >/dev/null
expected=$((expected + 10))
# 2. INSERT ... SELECT, 1,000,000 rows
s=$(date +%s.%N)
q "$C" "INSERT INTO t (v) SELECT g FROM generate_series(1, 1000000) g" >/dev/null
log "INSERT ... SELECT of 1,000,000 rows: $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s"
expected=$((expected + 1000000))
# 3. COPY FROM STDIN, 100,000 rows
seq 1 100000 | q "$C" "COPY t (v) FROM STDIN" >/dev/null
expected=$((expected + 100000))
# 4. INSERT ... RETURNING
ret=$(q "$C" "INSERT INTO t (v) VALUES (-1), (-2), (-3), (-4), (-5) RETURNING id" | tr '\n' ',')
ret=${ret%,}
expected=$((expected + 5))
# 5. a prepared statement executed 5 times in one session
prep=$(q "$C" "PREPARE ins(int) AS INSERT INTO t (v) VALUES (\$1) RETURNING id" \
    "EXECUTE ins(101)" "EXECUTE ins(102)" "EXECUTE ins(103)" "EXECUTE ins(104)" "EXECUTE ins(105)" | tr '\n' ',')
prep=${prep%,}
expected=$((expected + 5))

q "$C" "CREATE TABLE t1 AS SELECT clock_timestamp() AS t1" >/dev/null

read -r cnt dist <<<"$(q "$C" "SELECT count(*), count(DISTINCT id) FROM t" | tr '|' ' ')"
check "row count" "$cnt" -eq "$expected"
check "distinct ids" "$dist" -eq "$cnt"

read -r w1 wother wmin wmax <<<"$(q "$C" "SELECT count(*) FILTER (WHERE u.worker_id = 1), count(*) FILTER (WHERE u.worker_id <> 1), min(u.worker_id), max(u.worker_id) FROM t, LATERAL uid_decode(t.id) u" | tr '|' ' ')"
check "ids decoding to worker 1" "$w1" -eq "$expected"
check "ids decoding to another worker (min $wmin, max $wmax)" "$wother" -eq 0

read -r pairs bad <<<"$(q "$C" "SELECT count(*), count(*) FILTER (WHERE NOT id > prev) FROM (SELECT id, lag(id) OVER (ORDER BY ord) AS prev FROM t) s WHERE prev IS NOT NULL" | tr '|' ' ')"
check "consecutive pairs (by insertion order) compared" "$pairs" -eq $((expected - 1))
check "pairs where id does not increase with insertion order" "$bad" -eq 0

# every id's time lies between the start of the run (-1 s) and its end (+ max_drift 1 s + 1 s)
read -r early late minlead maxlead <<<"$(q "$C" "SELECT count(*) FILTER (WHERE u.ts < t0 - interval '1 s'), count(*) FILTER (WHERE u.ts > t1 + interval '2 s'), round(extract(epoch FROM min(u.ts) - min(t0)) * 1000), round(extract(epoch FROM max(u.ts) - max(t1)) * 1000) FROM t, LATERAL uid_decode(t.id) u, t0, t1" | tr '|' ' ')"
log "first id time - run start: ${minlead} ms; last id time - run end: ${maxlead} ms"
check "ids whose time is > 1 s before the run started" "$early" -eq 0
check "ids whose time is > 2 s after the run ended" "$late" -eq 0

# RETURNING / EXECUTE returned the ids that were stored, in increasing order
n=$(q "$C" "SELECT count(*) FROM t WHERE id IN ($ret) AND v BETWEEN -5 AND -1")
check "INSERT ... RETURNING ids found in t" "$n" -eq 5
n=$(q "$C" "SELECT count(*) FROM t WHERE id IN ($prep) AND v BETWEEN 101 AND 105")
check "EXECUTE ... RETURNING ids found in t" "$n" -eq 5
inc=$(q "$C" "SELECT bool_and(a < b) FROM (SELECT x AS a, lead(x) OVER (ORDER BY o) AS b FROM unnest(ARRAY[$ret,$prep]::bigint[]) WITH ORDINALITY AS u(x, o)) s WHERE b IS NOT NULL")
check "RETURNING then EXECUTE ids strictly increasing" "$inc" == t

stats=$(q "$C" "SELECT 'ids_issued=' || ids_issued || ' steps_back=' || steps_back || ' exhaustions=' || exhaustions || ' waits=' || waits FROM snowflake_stats() WHERE worker_id = 1")
log "snowflake_stats(): $stats"
issued=$(q "$C" "SELECT ids_issued FROM snowflake_stats() WHERE worker_id = 1")
check "snowflake_stats().ids_issued >= rows" "$issued" -ge "$expected"

finish
