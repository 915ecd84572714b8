#!/usr/bin/env bash
# snowflake/002_concurrency: concurrent sessions sharing one worker id, and databases with their own
# worker id (ALTER DATABASE ... SET pg_idgen.worker_id) on one instance.
#  A. 4 psql clients at once, 250,000 ids each (COPY (SELECT snowflake_next(), client, g
#     FROM generate_series(1, 250000) g) TO STDOUT): 1,000,000 distinct ids, each client's ids
#     strictly increasing in its call order g, all worker 1.
#  B. databases db2 (worker 2) and db3 (worker 3), 2 clients each at once, 100,000 ids per
#     client: 400,000 distinct ids, each decoding to its database's worker, increasing per client.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_conc
cluster_start "$C" 28942
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null

# run_clients DB CLIENT... : one background COPY per client into $TMP/ids.<DB>.<CLIENT>
N=250000
run_clients() {
    local db=$1 n=$2; shift 2
    local pids=() c
    for c in "$@"; do
        PGDATABASE=$db "$CLUSTER" psql "$C" -c \
            "COPY (SELECT snowflake_next(), '$db', $c, g FROM generate_series(1, $n) g) TO STDOUT" \
            >"$TMP/ids.$db.$c" &
        pids+=($!); BG_PIDS+=($!)
    done
    local p rc=0
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    return $rc
}

# ---- A: 4 clients, one worker id ----
s=$(date +%s.%N)
run_clients postgres $N 1 2 3 4
log "A: 4 clients x $N ids: $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s"
q "$C" "CREATE TABLE ids (id bigint, db text, client int, g int)" >/dev/null
cat "$TMP"/ids.postgres.* | q "$C" "COPY ids FROM STDIN" >/dev/null

read -r cnt dist <<<"$(q "$C" "SELECT count(*), count(DISTINCT id) FROM ids" | tr '|' ' ')"
check "A: ids returned" "$cnt" -eq $((4 * N))
check "A: distinct ids" "$dist" -eq $((4 * N))
bad=$(q "$C" "SELECT count(*) FROM (SELECT id, lag(id) OVER (PARTITION BY client ORDER BY g) AS prev FROM ids) s WHERE prev IS NOT NULL AND NOT id > prev")
check "A: ids not increasing within a client's call order" "$bad" -eq 0
nw=$(q "$C" "SELECT count(*) FROM ids, LATERAL uid_decode(ids.id) u WHERE u.worker_id <> 1")
check "A: ids not decoding to worker 1" "$nw" -eq 0
# how much the clients' id ranges interleaved (informational: depends on scheduling)
inter=$(q "$C" "SELECT count(*) FROM (SELECT client, lag(client) OVER (ORDER BY id) AS pc FROM ids) s WHERE pc IS NOT NULL AND pc <> client")
log "A: client changes along the id order: $inter (0 would mean the clients ran one after another)"
q "$C" "SELECT 'A: stats: ids_issued=' || ids_issued || ' exhaustions=' || exhaustions || ' waits=' || waits || ' steps_back=' || steps_back FROM snowflake_stats() WHERE worker_id = 1" | sed "s|^|[$TEST_NAME] |"

# ---- B: two databases with their own worker id ----
M=100000
for w in 2 3; do
    q "$C" "CREATE DATABASE db$w" "ALTER DATABASE db$w SET pg_idgen.worker_id = $w" >/dev/null
    qdb "$C" "db$w" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
    got=$(qdb "$C" "db$w" "SHOW pg_idgen.worker_id")
    check "B: SHOW pg_idgen.worker_id in db$w" "$got" -eq "$w"
done
rm -f "$TMP"/ids.*
s=$(date +%s.%N)
run_clients db2 $M 1 2 &
pa=$!
run_clients db3 $M 1 2 &
pb=$!
wait $pa; wait $pb
log "B: 2 databases x 2 clients x $M ids: $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s"
q "$C" "TRUNCATE ids" >/dev/null
cat "$TMP"/ids.db* | q "$C" "COPY ids FROM STDIN" >/dev/null

read -r cnt dist <<<"$(q "$C" "SELECT count(*), count(DISTINCT id) FROM ids" | tr '|' ' ')"
check "B: ids returned" "$cnt" -eq $((4 * M))
check "B: distinct ids over both databases" "$dist" -eq $((4 * M))
for w in 2 3; do
    read -r n nok <<<"$(q "$C" "SELECT count(*), count(*) FILTER (WHERE u.worker_id = $w) FROM ids, LATERAL uid_decode(ids.id) u WHERE db = 'db$w'" | tr '|' ' ')"
    check "B: db$w ids decoding to worker $w" "$nok" -eq "$n"
    check "B: db$w ids" "$n" -eq $((2 * M))
done
bad=$(q "$C" "SELECT count(*) FROM (SELECT id, lag(id) OVER (PARTITION BY db, client ORDER BY g) AS prev FROM ids) s WHERE prev IS NOT NULL AND NOT id > prev")
check "B: ids not increasing within a client's call order" "$bad" -eq 0
q "$C" "SELECT 'B: stats: worker ' || worker_id || ' ids_issued=' || ids_issued || ' exhaustions=' || exhaustions || ' waits=' || waits FROM snowflake_stats() ORDER BY worker_id" | sed "s|^|[$TEST_NAME] |"

finish
