#!/usr/bin/env bash
# keyed/001_under_load: keyed sequences under load and through every kind of failure. No value of a key is
# ever handed out twice or below one handed out before. Ports 29038-29039 (within 28941-29140: the
# parallel lanes add 200).
# First, values handed out in an open transaction (never committed, so no commit flushes the WAL)
# survive kill -9 of its backend and an immediate stop: the bound raise's own flush did it.
# Load: waves of 8 concurrent clients (one psql session each, COPY of keyed_next over
# generate_series, every value recorded as wave, client, batch, row, key, value in call order):
# hot keys 1..1000 and cold keys (one call each; wave 4 alone calls 1,000,000 distinct keys),
# with pg_idgen.keyed_cache_size = 1000, so keys and sections are evicted all the time, and
# wal_writer_delay = 10 s, so only keyed_next's own WAL flush can make a bound durable.
#  wave 1: kill -9 of one client's backend mid-load (crash restart of the instance);
#  wave 2: kill -9 of the postmaster mid-load (and of its orphaned backends), then a start;
#  wave 3: stop -m immediate mid-load, then a start;
#  wave 4: to the end (1M cold keys), then a clean restart;
#  wave 5: with a synchronous standby; the primary is stopped immediately mid-load and the
#          standby promoted; wave 6 runs on the promoted node;
#  then pg_dump of the promoted node, pg_restore into a fresh database: wave 7 there.
# Checks on the recorded values: hot keys per client strictly increasing in call order (across
# waves too), no value twice, each wave's values of a key above every earlier wave's (every wave
# starts after the previous one ended: the events kill every session); cold keys called once
# each; and the seqsvr restart rule per bucket of sections (section mod 1024): after each event
# every value is above every value handed out before it in its bucket. Then
# eviction alone: 100,000 keys three times round through the 1,000-entry cache, in one session.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

P=it_keyed
S=it_keyed_stby
OPTS=(-c wal_writer_delay=10000 -c checkpoint_timeout=3600 -c pg_idgen.keyed_cache_size=1000 -c max_connections=40)
cluster_start "$P" 29038 "${OPTS[@]}"
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "SELECT keyed_create('ks', step => 1000, section_size => 1000)" >/dev/null
OBS=$TMP/obs.tsv
: >"$OBS"

# ---- a key cached while its section was evicted, then evicted by its section's return: it
# continues above its values. keyed_cache_size = 1000 gives each of the 128 lock partitions one
# set of 8 entries, and all keys of a section share its partition: key 2 takes 1..5; keys 3..9
# fill the set and push the section's floor out (the least recently used entry); key 10 brings
# the section back, which pushes key 2 out, into the space's floor. The section's floor must be
# read after that eviction, so key 2 continues from 5, not from where the section stood. ----
q "$P" "SELECT keyed_create('evs', step => 1000, section_size => 1000000)" >/dev/null
evs=$(q "$P" "SELECT max(keyed_next('evs', 2)) FROM generate_series(1, 5)" \
    "SELECT count(keyed_next('evs', k)) FROM generate_series(3, 10) k" \
    "SELECT keyed_next('evs', 2)" | xargs)
check "a key evicted while its section comes back continues above its values (5, 8 keys, then 6)" "$evs" == "5 8 6"

# ---- a space already in use is found without the space's lock: a new session's keyed_last and
# keyed_next (below the bound) do not wait behind a raise in flight, here stood in for by a
# superuser's pg_idgen_keyed_raise_bounds (raising nothing) in an open transaction: it holds the
# space's lock (an object lock of class pg_idgen_keyed_spaces) in ExclusiveLock mode, which
# claims and raises conflict with ----
evseq=$(q "$P" "SELECT seq::regclass FROM pg_idgen_keyed_spaces WHERE space = 'evs'")
"$CLUSTER" psql "$P" -At -c "BEGIN" \
    -c "SELECT pg_idgen_keyed_raise_bounds('evs', (SELECT array_agg(bound ORDER BY bucket) FROM pg_idgen_keyed_bounds WHERE space = 'evs'))" \
    -c "SELECT pg_sleep(600)" >/dev/null 2>&1 &
BG_PIDS+=($!)
held_lock() { [ "$(q "$P" "SELECT count(*) FROM pg_locks WHERE locktype = 'object' AND classid = 'pg_idgen_keyed_spaces'::regclass AND objid = '$evseq'::regclass AND mode = 'ExclusiveLock' AND granted")" = 1 ]; }
wait_until 10 "the space's lock held by an open pg_idgen_keyed_raise_bounds" held_lock \
    && ok "the space's lock is held by an open pg_idgen_keyed_raise_bounds"
