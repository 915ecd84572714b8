#!/usr/bin/env bash
# migrate/003_import_ahead — the cut-over of a move (docs/operations.md, "By logical replication")
# right after the old cluster ran ahead of its clock. A bulk load issues ids faster than the
# layout's sequence allows per tick, so the old generator's time runs up to pg_idgen.max_drift_ms
# ahead of its clock and its durable reservation another reserve_ms beyond: pg_idgen_state_import
# puts the new cluster's generator at or above that reservation, about 2 s past the clock with
# the default settings, more than max_drift_ms + max_wait_ms. The layout is a narrow custom one
# (10 ms ticks of at most 16 ids, about 1,250 ids a second), so that any build on a loaded machine
# issues faster than the clock allows and runs ahead until max_drift_ms stops it.
#   1. The old cluster (worker id 3; max_drift_ms and reserve_ms 3 s) after the bulk load (4 x 2,500
#      ids: about 8 s of ticks): its generator at least 1.5 s ahead of its clock, its reservation
#      more than 2 s + the new cluster's max_drift_ms + max_wait_ms ahead (without the fix the
#      new cluster refuses ids until its clock gets within that of the reservation).
#   2. scripts/move-state.sh at once (the documented cut-over), then a writer on the new cluster
#      (worker id 3 too): 150 calls of snowflake_next() 10 ms apart, each in its own
#      subtransaction that records an error instead of stopping: none refused (no 55000), none
#      waited for the clock (snowflake_stats().waits = 0: the import returned once its floor was
#      usable), every id above the old cluster's last id and increasing.
#   3. A floor further ahead than the import waits for (120 s: the old cluster's clock ahead of
#      this one's): the import's raise warns at once ("refused until the clock reads"), and
#      snowflake_next() of that worker id fails 55000 with a message and HINT naming the import,
#      not a clock step back or a restart.
# Two clusters on ports 29442, 29443 (+ IT_PORT_OFFSET).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

O=it_mvahead_old
N=it_mvahead_new
conn() { echo "host=$("$CLUSTER" sockdir "$1") port=$("$CLUSTER" port "$1") user=postgres dbname=app"; }
db() { qdb "$1" app "${@:2}"; }
LAYOUT=time=41,worker=10,sequence=4,unit_ms=10

# the old cluster allows its ids 3 s ahead of its clock and reserves 3 s ahead: its reservation
# ends about 6 s past its clock after the bulk load, so that the refusals without the fix outlast
# the psql calls of the cut-over on a loaded machine; the new one runs the defaults
cluster_start "$O" 29442 -c pg_idgen.worker_id=3 -c "pg_idgen.layout=$LAYOUT" -c pg_idgen.max_drift_ms=3000 \
    -c pg_idgen.reserve_ms=3000
cluster_start "$N" 29443 -c pg_idgen.worker_id=3 -c "pg_idgen.layout=$LAYOUT"
for c in "$O" "$N"; do
    q "$c" "CREATE DATABASE app" >/dev/null
    db "$c" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
