#!/usr/bin/env bash
# keyed/003_fleet_nodes: a keyed space in fleet mode on two independent writable instances (two
# masters that share no state): node 0 and node 1 of nodes => 2. Ports 29126-29127 (within
# 28941-29140: the parallel lanes add 200).
# Load: on both nodes at once, 4 clients each (one psql session, COPY of keyed_next over
# generate_series, every value recorded as node, wave, client, batch, row, key, n, value in call
# order) on the same 40 hot keys, one call in five a reservation keyed_next(space, key, 3) (the
# caller owns result - 2 * nodes .. result, step nodes: all three are recorded), with
# pg_idgen.keyed_cache_size = 1000 (keys and sections evicted all the time), a step of 50 (a bound
# raise every 50 values of a bucket) and wal_writer_delay = 10 s (only keyed_next's own WAL flush
# makes a bound durable).
#  wave 1: kill -9 of one client backend of node 0 mid-load (node 0's crash restart), node 1 on;
#  wave 2: kill -9 of node 1's postmaster mid-load (and its orphaned backends), then a start;
#  wave 3: both to the end.
# Checks on the recorded values: 0 (key, value) pairs handed out by both nodes; every value of
# node k congruent to k modulo 2; per node, client and key strictly increasing in call order
# (across waves); per node and key no value twice, and each wave's values above every earlier
# wave's on that node (the events cut every session of the node they hit).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

A=it_kfleet0
B=it_kfleet1
PA=29126
PB=29127
OPTS=(-c wal_writer_delay=10000 -c checkpoint_timeout=3600 -c pg_idgen.keyed_cache_size=1000 -c max_connections=30)
cluster_start "$A" $PA "${OPTS[@]}"
cluster_start "$B" $PB "${OPTS[@]}"
q "$A" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "SELECT keyed_create('fk', step => 50, section_size => 10, nodes => 2, node_index => 0)" >/dev/null
q "$B" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "SELECT keyed_create('fk', step => 50, section_size => 10, nodes => 2, node_index => 1)" >/dev/null
check "node 0: keyed_status shows nodes and node_index" \
    "$(q "$A" "SELECT nodes || '/' || node_index FROM keyed_status WHERE space = 'fk'")" == "2/0"
check "node 1: keyed_status shows nodes and node_index" \
    "$(q "$B" "SELECT nodes || '/' || node_index FROM keyed_status WHERE space = 'fk'")" == "2/1"
OBS=$TMP/obs.tsv
: >"$OBS"

