#!/usr/bin/env bash
# tests/monitoring/exporter.sh — pg_idgen's metrics through a real postgres_exporter (Debian's
# prometheus-postgres-exporter 0.11) with prometheus/queries.yaml, on loopback (make
# test-monitoring; not one of tests/integration/*/*.sh: it runs on one major). Two clusters on
# ports 29035-29036 (+ IT_PORT_OFFSET); the exporter listens on 127.0.0.1:$MON_EXPORTER_PORT
# (default 29037 + IT_PORT_OFFSET).
#  1. R, the lease registry (leases off), where two worker ids (1 and 2) generate: a member of
#     pg_monitor reads pg_idgen_metrics with both; a plain role reads the view too but sees
#     exactly the worker ids snowflake_stats() shows it (its own, 1), one slot used, and no
#     other row than a superuser's but those of the other worker id and the slot count.
#  2. X, lease_mode fixed for worker id 4 with R as registry: it holds the lease, generates
#     12345 ids, and hands out 777 values of segment tag "inv" moved to 2^62.
#  3. the exporter, connected to X as a pg_monitor member (no superuser), serves
#     pg_idgen_ids_issued_total{worker_id="4"} 12345, pg_idgen_lease_held 1 and
#     pg_idgen_lease_state_info{state="held"} 1, pg_idgen_lease_valid_seconds > 0,
#     pg_idgen_segment_headroom{tag="inv"} = 2^63 - 1 - the tag's persisted high-water mark,
#     pg_idgen_segment_values_issued_total 777, the time field's seconds left, the worker slots;
#     every metric of the view has its series; the exporter reports no query error.
# Pass/fail never depends on timing: every wait polls for a state (bounded).
set -euo pipefail
. "$(dirname "$0")/../integration/lib.bash"
. "$ROOT/tests/integration/lease.bash"

EXPORTER=${POSTGRES_EXPORTER:-/usr/bin/prometheus-postgres-exporter}
[ -x "$EXPORTER" ] || { echo "[$TEST_NAME] FAIL: $EXPORTER not found (apt-get install prometheus-postgres-exporter; scripts/deps.sh)"; exit 1; }
R=it_monr
X=it_monx
PR=$(itport 29035)
PX=$(itport 29036)
EPORT=${MON_EXPORTER_PORT:-$(itport 29037)}

# ---- 1. R: two worker ids; pg_monitor vs a plain role
cluster_start "$R" 29035
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "CREATE ROLE mon LOGIN IN ROLE pg_monitor" "CREATE ROLE plain LOGIN" >/dev/null
q "$R" "SET pg_idgen.worker_id = 1" "SELECT count(snowflake_next()) FROM generate_series(1, 100)" \
    "SET pg_idgen.worker_id = 2" "SELECT count(snowflake_next()) FROM generate_series(1, 50)" >/dev/null
# as ROLE SQL...: as that role, in a session generating with worker id 1 (the plain role's own)
as() { local role=$1; shift; q "$R" "SET pg_idgen.worker_id = 1" "SET ROLE $role" "$@" | grep -vx SET; }
WIDS="SELECT coalesce(string_agg(DISTINCT labels->>'worker_id', ',' ORDER BY labels->>'worker_id'), '') FROM pg_idgen_metrics WHERE metric NOT LIKE 'pg\\_idgen\\_lease%' AND labels ? 'worker_id'"
check "1: pg_monitor member: worker ids in pg_idgen_metrics" "$(as mon "$WIDS")" == "1,2"
check "1: pg_monitor member: ids issued of worker id 2" \
    "$(as mon "SELECT value FROM pg_idgen_metrics WHERE metric = 'pg_idgen_ids_issued_total' AND labels->>'worker_id' = '2'")" == 50
check "1: pg_monitor member: worker slots used" "$(as mon "SELECT value FROM pg_idgen_metrics WHERE metric = 'pg_idgen_worker_slots_used'")" == 2
check "1: plain role: worker ids of snowflake_stats()" \
    "$(as plain "SELECT string_agg(worker_id::text, ',' ORDER BY worker_id) FROM snowflake_stats()")" == "1"
check "1: plain role: the same worker ids in pg_idgen_metrics" "$(as plain "$WIDS")" == "1"
check "1: plain role: worker slots used counts only its own" \
    "$(as plain "SELECT value FROM pg_idgen_metrics WHERE metric = 'pg_idgen_worker_slots_used'")" == 1
# every row the plain role sees is one a superuser sees; what it misses is worker id 2's rows
# (the slot count, checked above, and the clock values, which move, are left out)
ROWS="SELECT metric || ' ' || labels::text || CASE WHEN metric IN ('pg_idgen_time_field_left_seconds', 'pg_idgen_logical_clock_lead_seconds') THEN '' ELSE ' ' || value END FROM pg_idgen_metrics WHERE metric <> 'pg_idgen_worker_slots_used'"
as plain "$ROWS" | LC_ALL=C sort > "$TMP/plain.rows"
q "$R" "$ROWS" | LC_ALL=C sort > "$TMP/super.rows"
check "1: plain role: rows in pg_idgen_metrics (worker id 1: five, the time field, the slot capacity)" "$(wc -l < "$TMP/plain.rows")" -eq 7
check "1: plain role: no row a superuser does not see" "$(LC_ALL=C comm -23 "$TMP/plain.rows" "$TMP/super.rows" | wc -l)" -eq 0
check "1: the superuser's other rows: worker id 2's five" \
    "$(LC_ALL=C comm -13 "$TMP/plain.rows" "$TMP/super.rows" | grep -c '"worker_id": "2"' || true) of $(LC_ALL=C comm -13 "$TMP/plain.rows" "$TMP/super.rows" | wc -l)" == "5 of 5"