done
settings=$(db "$N" "SELECT string_agg(setting, ' ' ORDER BY name) FROM pg_settings
                    WHERE name IN ('pg_idgen.max_drift_ms', 'pg_idgen.max_wait_ms', 'pg_idgen.reserve_ms')")
read -r drift wait reserve <<<"$settings"
log "settings of the new cluster: max_drift_ms=$drift max_wait_ms=$wait reserve_ms=$reserve"

# ---- 1. the bulk load on the old cluster: the last id of 4 statements, then how far ahead
bulk=(); for i in 1 2 3 4; do bulk+=("SELECT max(snowflake_next()) FROM generate_series(1, 2500)"); done
last=$(db "$O" "${bulk[@]}" | tail -1)
ahead=$(db "$O" "SELECT lead_ms || ' ' || round(extract(epoch FROM reserved_until - clock_timestamp()) * 1000)::bigint
                  FROM snowflake_stats() WHERE worker_id = 3")
read -r lead reserved_ahead <<<"$ahead"
check "the bulk load ran the old generator ahead of its clock (lead_ms)" "$lead" -ge 1500
check "its reservation lies more than 2 s plus the new cluster's max_drift_ms + max_wait_ms ahead of the clock (ms)" \
    "$reserved_ahead" -gt $((2000 + drift + wait))

# ---- 2. the cut-over at once, then a writer on the new cluster
t0=$(date +%s%N)
"$ROOT/scripts/move-state.sh" "$(conn "$O")" "$(conn "$N")" > "$TMP/import" 2>&1 \
    || { cat "$TMP/import"; ko "move-state.sh failed"; finish; }
took=$(( ($(date +%s%N) - t0) / 1000000 ))
log "move-state.sh returned after $took ms: $(grep -c . "$TMP/import") objects; $(grep '^snowflake|worker 3|' "$TMP/import" || true)"
check_match "the import raised worker 3 above the old reservation" "$(cat "$TMP/import")" 'snowflake\|worker 3\|at or above'
out=$(db "$N" "CREATE TEMP TABLE w (i int, id bigint, err text)" \
    "DO \$\$ BEGIN
        FOR i IN 1..150 LOOP
            BEGIN
                INSERT INTO w VALUES (i, snowflake_next(), NULL);
            EXCEPTION WHEN OTHERS THEN
                INSERT INTO w VALUES (i, NULL, SQLSTATE || ' ' || SQLERRM);
            END;
            PERFORM pg_sleep(0.01);
        END LOOP;
     END \$\$" \
    "SELECT count(*) FILTER (WHERE err IS NULL) || '|' || count(*) FILTER (WHERE err IS NOT NULL) || '|' ||
            coalesce(min(id) > $last, false) || '|' ||
            coalesce(bool_and(id > prev) FILTER (WHERE prev IS NOT NULL), true) || '|' ||
            coalesce(min(err), '')
       FROM (SELECT id, err, lag(id) OVER (ORDER BY i) AS prev FROM w) s" \
    "SELECT waits FROM snowflake_stats() WHERE worker_id = 3" 2>&1) || { ko "writer: $out"; finish; }
IFS='|' read -r issued refused above increasing first_err <<<"$(sed -n 1p <<<"$out")"
waits=$(sed -n 2p <<<"$out")
check "writer after the cut-over: ids issued" "$issued" -eq 150
check "writer after the cut-over: calls refused (first error: ${first_err:-none})" "$refused" -eq 0
check "writer after the cut-over: every id above the old cluster's last id" "$above" == true
check "writer after the cut-over: ids increasing" "$increasing" == true
check "writer after the cut-over: calls that waited for the clock" "$waits" -eq 0

# ---- 3. a floor further ahead than the import waits for: a warning, then refusals naming it
out=$(db "$N" "SELECT pg_idgen_snowflake_raise_floor(9, (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 120000)" 2>&1)
check_match "a floor 120 s ahead: the raise warns at once" "$out" \
    'WARNING: +pg_idgen: the imported snowflake floor .* lies [0-9]+ ms ahead of this server.s clock: snowflake_next\(\) is refused until the clock reads'
check "a floor 120 s ahead: the raise returns, ahead of the clock" "$(grep -cx t <<<"$out")" -eq 1
PGDATABASE=app expect_sql_error "$N" 55000 \
    "pg_idgen_state_import\(\) moved this server's generator above the old cluster's reservation, which ends at .*; ids are refused until this server's clock reads" \
    "SET pg_idgen.worker_id = 9" "SELECT snowflake_next()"
check_match "the refusal's HINT names the import, not a clock step back or a restart" "$LAST_ERR" \
    'HINT: +Retry later: ids resume by themselves, above every id of the old cluster\. The import waits for this before it returns'
check "worker 3 is unaffected" "$(db "$N" "SELECT snowflake_next() > $last")" == t

finish