# client NODE IDX WAVE C BATCHES ROWS: one session, BATCHES COPY statements of ROWS calls on hot
# keys 1..40, every 5th call a reservation of 3 values
client() {
    local node=$1 idx=$2 w=$3 c=$4 batches=$5 rows=$6 b
    {
        echo "SET client_min_messages = warning;"
        for b in $(seq 1 "$batches"); do
            echo "COPY (SELECT $idx, $w, $c, $b, g, k, n, keyed_next('fk', k, n) FROM (SELECT g, 1 + (random() * 39)::int AS k, CASE WHEN g % 5 = 0 THEN 3 ELSE 1 END AS n FROM generate_series(1, $rows) g) s) TO STDOUT;"
        done
    } | "$CLUSTER" psql "$node" -v ON_ERROR_STOP=1 >"$TMP/n$idx.w$w.c$c.out" 2>"$TMP/n$idx.w$w.c$c.err"
}
# wave W BATCHES ROWS CUT: 4 clients on each node in the background (pids in WAVE0_PIDS,
# WAVE1_PIDS); node CUT's clients get ten times the batches: the wave's event ends them, and they
# must still be mid-load when it comes, however fast the others run
wave() {
    local w=$1 batches=$2 rows=$3 cut=${4:-} c
    WAVE0_PIDS=(); WAVE1_PIDS=()
    for c in 1 2 3 4; do
        client "$A" 0 "$w" "$c" "$([ "$cut" = 0 ] && echo $((batches * 10)) || echo "$batches")" "$rows" & WAVE0_PIDS+=($!); BG_PIDS+=($!)
        client "$B" 1 "$w" "$c" "$([ "$cut" = 1 ] && echo $((batches * 10)) || echo "$batches")" "$rows" & WAVE1_PIDS+=($!); BG_PIDS+=($!)
    done
}
# rows recorded by node IDX's clients in wave W
rows_of() { cat "$TMP"/n"$1".w"$2".c*.out 2>/dev/null | wc -l; }
wait_rows() {
    local idx=$1 w=$2 n=$3 i
    for i in $(seq 1 1200); do
        [ "$(rows_of "$idx" "$w")" -ge "$n" ] && return 0
        sleep 0.05
    done
    return 1
}
# every client of node IDX in wave W has a batch out (all four connected and loading)
wait_each() {
    local idx=$1 w=$2 i c n
    for i in $(seq 1 1200); do
        n=0
        for c in 1 2 3 4; do [ "$(wc -l < "$TMP/n$idx.w$w.c$c.out" 2>/dev/null || echo 0)" -ge 200 ] && n=$((n + 1)); done
        [ "$n" = 4 ] && return 0
        sleep 0.05
    done
    return 1
}
wait_pids() { local p; for p in "$@"; do wait "$p" 2>/dev/null || true; done; }
# keep the complete rows (a killed session's last line may be cut)
collect() { cat "$TMP"/n*.w"$1".c*.out | awk -F'\t' 'NF == 8' >>"$OBS"; }
cut_off() {
    check "wave $1: the event cut every client of node $2 off mid-load" \
        "$(grep -lE 'server closed|terminating connection|connection to server|SSL SYSCALL|could not receive' "$TMP"/n"$2".w"$1".c*.err 2>/dev/null | wc -l)" -eq 4
}
wait_up() {
    local node=$1 i
    for i in $(seq 1 300); do
        q "$node" "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}
backends() { q "$1" "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"; }

# ---- wave 1: kill -9 of a client backend of node 0 mid-load ----
wave 1 400 200 0
wait_rows 0 1 4000
wait_rows 1 1 4000
wait_each 0 1
pid=$(backends "$A" | head -1)
kill -9 "$pid"
wait_pids "${WAVE0_PIDS[@]}"
cut_off 1 0
wait_pids "${WAVE1_PIDS[@]}"
check "wave 1: node 1's clients ran to the end" "$(cat "$TMP"/n1.w1.c*.err | grep -c ERROR || true)" -eq 0
collect 1
wait_up "$A"
check "wave 1: node 0's postmaster saw backend $pid killed" \
    "$("$CLUSTER" log "$A" 300 | grep -c "(PID $pid) was terminated by signal 9" || true)" -ge 1

# ---- wave 2: kill -9 of node 1's postmaster mid-load, node 0 on ----
wave 2 400 200 1
wait_rows 1 2 4000
wait_each 1 2
pids=$(backends "$B")
kill -9 "$(head -1 "$("$CLUSTER" pgdata "$B")/postmaster.pid")"
# the orphaned backends would go on serving their clients: killed too
for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
wait_pids "${WAVE1_PIDS[@]}"
cut_off 2 1
wait_pids "${WAVE0_PIDS[@]}"
check "wave 2: node 0's clients ran to the end" "$(cat "$TMP"/n0.w2.c*.err | grep -c ERROR || true)" -eq 0
collect 2
"$CLUSTER" stop "$B" immediate >/dev/null 2>&1 || true
for _ in $(seq 1 100); do
    cluster_start "$B" $PB "${OPTS[@]}" >/dev/null 2>&1 && break
    sleep 0.2
done
wait_up "$B"
check "node 1 after its restart: still node 1 of 2" \
    "$(q "$B" "SELECT nodes || '/' || node_index FROM keyed_status WHERE space = 'fk'")" == "2/1"

# ---- wave 3: both nodes to the end ----
wave 3 20 500
wait_pids "${WAVE0_PIDS[@]}" "${WAVE1_PIDS[@]}"
check "wave 3: no client failed" "$(cat "$TMP"/n*.w3.c*.err | grep -c ERROR || true)" -eq 0
collect 3
log "load and events done at $(elapsed) s"

# ---- the recorded values (every value a reservation owns, one row each) ----
qv() { q "$A" "SET work_mem = '128MB'" "$@" | tail -1; }
q "$A" "CREATE TABLE obs (node int, w int, c int, b int, g int, k bigint, n int, v bigint)" >/dev/null
"$CLUSTER" psql "$A" -c "\\copy obs FROM '$OBS'" >/dev/null
qv "CREATE TABLE vals AS SELECT node, w, c, b, g, i, k, v - (n - 1 - i) * 2 AS v FROM obs, generate_series(0, n - 1) i" >/dev/null
log "values per node and wave: $(q "$A" "SELECT string_agg(node || '/' || w || ': ' || m, ', ' ORDER BY node, w) FROM (SELECT node, w, count(*) AS m FROM vals GROUP BY 1, 2) s")"
check "values recorded on node 0" "$(qv "SELECT count(*) FROM vals WHERE node = 0")" -ge 40000
check "values recorded on node 1" "$(qv "SELECT count(*) FROM vals WHERE node = 1")" -ge 40000
check "the same hot keys on both nodes" "$(qv "SELECT count(*) FROM (SELECT k FROM vals GROUP BY k HAVING count(DISTINCT node) = 2) s")" -eq 40
check "0 (key, value) pairs handed out by both nodes" \
    "$(qv "SELECT count(*) FROM (SELECT k, v FROM vals GROUP BY k, v HAVING count(DISTINCT node) > 1) s")" -eq 0
check "every value of node k is congruent to k modulo 2" \
    "$(qv "SELECT count(*) FROM vals WHERE v % 2 <> node")" -eq 0
check "per node: no (key, value) handed out twice" \
    "$(qv "SELECT count(*) FROM (SELECT node, k, v FROM vals GROUP BY 1, 2, 3 HAVING count(*) > 1) s")" -eq 0
check "per node, client and key: strictly increasing in call order (across waves)" \
    "$(qv "SELECT count(*) FROM (SELECT v, lag(v) OVER (PARTITION BY node, c, k ORDER BY w, b, g, i) AS p FROM vals) t WHERE v <= p")" -eq 0
check "per node and key: each wave's values above every earlier wave's (violations)" \
    "$(qv "SELECT count(*) FROM (SELECT mn, max(mx) OVER (PARTITION BY node, k ORDER BY w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM (SELECT node, k, w, min(v) AS mn, max(v) AS mx FROM vals GROUP BY 1, 2, 3) kw) t WHERE mn <= before")" -eq 0
# keyed_last on each node: at least the node's largest recorded value of the key, of its class
for idx in 0 1; do
    node=$A; [ $idx = 1 ] && node=$B
    mx=$(qv "SELECT max(v) FROM vals WHERE node = $idx AND k = 7")
    last=$(q "$node" "SELECT keyed_last('fk', 7)")
    check "node $idx: keyed_last of a key is at least its largest value handed out" "$last" -ge "$mx"
    check "node $idx: keyed_last is of the node's class" "$((last % 2))" -eq "$idx"
    check "node $idx: max_value of keyed_status covers every value handed out" \
        "$(q "$node" "SELECT max_value FROM keyed_status WHERE space = 'fk'")" -ge "$(qv "SELECT max(v) FROM vals WHERE node = $idx")"
done
finish