check "1: the view is granted to PUBLIC and pg_monitor can read it" \
    "$(q "$R" "SELECT has_table_privilege('mon', 'pg_idgen_metrics', 'SELECT') AND has_table_privilege('plain', 'pg_idgen_metrics', 'SELECT')")" == t

# ---- 2. X: a lease, ids, a segment tag
REG="host=127.0.0.1 port=$PR user=postgres dbname=postgres connect_timeout=2"
cluster_start "$X" 29036 -c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=4 -c pg_idgen.node_name=x
q "$X" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "CREATE ROLE mon LOGIN IN ROLE pg_monitor" \
    "ALTER SYSTEM SET pg_idgen.registry = '$REG'" "SELECT pg_reload_conf()" >/dev/null
wait_for "2: X holds worker id 4" state_is "$X" held
check "2: 12345 ids issued" "$(q "$X" "SELECT count(DISTINCT snowflake_next()) FROM generate_series(1, 12345)")" -eq 12345
q "$X" "SELECT segment_create('inv', 100)" "SELECT segment_set('inv', 4611686018427387904)" >/dev/null
check "2: 777 values of tag inv" "$(q "$X" "SELECT count(DISTINCT segment_next('inv')) FROM generate_series(1, 777)")" -eq 777
HWM=$(q "$X" "SELECT persisted_hwm FROM segment_status WHERE tag = 'inv'")

# ---- 3. the exporter
DSN="host=127.0.0.1 port=$PX user=mon dbname=postgres sslmode=disable"
DATA_SOURCE_NAME=$DSN "$EXPORTER" --web.listen-address="127.0.0.1:$EPORT" \
    --extend.query-path="$ROOT/prometheus/queries.yaml" --disable-settings-metrics \
    --disable-default-metrics --no-collector.bgwriter --no-collector.database \
    > "$TMP/exporter.log" 2>&1 &
BG_PIDS+=("$!")
scrape() { curl -fsS "http://127.0.0.1:$EPORT/metrics" > "$TMP/metrics" 2>/dev/null && grep -q '^pg_idgen_ids_issued_total' "$TMP/metrics"; }
wait_for "3: the exporter serves pg_idgen metrics" scrape
# metric NAME LABEL-REGEX: the value of the first series of NAME whose labels match
metric() { awk -v n="$1" -v re="$2" 'index($0, n "{") == 1 && $0 ~ re { print $NF; exit }' "$TMP/metrics"; }
check "3: pg_idgen_ids_issued_total{worker_id=\"4\"}" "$(metric pg_idgen_ids_issued_total 'worker_id="4"')" == 12345
check "3: pg_idgen_ids_issued_total is a counter" "$(grep -c '^# TYPE pg_idgen_ids_issued_total counter' "$TMP/metrics")" -eq 1
check "3: pg_idgen_lease_held{worker_id=\"4\"}" "$(metric pg_idgen_lease_held 'worker_id="4"')" == 1
check "3: pg_idgen_lease_state_info{state=\"held\"}" "$(metric pg_idgen_lease_state_info 'state="held"')" == 1
check "3: pg_idgen_lease_valid_seconds > 0" "$(q "$X" "SELECT '$(metric pg_idgen_lease_valid_seconds '')'::float8 > 0")" == t
check "3: pg_idgen_lease_renewals_total >= 1" "$(q "$X" "SELECT '$(metric pg_idgen_lease_renewals_total '')'::float8 >= 1")" == t
check "3: pg_idgen_segment_values_issued_total{tag=\"inv\"}" "$(metric pg_idgen_segment_values_issued_total 'tag="inv"')" == 777
check_match "3: ... labelled with its database" "$(grep '^pg_idgen_segment_headroom{' "$TMP/metrics")" 'datname="postgres"'
H=$(metric pg_idgen_segment_headroom 'tag="inv"')
check "3: pg_idgen_segment_headroom{tag=\"inv\"} = 2^63 - 1 - persisted hwm ($HWM)" \
    "$(q "$X" "SELECT '$H'::float8 = (9223372036854775807 - $HWM::numeric)::float8")" == t
check "3: pg_idgen_time_field_left_seconds within 60 s of snowflake_layout()" \
    "$(q "$X" "SELECT abs('$(metric pg_idgen_time_field_left_seconds 'layout="default"')'::float8 - extract(epoch FROM time_field_ends - now())::float8) < 60 FROM snowflake_layout()")" == t
check "3: pg_idgen_worker_slots_used" "$(metric pg_idgen_worker_slots_used '')" == 1
check "3: pg_idgen_worker_slots_capacity" "$(metric pg_idgen_worker_slots_capacity '')" == 256
missing=""
for m in $(q "$X" "SELECT DISTINCT metric FROM pg_idgen_metrics ORDER BY 1"); do
    grep -q "^$m{" "$TMP/metrics" || missing+=" $m"
done
check "3: every metric of the view has its series" "${missing:-none}" == none
check "3: the exporter logged no error" "$(grep -ciE 'level=error|error running query' "$TMP/exporter.log" || true)" -eq 0

finish
