#!/usr/bin/env bash
# tests/upgrade/pg_upgrade.sh [FROM] [TO] — pg_upgrade of PostgreSQL itself with pg_idgen in use
# (default 15 -> 18; `make test-upgrade`; `make test` runs 15 -> 18 and 18 -> 19). pg_idgen must be
# installed into both majors (make install-test PG=FROM; make install-test PG=TO).
#
# Old cluster (FROM), database app, pg_idgen.worker_id unset so the worker table is what counts,
# server layout `instagram` (not the default) and a registered custom layout:
#   set_worker_id(5); 20,000 snowflake ids through DEFAULT snowflake_next(); a segment tag
#   `inv` (step 100) with 2,000 values through DEFAULT segment_next('inv'); the state file.
# Clean shutdown; initdb of the new cluster (TO; --no-data-checksums on 18+ from 15-17, to match);
# pg_upgrade --check, pg_upgrade, without copying $PGDATA/pg_idgen/ (the generator state:
# pg_upgrade copies relations, not files of extensions): the new cluster refuses snowflake ids
# (55000, saying to copy the file), also after a restart; then the file copied as it says — the
# documented procedure, docs/operations.md, "Upgrading PostgreSQL". Then on the new cluster:
#   * the rows, the worker table row (5), the registered layout and the segment tag arrived;
#     ids decode the same as before (server layout and the custom layout);
#   * the worker table's system identifier is the old cluster's: snowflake_next() refuses
#     (55000) until set_worker_id(5) confirms it — pg_upgrade gives the new cluster a new
#     system identifier (if it ever kept the old one, the check accepts that instead);
#   * the generator state arrived: started with its clock 60 s behind, the server refuses to
#     generate (55000, the generator is ahead of the clock) instead of issuing ids below the old
#     ones; with the real clock, 20,000 new ids are all above every old id;
#   * 2,000 new segment values are all above every old value; no value or id appears twice.
set -euo pipefail
FROM=${1:-15}
TO=${2:-18}
. "$(dirname "$0")/../integration/lib.bash" "$(cd "$(dirname "$0")/../.." && pwd)"
TEST_NAME=pg_upgrade_${FROM}_to_${TO}

OLD=up_old NEW=up_new
CFG_FROM=$(pg_config_for "$FROM") CFG_TO=$(pg_config_for "$TO")
[ -x "$CFG_FROM" ] && [ -x "$CFG_TO" ] || { echo "PostgreSQL $FROM and $TO must be installed (make deps)" >&2; exit 1; }
. "$ROOT/tests/upgrade/lib.bash"
db() { qdb "$1" app "${@:2}"; }
OPTS=(-c pg_idgen.worker_id=-1 -c pg_idgen.layout=instagram)

# ------------------------------------------------------------------ old cluster
use "$FROM"
cluster_start "$OLD" 28991 "${OPTS[@]}"
register_cluster "$NEW"
q "$OLD" "CREATE DATABASE app" >/dev/null
db "$OLD" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT set_worker_id(5)" \
    "SELECT uid_layout_register('up_custom', '2020-01-01Z', 39, 16, 8, unit_ms => 10)" \
    "CREATE TABLE t (id bigint PRIMARY KEY DEFAULT snowflake_next(), n int NOT NULL)" \
    "INSERT INTO t (n) SELECT g FROM generate_series(1, 20000) g" \
    "SELECT segment_create('inv', step => 100)" \
    "CREATE TABLE inv (no bigint PRIMARY KEY DEFAULT segment_next('inv'), n int NOT NULL)" \
    "INSERT INTO inv (n) SELECT g FROM generate_series(1, 2000) g" >/dev/null
