#!/usr/bin/env bash
# layouts/004_parallel_decode — decoding in parallel plans: a parallel sequential scan over 1,000,000 ids per
# decoding form (the server's layout, a custom named layout read from pg_idgen_layouts, built-in
# layouts of other systems, snowflake_at/uid_compose with a layout) counts the
# same as the same query without parallel workers, and the plan really was parallel (Gather,
# workers launched). Also the functions that read the extension's tables or shared memory next to
# a parallel count in the same statement (segment_status, snowflake_worker, uid_layouts,
# snowflake_stats, uid_mask), never XX000. Default planner settings: 1M rows are enough for the
# planner to choose a parallel scan by itself.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

cluster_start par 28953 -c pg_idgen.worker_id=3 -c max_worker_processes=8 -c max_parallel_workers=4
q par "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen"
q par "SELECT uid_layout_register('mylayout', '2020-01-01Z', 39, 8, 16, unit_ms => 10)" \
      "SELECT segment_create('par')" "SELECT uid_mask_key_create('par')"
# ids of the server's layout: worker g % 8, sequence g % 4096, time g (every bit pattern differs
# per layout, so each form counts something else)
q par "CREATE TABLE ev AS SELECT ((g::bigint << 22) | ((g % 8) << 12) | (g % 4096)) AS id FROM generate_series(1, 1000000) g" \
      "VACUUM ANALYZE ev"

# par_count WHAT QUERY: QUERY's count in parallel (default settings) and without workers; checks
# both are equal and that the parallel plan launched workers; the count is left in N
par_count() {
    local what=$1 sql=$2 serial parallel plan
    serial=$(q par "SET max_parallel_workers_per_gather = 0" "$sql" 2>&1) || true
    plan=$(q par "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $sql" 2>&1) || true
    parallel=$(q par "$sql" 2>&1) || true
    check_match "$what: the plan is parallel (Gather, workers launched)" "$plan" 'Gather.*Workers Launched: [1-9]'
    check "$what: parallel count = count without workers ($serial)" "$parallel" == "$serial"
    check "$what: a count" "$parallel" -ge 0
    N=$parallel
}

par_count "uid_decode(id)" "SELECT count(*) FROM ev WHERE (uid_decode(id)).worker_id = 3"
check "uid_decode(id): worker 3 is every 8th id" "$N" -eq 125000
# (each psql session is new: the custom layout is first read by the workers and the leader during
# the parallel scan, never from a cache filled before it)
par_count "uid_decode(id, 'mylayout')" "SELECT count(*) FROM ev WHERE (uid_decode(id, 'mylayout')).worker_id = 64"
# mylayout: 39 time | 8 worker | 16 sequence: the worker is bits 16..23, (g << 6) & 255 here
check "uid_decode(id, 'mylayout'): worker 64 where bits 16..23 are 64 (g % 4 = 1)" "$N" -eq 250000
# other systems' layouts: sequence above worker (sonyflake), baidu's 29/21/13 bits of seconds
for layout in sonyflake baidu; do
    par_count "uid_decode(id, '$layout')" "SELECT count(*) FROM ev WHERE (uid_decode(id, '$layout')).sequence % 3 = 1 AND (uid_decode(id, '$layout')).worker_id % 4 <> 2"
done
par_count "snowflake_at/uid_compose with a layout" \
    "SELECT count(*) FROM ev WHERE snowflake_at('2021-01-01Z'::timestamptz + (id % 100000) * interval '1 s', 1, 'mylayout') % 7 = uid_compose('2021-01-01Z'::timestamptz + (id % 1000) * interval '1 s', 2, (id % 65536)::int, 'mylayout') % 7"

# functions of this backend's or the instance's state next to a parallel count: evaluated by the
# leader while the Gather runs (parallel mode), never XX000
for f in "(SELECT count(*) FROM segment_status)" "(SELECT worker_id FROM snowflake_worker())" \
         "(SELECT count(*) FROM uid_layouts())" "(SELECT count(*) FROM snowflake_stats())" \
         "(SELECT count(*) FROM snowflake_lease())" "uid_unmask(uid_mask(5, 'par'), 'par')" \
         "(uid_decode(5, 'mylayout')).worker_id"; do
    out=$(q par "SELECT (SELECT count(*) FROM ev WHERE id % 7 = 1), $f" 2>&1) || true
    check_match "$f next to a parallel count: no error" "$out" '^[0-9]+\|[-0-9t]+$'
done
plan=$(q par "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT (SELECT count(*) FROM ev WHERE id % 7 = 1), (SELECT count(*) FROM segment_status)")
check_match "that statement's count was parallel" "$plan" 'Workers Launched: [1-9]'

# the labels: functions of per-backend state or of the extension's tables read fresh are not
# PARALLEL SAFE
check "PARALLEL RESTRICTED: snowflake_worker, snowflake_stats, segment_persisted, segment_status_shmem" \
    "$(q par "SELECT string_agg(proname || ':' || proparallel::text, ' ' ORDER BY proname) FROM pg_proc WHERE proname IN ('snowflake_worker', 'snowflake_stats', 'segment_persisted', 'segment_status_shmem')")" \
    == "segment_persisted:r segment_status_shmem:r snowflake_stats:r snowflake_worker:r"
check "no PARALLEL SAFE function is VOLATILE but those reading the instance's shared memory (pg_idgen_worker_slots, snowflake_lease)" \
    "$(q par "SELECT string_agg(p.proname, ' ' ORDER BY p.proname) FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e' JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_idgen' WHERE p.proparallel = 's' AND p.provolatile = 'v'")" \
    == "pg_idgen_worker_slots snowflake_lease"

# a layout dropped and registered again: the leader and new workers see the new one
q par "SELECT uid_layout_drop('mylayout')" \
      "SELECT uid_layout_register('mylayout', '2020-01-01Z', 39, 16, 8, unit_ms => 10)"
par_count "re-registered mylayout (16 worker bits)" "SELECT count(*) FROM ev WHERE (uid_decode(id, 'mylayout')).worker_id = 3"
check "re-registered mylayout: worker = bits 8..23" "$N" -eq "$(q par "SELECT count(*) FROM ev WHERE (id >> 8) & 65535 = 3")"

finish
