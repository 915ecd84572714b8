#!/usr/bin/env bash
# segment/005_nodes_errors: multi-node stride and the errors that need their own server.
#  A. two instances, tag created with nodes => 2 (node_index 0 and 1), 2 clients x 50,000
#     values on each: the 200,000 values are distinct (disjoint across instances), each
#     instance's values fall in its own chunks, and each client's values increase. The same with
#     an adaptive step (unit min_step = 10, up to 640): still disjoint, the step grows.
#  B. a full shared table (pg_idgen.max_segments = 2): the third tag in use -> 53400 with a hint;
#     dropping a tag frees its entry; entries of a dropped database, and of tags dropped with
#     DROP EXTENSION, are reclaimed when full.
#  C. not preloaded: segment_next -> 55000 with a HINT naming shared_preload_libraries.
#  D. bad pg_idgen.max_segments at start: the server refuses to start.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

# ---- A ----
N0=it_seg_node0
N1=it_seg_node1
cluster_start "$N0" 28977
cluster_start "$N1" 28978
for k in 0 1; do
    c=it_seg_node$k
    q "$c" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
          "SELECT segment_create('orders', 100, nodes => 2, node_index => $k)" >/dev/null
done
pids=()
for k in 0 1; do
    for cl in 1 2; do
        "$CLUSTER" psql "it_seg_node$k" -c "COPY (SELECT segment_next('orders'), $k, $cl, g FROM generate_series(1, 50000) g) TO STDOUT" \
            >"$TMP/node.$k.$cl" &
        pids+=($!); BG_PIDS+=($!)
    done
done
for p in "${pids[@]}"; do wait "$p"; done
q "$N0" "CREATE TABLE vals (v bigint, node int, client int, g int)" >/dev/null
cat "$TMP"/node.* | q "$N0" "COPY vals FROM STDIN" >/dev/null
read -r cnt dist <<<"$(q "$N0" "SELECT count(*), count(DISTINCT v) FROM vals" | tr '|' ' ')"
check "A: values from both instances" "$cnt" -eq 200000
check "A: the two instances' values are disjoint" "$dist" -eq 200000
wrong=$(q "$N0" "SELECT count(*) FROM vals WHERE ((v - 1) / 100) % 2 <> node")
check "A: every value lies in a chunk of its own node" "$wrong" -eq 0
bad=$(q "$N0" "SELECT count(*) FROM (SELECT v, lag(v) OVER (PARTITION BY node, client ORDER BY g) p FROM vals) s WHERE v <= p")
check "A: each client's values strictly increasing" "$bad" -eq 0
# adaptive step with stride: steps grow (multiples of the fixed unit min_step), nodes stay disjoint
for k in 0 1; do
    q "it_seg_node$k" "SELECT segment_create('adapt', 10, nodes => 2, node_index => $k, min_step => 10, max_step => 640, target_interval => '1 hour')" >/dev/null
    "$CLUSTER" psql "it_seg_node$k" -c "COPY (SELECT segment_next('adapt'), $k, 1, g FROM generate_series(1, 30000) g) TO STDOUT" >"$TMP/adapt.$k"
done
q "$N0" "TRUNCATE vals" >/dev/null
cat "$TMP"/adapt.* | q "$N0" "COPY vals FROM STDIN" >/dev/null
read -r cnt dist <<<"$(q "$N0" "SELECT count(*), count(DISTINCT v) FROM vals" | tr '|' ' ')"
check "A: adaptive + stride: values disjoint across the two instances" "$dist" -eq 60000
check "A: adaptive + stride: every value in a unit chunk of its own node" \
    "$(q "$N0" "SELECT count(*) FROM vals WHERE ((v - 1) / 10) % 2 <> node")" -eq 0
check "A: adaptive + stride: each node's values strictly increasing" \
    "$(q "$N0" "SELECT count(*) FROM (SELECT v, lag(v) OVER (PARTITION BY node ORDER BY g) p FROM vals) s WHERE v <= p")" -eq 0
check "A: adaptive + stride: the step grew to max_step" "$(q "$N1" "SELECT step FROM segment_status WHERE tag = 'adapt'")" -eq 640

# ---- B ----
F=it_seg_full
cluster_start "$F" 28979 -c pg_idgen.max_segments=2
check "B: pg_idgen.max_segments is a postmaster setting" \
    "$(q "$F" "SELECT context || ' ' || setting FROM pg_settings WHERE name = 'pg_idgen.max_segments'")" == "postmaster 2"
q "$F" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "SELECT segment_create('t1')" "SELECT segment_create('t2')" "SELECT segment_create('t3')" \
      "SELECT segment_next('t1')" "SELECT segment_next('t2')" >/dev/null
expect_sql_error "$F" 53400 "shared segment table is full: all 2 entries are in use" "SELECT segment_next('t3')"
check_match "B: the error hints at pg_idgen.max_segments" "$LAST_ERR" "HINT: .*pg_idgen.max_segments"
check "B: the server is still up" "$(q "$F" "SELECT segment_next('t1')")" -eq 2
q "$F" "SELECT segment_drop('t2')" >/dev/null
check "B: after segment_drop, the freed entry serves another tag" "$(q "$F" "SELECT segment_next('t3')")" -eq 1
# the entry of a tag of a database dropped meanwhile is reclaimed when the table is full
q "$F" "SELECT segment_drop('t3')" "CREATE DATABASE gone" >/dev/null
qdb "$F" gone "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT segment_create('g')" "SELECT segment_next('g')" >/dev/null
q "$F" "SELECT segment_create('t4')" >/dev/null
expect_sql_error "$F" 53400 "shared segment table is full" "SELECT segment_next('t4')"
q "$F" "DROP DATABASE gone" >/dev/null
check "B: entries of a dropped database are reclaimed" "$(q "$F" "SELECT segment_next('t4')")" -eq 1
# DROP EXTENSION drops the tags (and their sequences) without segment_drop: their entries are
# reclaimed when the table is full, the re-created tags start afresh and the old values are gone
q "$F" "SELECT segment_drop('t1')" "SELECT segment_create('t5')" "SELECT segment_next('t5')" >/dev/null
q "$F" "SET client_min_messages = warning" "DROP EXTENSION pg_idgen" "CREATE EXTENSION pg_idgen" \
      "SELECT segment_create('n1', start => 100)" "SELECT segment_create('t4', start => 500)" >/dev/null
check "B: after DROP/CREATE EXTENSION, entries of the dropped tags are reclaimed (new tag; re-created t4 from its new start)" \
    "$(q "$F" "SELECT segment_next('n1') || ' ' || segment_next('t4')")" == "100 500"

# ---- C ----
NP=it_seg_nopreload
cluster_start "$NP" 28980 -c shared_preload_libraries=
q "$NP" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT segment_create('np')" >/dev/null
expect_sql_error "$NP" 55000 "shared_preload_libraries" "SELECT segment_next('np')"
check_match "C: the hint names the setting" "$LAST_ERR" "HINT: +Add pg_idgen to shared_preload_libraries"

# ---- D ----
"$CLUSTER" stop "$F" fast >/dev/null 2>&1
rc=0; "$CLUSTER" start "$F" "$(itport 28979)" -c pg_idgen.max_segments=0 >/dev/null 2>&1 || rc=$?
check "D: the server refuses to start with pg_idgen.max_segments = 0" "$rc" -ne 0
check_match "D: the log says why" "$("$CLUSTER" log "$F" 20 2>&1)" "pg_idgen.max_segments"
finish