check "old: PostgreSQL major" "$(q "$OLD" "SHOW server_version_num" | cut -c1-2)" -eq "$FROM"
old_max=$(db "$OLD" "SELECT max(id) FROM t")
old_inv_max=$(db "$OLD" "SELECT max(no) FROM inv")
old_decode=$(db "$OLD" "SELECT md5(string_agg(format('%s %s %s %s', d.ts, d.worker_id, d.sequence, c.ts), ',' ORDER BY t.id))
                        FROM t, uid_decode(t.id) d, uid_decode(t.id, 'up_custom') c")
old_layout=$(db "$OLD" "SELECT row(l.*)::text FROM snowflake_layout() l")
old_sysid=$(q "$OLD" "SELECT system_identifier FROM pg_control_system()")
old_hwm=$(db "$OLD" "SELECT persisted_hwm FROM segment_status WHERE tag = 'inv'")
old_ext=$(db "$OLD" "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")
check "old: 20000 ids, worker 5" "$(db "$OLD" "SELECT count(DISTINCT t.id) FILTER (WHERE d.worker_id = 5) FROM t, uid_decode(t.id) d")" -eq 20000
check "old: 2000 segment values 1..2000" "$(db "$OLD" "SELECT count(DISTINCT no) || ' ' || min(no) || ' ' || max(no) FROM inv")" == "2000 1 2000"
strip_pg_attver "$OLD" "$TO"
"$CLUSTER" stop "$OLD" fast
OLD_DATA=$("$CLUSTER" pgdata "$OLD")
state_old=$(runuser -u postgres -- cat "$OLD_DATA/pg_idgen/snowflake.state")
check_match "old: state file after the clean shutdown names worker 5" "$state_old" $'\nworker 5 [0-9]+'
log "old state file: $(tr '\n' ' ' <<<"$state_old")"

# ------------------------------------------------------------------ pg_upgrade
use "$TO"
# data checksums: on by default from 18, off before; pg_upgrade needs the old cluster's setting
INITDB_OPTS=$([ "$TO" -ge 18 ] && [ "$FROM" -lt 18 ] && echo --no-data-checksums || true) "$CLUSTER" init "$NEW"
NEW_DATA=$("$CLUSTER" pgdata "$NEW")
run_pg_upgrade "$FROM" "$TO" "$OLD" "$NEW" --check || finish
# The state file left out (pg_upgrade copies relations, not pg_idgen/): the new cluster, started
# by pg_upgrade in binary upgrade mode without one, wrote one that says so
PG_UPGRADE_COPY_STATE=0 run_pg_upgrade "$FROM" "$TO" "$OLD" "$NEW" || finish
check_match "new, state file left out: pg_upgrade's start marked it as missing the old cluster's" \
    "$(runuser -u postgres -- cat "$NEW_DATA/pg_idgen/snowflake.state")" $'\nlayout pg_upgrade:'
cluster_start "$NEW" 28992 "${OPTS[@]}"
check "new, state file left out: the worker table row arrived" "$(db "$NEW" "SELECT worker_id FROM pg_idgen_worker")" -eq 5
expect_sql_error "$NEW" 55000 "pg_upgrade made this cluster, and the old cluster's generator state \(pg_idgen/snowflake.state\) has not been copied here" \
    "\\c app" "SELECT snowflake_next()"
check_match "new, state file left out: the refusal says how (copy the file, restart)" "$LAST_ERR" \
    'copy pg_idgen/snowflake.state from the old cluster.s data directory'
check "new, state file left out: no id was handed out" "$(db "$NEW" "SELECT count(*) FROM t")" -eq 20000
check "new, state file left out: a restart keeps the refusal" \
    "$("$CLUSTER" restart "$NEW" "${OPTS[@]}" >/dev/null 2>&1; db "$NEW" "SELECT snowflake_next()" 2>&1 | grep -c 'has not been copied here')" -eq 1
"$CLUSTER" stop "$NEW" fast
# ... then copied as the refusal says
runuser -u postgres -- cp -a "$OLD_DATA/pg_idgen/snowflake.state" "$NEW_DATA/pg_idgen/snowflake.state"
state_new=$(runuser -u postgres -- cat "$NEW_DATA/pg_idgen/snowflake.state")
check "new: state file is the old one" "$state_new" == "$state_old"

# ------------------------------------------------------------------ new cluster, clock 60 s behind
CLUSTER_FAKETIME=1 cluster_start "$NEW" 28992 "${OPTS[@]}"
"$CLUSTER" faketime "$NEW" -60s
check "new: PostgreSQL major" "$(q "$NEW" "SHOW server_version_num" | cut -c1-2)" -eq "$TO"
check "new: pg_idgen version as before" "$(db "$NEW" "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$old_ext"
check "new: rows of t" "$(db "$NEW" "SELECT count(*) FROM t")" -eq 20000
check "new: worker table row arrived" "$(db "$NEW" "SELECT worker_id FROM pg_idgen_worker")" -eq 5
check "new: registered layout arrived" "$(db "$NEW" "SELECT count(*) FROM uid_layouts() WHERE name = 'up_custom' AND NOT builtin")" -eq 1
check "new: server layout as before" "$(db "$NEW" "SELECT row(l.*)::text FROM snowflake_layout() l")" == "$old_layout"
check "new: every old id decodes as before (server layout and up_custom)" \
    "$(db "$NEW" "SELECT md5(string_agg(format('%s %s %s %s', d.ts, d.worker_id, d.sequence, c.ts), ',' ORDER BY t.id))
                 FROM t, uid_decode(t.id) d, uid_decode(t.id, 'up_custom') c")" == "$old_decode"
check "new: segment tag arrived with its high-water mark" "$(db "$NEW" "SELECT persisted_hwm FROM segment_status WHERE tag = 'inv'")" -ge "$old_hwm"
new_sysid=$(q "$NEW" "SELECT system_identifier FROM pg_control_system()")
if [ "$new_sysid" != "$old_sysid" ]; then
    expect_sql_error "$NEW" 55000 "set on another cluster" "\\c app" "SELECT snowflake_next()"
    db "$NEW" "SELECT set_worker_id(5)" >/dev/null
    ok "new: set_worker_id(5) confirms the worker id on the new cluster (system identifier $old_sysid -> $new_sysid)"
else
    ok "new: system identifier kept ($new_sysid): no confirmation needed"
fi
expect_sql_error "$NEW" 55000 "ahead|behind|clock" "\\c app" "SELECT snowflake_next()"

# ------------------------------------------------------------------ real clock: new ids and values
"$CLUSTER" faketime "$NEW" +0
# the old cluster's reservation reaches up to reserve_ms ahead; wait until the clock is past it
for i in $(seq 1 100); do db "$NEW" "SELECT snowflake_next()" >/dev/null 2>&1 && break; sleep 0.1; done
db "$NEW" "INSERT INTO t (n) SELECT 20000 + g FROM generate_series(1, 20000) g" \
         "INSERT INTO inv (n) SELECT 2000 + g FROM generate_series(1, 2000) g" >/dev/null
check "new: 40000 distinct ids" "$(db "$NEW" "SELECT count(DISTINCT id) FROM t")" -eq 40000
check "new: smallest new id above the largest old id" \
    "$(db "$NEW" "SELECT (min(id) FILTER (WHERE n > 20000) > $old_max)::text FROM t")" == true
check "new: new ids carry worker 5" "$(db "$NEW" "SELECT count(*) FROM t, uid_decode(t.id) d WHERE t.n > 20000 AND d.worker_id = 5")" -eq 20000
check "new: 4000 distinct segment values" "$(db "$NEW" "SELECT count(DISTINCT no) FROM inv")" -eq 4000
check "new: smallest new segment value above the largest old one" \
    "$(db "$NEW" "SELECT (min(no) FILTER (WHERE n > 2000) > $old_inv_max)::text FROM inv")" == true
log "old max id $old_max, new min id $(db "$NEW" "SELECT min(id) FILTER (WHERE n > 20000) FROM t"); old max value $old_inv_max, new min value $(db "$NEW" "SELECT min(no) FILTER (WHERE n > 2000) FROM inv")"
finish