check "a new session reads and takes values of a space in use while the space's lock is held" \
    "$(q "$P" "SET lock_timeout = '2s'" "SELECT keyed_last('evs', 2)" "SELECT keyed_next('evs', 2)" | xargs)" == "6 7"
q "$P" "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(600)'" >/dev/null

# client NODE WAVE C BATCHES ROWS COLD_BASE: one session, BATCHES COPY statements of ROWS calls,
# every 8th call a random hot key (1..1000), the others cold keys never called before
client() {
    local node=$1 w=$2 c=$3 batches=$4 rows=$5 base=$6 b
    {
        echo "SET client_min_messages = warning;"
        for b in $(seq 1 "$batches"); do
            echo "COPY (SELECT $w, $c, $b, g, k, keyed_next('ks', k) FROM (SELECT g, CASE WHEN g % 8 = 0 THEN 1 + (random() * 999)::int ELSE $base + (($b - 1) * $rows + g) * 8 + $c END AS k FROM generate_series(1, $rows) g) s) TO STDOUT;"
        done
    } | "$CLUSTER" psql "$node" -v ON_ERROR_STOP=1 >"$TMP/w$w.c$c.out" 2>"$TMP/w$w.c$c.err"
}
# wave NODE W BATCHES ROWS: 8 clients in the background (their pids in WAVE_PIDS)
wave() {
    local node=$1 w=$2 batches=$3 rows=$4 c
    WAVE_PIDS=()
    for c in $(seq 1 8); do
        client "$node" "$w" "$c" "$batches" "$rows" $((w * 100000000)) &
        WAVE_PIDS+=($!); BG_PIDS+=($!)
    done
}
# wait until the clients of wave W have recorded at least N values in all, at least 2 of them
wait_rows() {
    local w=$1 n=$2 i
    for i in $(seq 1 600); do
        [ "$(cat "$TMP"/w"$w".c*.out 2>/dev/null | wc -l)" -ge "$n" ] \
            && [ "$(grep -lc . "$TMP"/w"$w".c*.out 2>/dev/null | wc -l)" -ge 2 ] && return 0
        sleep 0.05
    done
    return 1
}
wait_wave() { local p; for p in "${WAVE_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done; }
# every client of wave W was cut off by the event (so the event came mid-load): an error each
cut_off() { check "wave $1: the event cut every client off mid-load" "$(grep -lE 'server closed|terminating connection|connection to server|SSL SYSCALL|could not receive' "$TMP"/w"$1".c*.err 2>/dev/null | wc -l)" -eq 8; }
# keep the complete rows of wave W (a killed session's last line may be cut)
collect() { cat "$TMP"/w"$1".c*.out | awk -F'\t' 'NF == 6' >>"$OBS"; }
wait_up() {
    local node=$1 i
    for i in $(seq 1 200); do
        q "$node" "SELECT 1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}
restart() { "$CLUSTER" stop "$P" "$1" >/dev/null 2>&1 || true; cluster_start "$P" 29038 "${OPTS[@]}"; }

# ---- values of an open transaction (no commit ever flushes their WAL): kill -9 of its backend,
# immediate stop. Step 10: 200 bound raises, the sequence's WAL record rewritten every 32. Only
# keyed_next's own flush makes the bound durable. ----
q "$P" "SELECT keyed_create('dur', step => 10, section_size => 10)" >/dev/null
open_tx() {
    rm -f "$TMP/open.out"
    "$CLUSTER" psql "$P" -At -c "BEGIN" -c "SELECT max(keyed_next('dur', 7)) FROM generate_series(1, 2000)" \
        -c "SELECT pg_backend_pid()" -c "SELECT pg_sleep(600)" -c "COMMIT" >"$TMP/open.out" 2>/dev/null &
    BG_PIDS+=($!)
    local i
    for i in $(seq 1 400); do
        [ "$(grep -cE '^[0-9]+$' "$TMP/open.out" 2>/dev/null || true)" -ge 2 ] && return 0
        sleep 0.05
    done
    return 1
}
open_tx
before=$(sed -n 1p "$TMP/open.out"); kill -9 "$(sed -n 2p "$TMP/open.out")"
wait_up "$P"
check "open transaction, kill -9 of its backend: the key continues above" "$(q "$P" "SELECT keyed_next('dur', 7)")" -gt "$before"
open_tx
before=$(sed -n 1p "$TMP/open.out")
"$CLUSTER" stop "$P" immediate >/dev/null 2>&1
cluster_start "$P" 29038 "${OPTS[@]}"
check "open transaction, immediate stop: the key continues above" "$(q "$P" "SELECT keyed_next('dur', 7)")" -gt "$before"

# ---- wave 1: kill -9 of a backend mid-load ----
wave "$P" 1 4000 500
wait_rows 1 8000
backends() { q "$P" "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"; }
pid=$(backends | head -1)
kill -9 "$pid"
wait_wave; collect 1
cut_off 1
wait_up "$P"
check "wave 1: the postmaster saw backend $pid killed" "$("$CLUSTER" log "$P" 300 | grep -c "(PID $pid) was terminated by signal 9" || true)" -ge 1

# ---- wave 2: kill -9 of the postmaster mid-load ----
wave "$P" 2 4000 500
wait_rows 2 8000
pids=$(backends)
kill -9 "$(head -1 "$("$CLUSTER" pgdata "$P")/postmaster.pid")"
# the orphaned backends would go on serving their clients: killed too (the new postmaster
# refuses to start while they attach the old shared memory)
for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
wait_wave; collect 2
cut_off 2
"$CLUSTER" stop "$P" immediate >/dev/null 2>&1 || true
for i in $(seq 1 100); do
    cluster_start "$P" 29038 "${OPTS[@]}" >/dev/null 2>&1 && break
    sleep 0.2
done
wait_up "$P"

# ---- wave 3: immediate stop mid-load ----
wave "$P" 3 4000 500
wait_rows 3 8000
"$CLUSTER" stop "$P" immediate >/dev/null 2>&1
wait_wave; collect 3
cut_off 3
cluster_start "$P" 29038 "${OPTS[@]}"

# ---- wave 4: 8 clients to the end, 1,000,000 distinct cold keys, then a clean restart ----
t0=$(date +%s.%N)
wave "$P" 4 25 5720
wait_wave; collect 4
log "wave 4: $(cat "$TMP"/w4.c*.out | wc -l) calls in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
check "wave 4: no client failed" "$(cat "$TMP"/w4.c*.err | grep -c ERROR || true)" -eq 0
raises=$(q "$P" "SELECT raises FROM keyed_status WHERE space = 'ks'")
log "wave 4: bound raises since the last start: $raises"
restart fast

# ---- wave 5: synchronous standby, primary stopped immediately mid-load, standby promoted ----
standby_start "$S" "$P" 29039
q "$P" "ALTER SYSTEM SET synchronous_standby_names = '*'" "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 100); do
    [ "$(q "$P" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = 1 ] && break
    sleep 0.1
done
check "wave 5: the standby is synchronous" "$(q "$P" "SELECT string_agg(sync_state, ',') FROM pg_stat_replication")" == "sync"
wave "$P" 5 4000 500
wait_rows 5 8000
"$CLUSTER" stop "$P" immediate >/dev/null 2>&1
wait_wave; collect 5
cut_off 5
q "$S" "SELECT pg_promote(true, 60)" >/dev/null
check "the standby is promoted" "$(q "$S" "SELECT pg_is_in_recovery()")" == "f"
wave "$S" 6 5 2000
wait_wave; collect 6
check "wave 6 (promoted node): no client failed" "$(cat "$TMP"/w6.c*.err | grep -c ERROR || true)" -eq 0

# ---- pg_dump of the promoted node, restored into a fresh database: wave 7 there ----
SOCK=$("$CLUSTER" sockdir "$S"); PORT=$("$CLUSTER" port "$S")
"$PGBIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$TMP/db.dump" postgres
q "$S" "CREATE DATABASE restored" >/dev/null
"$PGBIN/pg_restore" -h "$SOCK" -p "$PORT" -U postgres -d restored --exit-on-error "$TMP/db.dump"
check "restored: the space and its linked backing sequence" \
    "$(qdb "$S" restored "SELECT count(*) FROM pg_idgen_keyed_spaces s JOIN pg_depend d ON d.objid = s.seq AND d.deptype = 'a' WHERE s.space = 'ks'")" -eq 1
(export PGDATABASE=restored; wave "$S" 7 5 2000; wait_wave)
collect 7
log "load and events done at $(elapsed) s"
check "wave 7 (restored database): no client failed" "$(cat "$TMP"/w7.c*.err | grep -c ERROR || true)" -eq 0

# ---- the recorded values ----
qv() { q "$S" "SET work_mem = '256MB'" "$@" | tail -1; }
q "$S" "CREATE TABLE obs (w int, c int, b int, g int, k bigint, v bigint)" >/dev/null
"$CLUSTER" psql "$S" -c "\\copy obs FROM '$OBS'" >/dev/null
log "values per wave: $(q "$S" "SELECT string_agg(w || ': ' || n, ', ' ORDER BY w) FROM (SELECT w, count(*) AS n FROM obs GROUP BY w) s")"
check "values recorded" "$(qv "SELECT count(*) FROM obs")" -ge 1250000
# cold keys (above 1000) are called once each: they must be distinct; their values are checked
# by the restart rule below. Hot keys (1..1000) get every check.
check "cold keys: each called once (no key repeated, so no value of one repeated)" \
    "$(qv "SELECT count(*) FROM (SELECT k FROM obs WHERE k > 1000 GROUP BY k HAVING count(*) > 1) s")" -eq 0
check "wave 4: 1,000,000 distinct cold keys" "$(qv "SELECT count(*) FROM obs WHERE w = 4 AND k > 1000")" -ge 1000000
qv "CREATE TABLE hot AS SELECT * FROM obs WHERE k <= 1000" >/dev/null
check "hot keys: per client and key, strictly increasing in call order (across waves)" \
    "$(qv "SELECT count(*) FROM (SELECT v, lag(v) OVER (PARTITION BY c, k ORDER BY w, b, g) AS p FROM hot) t WHERE v <= p")" -eq 0
check "hot keys: no value handed out twice" \
    "$(qv "SELECT count(*) FROM (SELECT k, v FROM hot GROUP BY k, v HAVING count(*) > 1) t")" -eq 0
check "hot keys: each key's values of a wave above all its values of earlier waves (violations per wave)" \
    "$(qv "SELECT coalesce(string_agg(w || ':' || n, ' '), 'none') FROM (SELECT w, count(*) AS n FROM (SELECT w, mn, max(mx) OVER (PARTITION BY k ORDER BY w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM (SELECT k, w, min(v) AS mn, max(v) AS mx FROM hot GROUP BY k, w) kw) t WHERE mn <= before GROUP BY w) s")" == none
check "hot keys: each called by several clients" \
    "$(qv "SELECT count(*) FROM (SELECT k FROM hot GROUP BY k HAVING count(DISTINCT c) >= 4) t")" -ge 990
# the restart rule per bucket of sections (section = key div 1000, bucket = section mod 1024)
qv "CREATE TABLE wb AS SELECT w, (k / 1000) % 1024 AS b, min(v) AS mn, max(v) AS mx FROM obs GROUP BY 1, 2" >/dev/null
for w in 2 3 4 5 6 7; do
    check "wave $w: after the event, every value above every earlier value of its bucket of sections (restart rule)" \
        "$(qv "SELECT count(*) FROM wb n WHERE n.w = $w AND n.mn <= (SELECT max(mx) FROM wb o WHERE o.w < $w AND o.b = n.b)")" -eq 0
done
log "buckets whose first value after an event is below the space's largest value before it (no longer pulled up by the busiest key): $(qv "SELECT string_agg(w || ': ' || n, ', ' ORDER BY w) FROM (SELECT n.w, count(*) AS n FROM wb n WHERE n.w >= 2 AND n.mn < (SELECT max(mx) FROM wb o WHERE o.w < n.w) GROUP BY n.w) s")"
log "verification done at $(elapsed) s"

# ---- eviction alone: 100,000 keys, three rounds, one session, a 1,000-entry cache ----
q "$S" "SELECT keyed_create('ev', step => 100, section_size => 100)" >/dev/null
q "$S" "CREATE TABLE ev AS SELECT g / 100000 + 1 AS r, g % 100000 + 1 AS k, keyed_next('ev', g % 100000 + 1) AS v FROM generate_series(0, 299999) g" >/dev/null
check "eviction: 300,000 values" "$(q "$S" "SELECT count(*) FROM ev")" -eq 300000
check "eviction: every key strictly increasing round after round" \
    "$(q "$S" "SELECT count(*) FROM (SELECT v, lag(v) OVER (PARTITION BY k ORDER BY r) AS p FROM ev) t WHERE v <= p")" -eq 0
last77=$(q "$S" "SELECT keyed_last('ev', 77)")
check "eviction: keyed_last is at least the key's last value" "$last77" -ge "$(q "$S" "SELECT v FROM ev WHERE k = 77 AND r = 3")"
check "eviction: the next value is above keyed_last" "$(q "$S" "SELECT keyed_next('ev', 77)")" -gt "$last77"
log "eviction: $(q "$S" "SELECT 'bound raises ' || raises || ', bound ' || bound FROM keyed_status WHERE space = 'ev'")"
finish
