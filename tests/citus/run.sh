#!/usr/bin/env bash
# tests/citus/run.sh — pg_idgen on a Citus cluster (make test-citus PG=NN CITUS_PG_CONFIG=...;
# PostgreSQL 16+): a coordinator and two workers on loopback (scripts/cluster.sh clusters, ports
# 29190-29193 + IT_PORT_OFFSET), shared_preload_libraries = 'citus,pg_idgen', every node's worker id
# from its Citus group (pg_idgen.worker_id_source = citus). Citus is the user's: CITUS_PG_CONFIG=
# <pg_config of a PostgreSQL with Citus installed>, the same major as PG (tested with Citus 14.0.1);
# the script runs a private copy of that installation with pg_idgen installed into it
# (tests/citus/lib.bash, scripts/private-install.sh) and never writes into the given one. Without
# CITUS_PG_CONFIG it stops at once, saying so.
#  0. A worker id stored on the coordinator for the database and with ALTER ROLE ALL (as before
#     Citus was loaded): citus_add_node of both workers succeeds (Citus replays the stored values
#     on the node it activates, with DDL propagation off: pg_idgen stores them there with a
#     WARNING, not applied), every node keeps its Citus group's worker id, citus_disable_node +
#     citus_activate_node of a worker succeed; the RESETs of the upgrade notes clear every node.
#  A. Bulk loads that cross many refills of a segment tag (step 100) and of a keyed space, with
#     DEFAULT segment_next(): COPY of 20,000 rows and INSERT ... SELECT of 20,000 through the
#     coordinator, COPY through a worker, INSERT ... SELECT from the distributed table itself
#     (evaluated on the workers): each succeeds, every value once, every value in the stride of
#     the node that evaluated it.
#  B. Worker ids: each node's is its Citus group id (coordinator 0); ALTER DATABASE / ALTER ROLE /
#     ALTER ROLE IN DATABASE ... SET pg_idgen.worker_id is refused (22023), a database-level or ALTER ROLE ALL
#     value already in pg_db_role_setting is not applied (WARNING at connection); a session's SET
#     pg_idgen.worker_id is refused (22023); a node in the default
#     mode with no worker id says so with a HINT that names worker_id_source = citus;
#     pg_idgen_citus_check() on the coordinator fails on a strided tag with nodes => fewer than the
#     nodes, on a plain keyed space, on a tag missing on a node, and on a worker id on two nodes.
#  C. Under load (tests/citus/load.py: through every node, every insert form — single and
#     multi-row VALUES, a prepared statement under the generic plan, COPY, INSERT ... SELECT from
#     generate_series and from a distributed table), a third worker added (first with
#     pg_idgen.worker_id = 1 in its postgresql.conf, which the check must catch, then restarted
#     with worker_id_source = citus), a rebalance onto it, a shard moved with
#     citus_move_shard_placement, a worker killed with -9 and restarted. Asserted on the rows
#     and on every value a client got back: no id, segment value or keyed value (per key) twice,
#     every acknowledged row and COPY batch there, every row's worker id that of the node its client
#     was connected to (INSERT ... SELECT from the distributed table: a worker's), its segment value
#     in that node's stride and its keyed value in that node's class, no 23505 error, and
#     pg_idgen_citus_check() clean at the end.
#  D. The nodes restarted in the default mode (pg_idgen.worker_id = 100 + group in each node's
#     own configuration) with citus.propagate_set_commands = 'local': BEGIN; SET LOCAL
#     pg_idgen.worker_id = 7; INSERT ... SELECT through the coordinator is refused (22023), so
#     no worker generates with the session's worker id; the same INSERT ... SELECT without it: every
#     id once, each carrying the worker id of the node that evaluated it.
# Env: CITUS_KEEP=DIR keeps the recorded values and the server logs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PG=${PG:-18}
TEST_NAME=citus/run
# shellcheck source=lib.bash
. "$ROOT/tests/citus/lib.bash"
citus_require
# shellcheck source=../integration/lib.bash
. "$ROOT/tests/integration/lib.bash" "$ROOT"
TEST_NAME=citus/run
log() { printf '[%s] %3d s: %s\n' "$TEST_NAME" "$SECONDS" "$*"; }   # with the time since the start
VENV=${PG_IDGEN_HA_VENV:-$PG_IDGEN_PG_HOME/patroni/venv}
[ -x "$VENV/bin/python" ] || VENV=/var/cache/pg_idgen/patroni/venv
citus_use_given

C=cit_c0 W1=cit_w1 W2=cit_w2 W3=cit_w3
PC=29190 P1=29191 P2=29192 P3=29193
declare -A PORT=([$C]=$PC [$W1]=$P1 [$W2]=$P2 [$W3]=$P3)
OUT=$TMP/out; mkdir -p "$OUT"
LOAD_PIDS=()
citus_cleanup() {
    set +e
    touch "$OUT/stop" 2>/dev/null
    local p; for p in ${LOAD_PIDS[@]+"${LOAD_PIDS[@]}"}; do kill "$p" 2>/dev/null; done
    if [ -n "${CITUS_KEEP:-}" ]; then
        mkdir -p "$CITUS_KEEP"; cp -r "$OUT"/. "$CITUS_KEEP"/ 2>/dev/null
        for c in $C $W1 $W2 $W3; do cp "$("$CLUSTER" pgdata "$c")/log/postgresql.log" "$CITUS_KEEP/$c.log" 2>/dev/null; done
    fi
}
trap 'rc=$?; citus_cleanup; (exit $rc); cleanup' EXIT
secs() { echo $((SECONDS - $1)); }
dsn() { echo "host=127.0.0.1 port=$(itport "${PORT[$1]}") user=postgres dbname=postgres"; }

T0=$SECONDS
for n in $C $W1 $W2 $W3; do register_cluster "$n"; done
for n in $C $W1 $W2; do citus_node "$n" "${PORT[$n]}" & done
# the third worker is prepared now (as a machine is before it joins), in the default mode: it is
# added to the cluster under load below
citus_node $W3 $P3 -c pg_idgen.worker_id_source=default &
wait
# pg_idgen first, on a coordinator not yet in Citus's metadata: its group 0 is not in pg_dist_node
# (as a worker not added yet, which says group 0 too), so it refuses to generate
cq $C "CREATE EXTENSION pg_idgen" >/dev/null
expect_sql_error $C 55000 "Citus group 0 is not in pg_dist_node" "SELECT snowflake_next()"
citus_form $C $PC
# ---- 0. a worker id stored on the coordinator before Citus: adding and re-activating nodes ------
# stored as ALTER DATABASE postgres SET / ALTER ROLE ALL SET store them (refused with Citus
# loaded and DDL propagation on, so written as a server without Citus wrote them)
q $C "INSERT INTO pg_db_role_setting VALUES ((SELECT oid FROM pg_database WHERE datname = 'postgres'), 0, '{pg_idgen.worker_id=7}'), (0, 0, '{pg_idgen.worker_id=7}')" >/dev/null 2>&1
added() {   # added PORT: citus_add_node of that worker, its errors in $OUT
    cq $C "SELECT citus_add_node('127.0.0.1', $(itport "$1"))" >"$OUT/add.$1" 2>&1
}
added $P1 && added $P2 \
    && ok "citus_add_node of both workers with pg_idgen.worker_id = 7 stored on the coordinator for the database and for ALTER ROLE ALL" \
    || ko "citus_add_node with a stored worker id on the coordinator: $(grep -hE 'ERROR|WARNING' "$OUT"/add.* | head -3 | tr '\n' ' ')"
declare -A GROUP
for n in $C $W1 $W2; do GROUP[$n]=$(q "$n" "SELECT groupid FROM pg_dist_local_group" 2>/dev/null); done
for n in $C $W1 $W2; do
    check "$n: with the stored worker id 7, worker id = its Citus group ${GROUP[$n]}" \
        "$(q "$n" "SELECT worker_id || ' ' || source FROM snowflake_worker()" 2>/dev/null)" == "${GROUP[$n]} citus"
done
check "the ids of worker 1 carry its group's worker id ${GROUP[$W1]}, not 7" \
    "$(q $W1 "SELECT (uid_decode(snowflake_next())).worker_id" 2>/dev/null)" -eq "${GROUP[$W1]}"
out=$(cq $C "SELECT citus_disable_node('127.0.0.1', $(itport $P2), synchronous => true)" \
            "SELECT citus_activate_node('127.0.0.1', $(itport $P2))" 2>&1) || true
check "citus_disable_node + citus_activate_node of worker 2 with the stored worker id: no ERROR, worker 2 active" \
    "$(grep -c 'ERROR' <<<"$out") $(q $C "SELECT isactive FROM pg_dist_node WHERE nodeport = $(itport $P2)" 2>/dev/null)" == "0 t"
check "worker 2 re-activated: worker id = its Citus group ${GROUP[$W2]}" \
    "$(q $W2 "SELECT worker_id FROM snowflake_worker()" 2>/dev/null)" -eq "${GROUP[$W2]}"
# the upgrade notes' RESETs, on every node (with DDL propagation off: each its own)
for n in $C $W1 $W2; do
    cq "$n" "SET citus.enable_ddl_propagation = off" "ALTER DATABASE postgres RESET pg_idgen.worker_id" \
        "ALTER ROLE ALL RESET pg_idgen.worker_id" "ALTER ROLE ALL IN DATABASE postgres RESET pg_idgen.worker_id" >/dev/null 2>&1
done
check "after the RESETs no node has a stored worker id" \
    "$(for n in $C $W1 $W2; do q "$n" "SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ',') ~ 'pg_idgen'"; done | paste -sd' ')" == "0 0 0"
check "pg_idgen created on the coordinator reaches both workers when they are added" \
    "$(q $W1 "SELECT count(*) FROM pg_extension WHERE extname = 'pg_idgen'")$(q $W2 "SELECT count(*) FROM pg_extension WHERE extname = 'pg_idgen'")" == 11
log "coordinator and two workers up in $(secs "$T0") s (groups: ${GROUP[$C]} ${GROUP[$W1]} ${GROUP[$W2]})"

# every node: the segment tag and the keyed space, its node_index = its group (nodes => 4: room for
# the third worker). From the coordinator, as docs/fleet.md says: run_command_on_all_nodes, each
# node taking its own group as node_index; a node added later gets them connected to it (gens)
SEG_SQL="SELECT segment_create('cseg', step => 100, nodes => 4, node_index => (SELECT groupid FROM pg_dist_local_group))"
KEY_SQL="SELECT keyed_create('cks', nodes => 4, node_index => (SELECT groupid FROM pg_dist_local_group))"
check "segment_create and keyed_create on all nodes from the coordinator (run_command_on_all_nodes)" \
    "$(cq $C "SELECT count(*) FILTER (WHERE success) || '/' || count(*) FROM (SELECT * FROM run_command_on_all_nodes(\$\$$SEG_SQL\$\$) UNION ALL SELECT * FROM run_command_on_all_nodes(\$\$$KEY_SQL\$\$)) r")" == 6/6
gens() { cq "$1" "$SEG_SQL" "$KEY_SQL" >/dev/null; }

# ---- A. bulk loads across many refills, DEFAULT segment_next() -------------------------------
cq $C "CREATE TABLE inv (no bigint PRIMARY KEY DEFAULT segment_next('cseg'), v text, k int, kv bigint)" \
      "SELECT create_distributed_table('inv', 'no', shard_count => 4)" >/dev/null
bulk() {   # bulk NODE WHAT SQL: runs SQL through NODE, a check that it succeeded
    local out rc=0 t=$SECONDS
    out=$(q "$1" "$3" 2>&1) || rc=$?
    if [ $rc -eq 0 ]; then ok "$2 through $1: $(tail -1 <<<"$out") ($(secs "$t") s)"
    else ko "$2 through $1: exit $rc: $(grep -E 'ERROR|FATAL|lost|terminated' <<<"$out" | head -3 | tr '\n' ' ')"; fi
}
bulk $C "COPY of 20,000 rows (DEFAULT segment_next, 200 refills of step 100)" "COPY inv (v) FROM PROGRAM 'seq 1 20000'"
bulk $C "INSERT ... SELECT of 20,000 rows from generate_series" "INSERT INTO inv (v) SELECT 'g' || g FROM generate_series(1, 20000) g"
bulk $W1 "COPY of 20,000 rows" "COPY inv (v) FROM PROGRAM 'seq 1 20000 | sed s/^/w/'"
# keyed_next() and DEFAULT snowflake_next() in bulk: a keyed space refills its sections too
cq $C "CREATE TABLE kb (id bigint PRIMARY KEY DEFAULT snowflake_next(), k int, kv bigint)" \
      "SELECT create_distributed_table('kb', 'id', shard_count => 4)" >/dev/null
bulk $C "INSERT ... SELECT of 20,000 rows with keyed_next('cks', k) for 20 keys, DEFAULT snowflake_next()" \
    "INSERT INTO kb (k, kv) SELECT g % 20, keyed_next('cks', g % 20) FROM generate_series(1, 20000) g"
# from the distributed table itself: the SELECT, and the DEFAULT with it, run where inv's shards are
bulk $C "INSERT ... SELECT of the 20,000 COPY rows from the distributed table" "INSERT INTO inv (v) SELECT 'd' || v FROM inv WHERE v ~ '^[0-9]+\$'"
stride() { echo "((no - 1) / 100) % 4"; }
check "bulk: 80,000 rows, every segment value once" \
    "$(q $C "SELECT count(*) || '/' || count(DISTINCT no) FROM inv")" == "80000/80000"
check "bulk through the coordinator: every value in its stride (node_index ${GROUP[$C]})" \
    "$(q $C "SELECT count(*) FILTER (WHERE $(stride) = ${GROUP[$C]}) || '/' || count(*) FROM inv WHERE v ~ '^([0-9]|g)'")" == "40000/40000"
check "bulk through worker 1: every value in its stride (node_index ${GROUP[$W1]})" \
    "$(q $C "SELECT count(*) FILTER (WHERE $(stride) = ${GROUP[$W1]}) || '/' || count(*) FROM inv WHERE v ~ '^w'")" == "20000/20000"
check "keyed values in bulk: every (key, value) once, all in the coordinator's class, ids of worker id ${GROUP[$C]}" \
    "$(q $C "SELECT count(DISTINCT (k, kv)) || '/' || count(*) FILTER (WHERE kv % 4 = ${GROUP[$C]}) || '/' || count(DISTINCT id) FILTER (WHERE (uid_decode(id)).worker_id = ${GROUP[$C]}) FROM kb")" == "20000/20000/20000"
# where the DEFAULT of INSERT ... SELECT from a distributed table is evaluated: on the workers
# holding the source's shards, each in its own stride
check "INSERT ... SELECT from the distributed table: 20,000 values, all in the workers' strides" \
    "$(q $C "SELECT count(*) FILTER (WHERE $(stride) IN (${GROUP[$W1]}, ${GROUP[$W2]})) || '/' || count(*) FROM inv WHERE v ~ '^d'")" == "20000/20000"
check "INSERT ... SELECT from the distributed table: both workers evaluated some" \
    "$(q $C "SELECT count(DISTINCT $(stride)) FROM inv WHERE v ~ '^d'")" -eq 2

# ---- B. worker ids ----------------------------------------------------------------------------
for n in $C $W1 $W2; do
    check "$n: worker id = its Citus group ${GROUP[$n]}, source citus" \
        "$(q "$n" "SELECT worker_id || ' ' || source FROM snowflake_worker()")" == "${GROUP[$n]} citus"
done
expect_sql_error $C 22023 'where Citus is loaded.*same worker id' "ALTER DATABASE postgres SET pg_idgen.worker_id = 7"
expect_sql_error $C 22023 'where Citus is loaded' "ALTER ROLE postgres SET pg_idgen.worker_id = 7"
expect_sql_error $C 22023 'where Citus is loaded' "ALTER ROLE postgres IN DATABASE postgres SET pg_idgen.worker_id = 7"
check "nothing of the refused settings reached a worker" \
    "$(q $W1 "SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ',') ~ 'pg_idgen'")" -eq 0
# a database-level worker id already stored (made before Citus was loaded): not applied
q $W1 "INSERT INTO pg_db_role_setting VALUES ((SELECT oid FROM pg_database WHERE datname = 'postgres'), 0, '{pg_idgen.worker_id=7}')" >/dev/null
out=$(q $W1 "SELECT worker_id FROM snowflake_worker()" 2>&1)
check_match "a stored ALTER DATABASE ... SET pg_idgen.worker_id = 7: WARNING at connection, worker 1 keeps its group's id" \
    "$out" "WARNING:.*pg_idgen.worker_id cannot be set for a database.*"$'\n'"${GROUP[$W1]}\$"
q $W1 "DELETE FROM pg_db_role_setting WHERE setconfig = '{pg_idgen.worker_id=7}'" >/dev/null
# the same stored with ALTER ROLE ALL ... SET (database 0, role 0: the source "global")
q $W1 "INSERT INTO pg_db_role_setting VALUES (0, 0, '{pg_idgen.worker_id=7}')" >/dev/null
out=$(q $W1 "SELECT worker_id FROM snowflake_worker()" 2>&1)
check_match "a stored ALTER ROLE ALL SET pg_idgen.worker_id = 7: WARNING at connection, worker 1 keeps its group's id" \
    "$out" "WARNING:.*pg_idgen.worker_id cannot be set for a database.*"$'\n'"${GROUP[$W1]}\$"
q $W1 "DELETE FROM pg_db_role_setting WHERE setconfig = '{pg_idgen.worker_id=7}'" >/dev/null
expect_sql_error $W1 55000 'not used with pg_idgen.worker_id_source = citus' "SELECT set_worker_id(7)"
expect_sql_error $W1 22023 'cannot be set in a session where Citus is loaded' "SET pg_idgen.worker_id = 5"
check "pg_idgen_citus_check(): coordinator and both workers, no problem" \
    "$(cq $C "SELECT count(*) || ' rows, ' || count(problem) || ' problems' FROM pg_idgen_citus_check()")" == "9 rows, 0 problems"
# controls: each mistake is caught
cq $C "SELECT segment_create('small', nodes => 2, node_index => 0)" "SELECT keyed_create('plain')" >/dev/null
cq $W1 "SELECT segment_create('small', nodes => 2, node_index => 1)" >/dev/null
out=$(cq $C "SELECT kind, name, node, problem FROM pg_idgen_citus_check(fail => false) WHERE problem IS NOT NULL" 2>&1)
check_match "check: a tag with nodes => 2 where 3 nodes evaluate" "$out" "segment\|small\|.*nodes => 2, but 3 nodes can evaluate"
check_match "check: the tag missing on worker 2" "$out" "segment\|small\|127.0.0.1:$(itport $P2)\|segment tag 'small' is missing on this node"
check_match "check: a plain keyed space" "$out" "keyed\|plain\|.*plain keyed space 'plain': every node"
expect_sql_error $C 55000 'can hand out a value twice or fail on a node: [0-9]+ problem' "SELECT count(*) FROM pg_idgen_citus_check()"
cq $C "SELECT segment_drop('small')" "SELECT keyed_drop('plain')" >/dev/null; cq $W1 "SELECT segment_drop('small')" >/dev/null

# ---- values computed next to a shard (a trigger): they do not move with the shard -----------------
# tick is distributed by tenant; its trigger (citus.enable_unsafe_triggers) runs on the worker that
# holds the tenant's shard: n from a fleet-mode keyed space, p from a plain one (the control)
cq $C "SELECT keyed_create('tk', nodes => 4, node_index => ${GROUP[$C]})" >/dev/null
for n in $W1 $W2; do cq "$n" "SELECT keyed_create('tk', nodes => 4, node_index => ${GROUP[$n]}), keyed_create('tkp')" >/dev/null; done
cq $C "SELECT keyed_create('tkp')" \
      "CREATE TABLE tick (tenant int, i int, n bigint, p bigint, PRIMARY KEY (tenant, i))" \
      "CREATE FUNCTION tick_numbers() RETURNS trigger LANGUAGE plpgsql AS \$\$BEGIN NEW.n := keyed_next('tk', NEW.tenant); NEW.p := keyed_next('tkp', NEW.tenant); RETURN NEW; END\$\$" \
      "SET citus.enable_unsafe_triggers = on" \
      "SELECT create_distributed_table('tick', 'tenant', shard_count => 4)" \
      "CREATE TRIGGER tick_numbers BEFORE INSERT ON tick FOR EACH ROW EXECUTE FUNCTION tick_numbers()" >/dev/null 2>"$OUT/tick.err" \
    || ko "a distributed table with a trigger: $(head -3 "$OUT/tick.err")"
tick_ins() { cq $C "SET citus.enable_unsafe_triggers = on" "INSERT INTO tick (tenant, i) VALUES (7, $1), (7, $(($1 + 1))), (7, $(($1 + 2)))" >/dev/null; }
tick_ins 1
shard=$(q $C "SELECT get_shard_id_for_distribution_column('tick', 7)")
from=$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $shard")
to=$(itport $P1); [ "$from" != "$to" ] || to=$(itport $P2)
cq $C "SELECT citus_move_shard_placement($shard, '127.0.0.1', $from, '127.0.0.1', $to, shard_transfer_mode => 'block_writes')" >/dev/null
tick_ins 4
gf=$(q $C "SELECT groupid FROM pg_dist_node WHERE nodeport = $from") gt=$(q $C "SELECT groupid FROM pg_dist_node WHERE nodeport = $to")
check "trigger next to the shard, fleet-mode space: 6 numbers for the tenant, 3 in the class of the old node (group $gf), 3 in the new one's (group $gt)" \
    "$(q $C "SELECT count(DISTINCT n) || ' ' || count(*) FILTER (WHERE i <= 3 AND n % 4 = $gf) || ' ' || count(*) FILTER (WHERE i > 3 AND n % 4 = $gt) FROM tick WHERE tenant = 7")" == "6 3 3"
check "control: a plain keyed space next to the shard hands the tenant the same numbers again after the move" \
    "$(q $C "SELECT string_agg(p::text, ',' ORDER BY i) FILTER (WHERE i <= 3) = string_agg(p::text, ',' ORDER BY i) FILTER (WHERE i > 3) FROM tick WHERE tenant = 7")" == t
out=$(cq $C "SELECT problem FROM pg_idgen_citus_check(fail => false) WHERE name = 'tkp' AND problem IS NOT NULL" 2>&1)
check_match "check: the plain keyed space is a problem on every node" "$out" "plain keyed space 'tkp'"
cq $C "DROP TABLE tick" >/dev/null
for n in $C $W1 $W2; do cq "$n" "SELECT keyed_drop('tk'), keyed_drop('tkp')" >/dev/null; done

# ---- C. under load: every node, every insert form; a worker added, rebalance, move, kill -9 ----
cq $C "CREATE TABLE ct (id bigint PRIMARY KEY DEFAULT snowflake_next(), seg bigint NOT NULL DEFAULT segment_next('cseg'),
                        k int, kv bigint, node text, client text, form text, batch int)" \
      "SELECT create_distributed_table('ct', 'id', shard_count => 8)" \
      "CREATE TABLE src (id bigint PRIMARY KEY, k int)" \
      "SELECT create_distributed_table('src', 'id', colocate_with => 'ct')" \
      "INSERT INTO src SELECT g * 7919, g % 4 FROM generate_series(1, 16) g" >/dev/null
load_start() {   # load_start NODE...: a loader with clients through each NODE
    local args=() n
    for n in "$@"; do args+=("$n=$(dsn "$n")"); done
    "$VENV/bin/python" "$ROOT/tests/citus/load.py" "$OUT" "${args[@]}" >>"$OUT/load.log" 2>&1 &
    LOAD_PIDS+=($!)
}
progress() { cat "$OUT/progress.$1" 2>/dev/null || echo 0; }
grown() { [ "$(progress "$1")" -ge "$2" ]; }   # grown LOADER N: its clients got N rows
TL=$SECONDS
load_start $C $W1 $W2
L1=$C-$W1-$W2
wait_until 60 "the first 3,000 rows through the three nodes" grown $L1 3000 || true
log "load: $(progress $L1) rows in $(secs "$TL") s"

# a third worker, added under load, first in the default mode: without a worker id it says what to
# do; given one of its own with set_worker_id() that repeats worker 1's (the mistake an inventory
# kept by hand allows), the check catches it
t=$SECONDS
citus_add $C $P3 >/dev/null
GROUP[$W3]=$(q $W3 "SELECT groupid FROM pg_dist_local_group")
gens $W3
log "worker 3 added under load in $(secs "$t") s (group ${GROUP[$W3]}), load at $(progress $L1) rows"
out=$(q $W3 '\set VERBOSITY verbose' "SELECT snowflake_next()" 2>&1 | tr '\n' ' ' || true)
check_match "a Citus node without a worker id: 55000 not configured, the HINT names worker_id_source = citus" \
    "$out" "55000: pg_idgen worker id is not configured.*HINT: +This server runs Citus: set pg_idgen.worker_id_source = citus in postgresql.conf of every node"
q $W3 "SELECT set_worker_id(${GROUP[$W1]})" >/dev/null
out=$(cq $C '\set VERBOSITY verbose' "SELECT count(*) FROM pg_idgen_citus_check()" 2>&1 | tr '\n' ' ' || true)
check_match "check: worker 3 with worker 1's worker id ${GROUP[$W1]} (set_worker_id) is caught" \
    "$out" "55000: pg_idgen on this Citus cluster can hand out a value twice.*worker_id on 127.0.0.1:$(itport $P3): worker id ${GROUP[$W1]} is also the worker id of 127.0.0.1:$(itport $P1)"
"$CLUSTER" restart $W3 "${CITUS_CONF[@]}" >/dev/null 2>&1
check "worker 3 restarted with worker_id_source = citus: its worker id is its group ${GROUP[$W3]}" \
    "$(q $W3 "SELECT worker_id || ' ' || source FROM snowflake_worker()")" == "${GROUP[$W3]} citus"
check "pg_idgen_citus_check() with worker 3: no problem" \
    "$(cq $C "SELECT count(*) || ' rows, ' || count(problem) || ' problems' FROM pg_idgen_citus_check()")" == "12 rows, 0 problems"
load_start $W3
L2=$W3
wait_until 60 "rows through worker 3" grown $L2 300 || true

# rebalance onto worker 3 under load, then one more shard moved
t=$SECONDS
before=$(q $C "SELECT count(*) FROM citus_shards WHERE table_name = 'ct'::regclass AND nodeport = $(itport $P3)")
cq $C "SELECT rebalance_table_shards('ct')" >/dev/null 2>"$OUT/rebalance.err" || ko "rebalance_table_shards: $(head -3 "$OUT/rebalance.err")"
on3=$(q $C "SELECT count(*) FROM citus_shards WHERE table_name = 'ct'::regclass AND nodeport = $(itport $P3)")
check "rebalance under load ($(secs "$t") s): shards of ct on worker 3 before/after" "$before/$on3" != "0/0"
log "load at $(progress $L1) + $(progress $L2) rows"
t=$SECONDS
shard=$(q $C "SELECT shardid FROM citus_shards WHERE table_name = 'ct'::regclass AND nodeport = $(itport $P1) ORDER BY shardid LIMIT 1")
cq $C "SELECT citus_move_shard_placement($shard, '127.0.0.1', $(itport $P1), '127.0.0.1', $(itport $P2))" >/dev/null 2>"$OUT/move.err" \
    || ko "citus_move_shard_placement: $(head -3 "$OUT/move.err")"
check "citus_move_shard_placement under load ($(secs "$t") s): shard $shard now on worker 2" \
    "$(q $C "SELECT nodeport FROM citus_shards WHERE shardid = $shard")" -eq "$(itport $P2)"
n1=$(progress $L1)
wait_until 60 "the load going on after the move" grown $L1 $((n1 + 1000)) || true

# kill -9 of worker 2's postmaster and its children, then a restart
t=$SECONDS
W2DATA=$("$CLUSTER" pgdata $W2)
"$CLUSTER" crash $W2 >/dev/null 2>&1
# a child the postmaster forked while it was being killed outlives it (a backend keeps its working
# directory, the data directory): killed too, by its pid, so that the restart finds no shared
# memory in use, as after a machine's crash
orphans() { local d; for d in /proc/[0-9]*; do [ "$(readlink "$d/cwd" 2>/dev/null)" = "$W2DATA" ] && echo "${d#/proc/}"; done; return 0; }
for p in $(orphans); do kill -KILL "$p" 2>/dev/null || true; done
sleep 1   # the clients meet the dead node (their errors are recorded, not asserted)
restarted() { "$CLUSTER" start $W2 "$(itport $P2)" "${CITUS_CONF[@]}" >/dev/null 2>&1; }
wait_until 30 "worker 2 restarted after kill -9" restarted || "$CLUSTER" log $W2 20
n1=$(progress $L1)
wait_until 60 "the load going on after worker 2's restart" grown $L1 $((n1 + 1000)) || true
log "worker 2 killed and back in $(secs "$t") s; load at $(progress $L1) + $(progress $L2) rows"

# ---- stop, recover, verify -----------------------------------------------------------------
touch "$OUT/stop"
end=$((SECONDS + 40))   # each client ends with its statement (statement_timeout 20 s)
for p in ${LOAD_PIDS[@]+"${LOAD_PIDS[@]}"}; do
    while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
    kill -0 "$p" 2>/dev/null && { kill -KILL "$p"; ko "a loader did not stop within 40 s"; wait "$p" 2>/dev/null; continue; }
    wait "$p" || ko "a loader failed: $(tail -5 "$OUT/load.log")"
done
LOAD_PIDS=()
log "load stopped after $(secs "$TL") s"
# two-phase commits of multi-shard statements that a kill left prepared: each node that
# coordinated some resolves its own
for n in $C $W1 $W2 $W3; do cq "$n" "SELECT recover_prepared_transactions()" >/dev/null 2>&1 || true; done
cat "$OUT"/values.*.tsv > "$OUT/values.tsv"; cat "$OUT"/copies.*.tsv > "$OUT/copies.tsv"; cat "$OUT"/errors.*.tsv > "$OUT/errors.tsv"
cq $C "CREATE TABLE got AS SELECT * FROM ct" \
      "CREATE TABLE rec (node text, client text, form text, id bigint, seg bigint, k int, kv bigint, batch int)" \
      "CREATE TABLE copies (node text, client text, batch int, n int)" \
      "CREATE TABLE grp (node text PRIMARY KEY, g int)" \
      "INSERT INTO grp VALUES ('$C', ${GROUP[$C]}), ('$W1', ${GROUP[$W1]}), ('$W2', ${GROUP[$W2]}), ('$W3', ${GROUP[$W3]})" >/dev/null
"$CLUSTER" psql $C -q -c "\\copy rec FROM '$OUT/values.tsv'" -c "\\copy copies FROM '$OUT/copies.tsv'"
rows=$(q $C "SELECT count(*) FROM got")
forms=$(q $C "SELECT string_agg(form || ' ' || n, ', ' ORDER BY form) FROM (SELECT form, count(*) n FROM got GROUP BY 1) f")
log "rows: $rows ($forms); values returned to clients: $(q $C "SELECT count(*) FROM rec WHERE id >= 0"), COPY batches acknowledged: $(q $C "SELECT count(*) FROM copies")"
log "errors seen by clients (SQLSTATE: count): $(cut -f3 "$OUT/errors.tsv" | sort | uniq -c | awk '{ printf "%s: %s  ", $2, $1 }')"
check "every insert form wrote rows through every node (4 nodes x 6 forms)" \
    "$(q $C "SELECT count(DISTINCT (node, form)) FROM got")" -eq 24
check "no id twice" "$(q $C "SELECT count(*) - count(DISTINCT id) FROM got")" -eq 0
check "no segment value twice across the nodes" "$(q $C "SELECT count(*) - count(DISTINCT seg) FROM got")" -eq 0
check "no keyed value twice for a key across the nodes" "$(q $C "SELECT count(kv) - count(DISTINCT (k, kv)) FILTER (WHERE kv IS NOT NULL) FROM got")" -eq 0
check "no value handed to a client twice" "$(q $C "SELECT count(*) - count(DISTINCT id) FROM rec WHERE id >= 0")" -eq 0
check "every acknowledged row is there" \
    "$(q $C "SELECT count(*) FROM rec r WHERE r.id >= 0 AND NOT EXISTS (SELECT FROM got g WHERE g.id = r.id AND g.seg = r.seg AND g.kv IS NOT DISTINCT FROM NULLIF(r.kv, -1))")" -eq 0
check "every acknowledged COPY batch is there whole" \
    "$(q $C "SELECT count(*) FROM copies c WHERE c.n <> (SELECT count(*) FROM got g WHERE g.client = c.client AND g.batch = c.batch AND g.form = 'copy')")" -eq 0
check "rows through a node by VALUES, prepared, COPY, INSERT ... SELECT from generate_series: the worker id is that node's" \
    "$(q $C "SELECT count(*) FROM got JOIN grp USING (node) WHERE form <> 'dist' AND (uid_decode(id)).worker_id <> grp.g")" -eq 0
check "INSERT ... SELECT from the distributed table: worker ids of workers only" \
    "$(q $C "SELECT count(*) FROM got WHERE form = 'dist' AND (uid_decode(id)).worker_id NOT IN (${GROUP[$W1]}, ${GROUP[$W2]}, ${GROUP[$W3]})")" -eq 0
check "every segment value in the stride of the node that made the id" \
    "$(q $C "SELECT count(*) FROM got WHERE ((seg - 1) / 100) % 4 <> (uid_decode(id)).worker_id")" -eq 0
check "every keyed value in the class of the node that made the id" \
    "$(q $C "SELECT count(*) FROM got WHERE kv IS NOT NULL AND kv % 4 <> (uid_decode(id)).worker_id")" -eq 0
check "no client saw a duplicate key (23505)" "$(awk -F'\t' '$3 == "23505"' "$OUT/errors.tsv" | wc -l)" -eq 0
# the clients' errors are Citus's and the connections' while nodes move or die, none of pg_idgen's
check "no client error from pg_idgen (worker id, segment tag, keyed space)" \
    "$(grep -ciE 'pg_idgen|worker id|segment|keyed' "$OUT/errors.tsv" || true)" -eq 0
check "pg_idgen_citus_check() at the end: no problem" \
    "$(cq $C "SELECT count(problem) FROM pg_idgen_citus_check()")" -eq 0
log "figures: $rows rows in $(secs "$TL") s of load; $(secs "$T0") s in all"

# ---- D. a session's worker id under citus.propagate_set_commands = 'local' ----------------------
# every node in the default mode, each with its own worker id (100 + its group) in its own settings
t=$SECONDS
for n in $C $W1 $W2 $W3; do
    "$CLUSTER" restart "$n" "${CITUS_CONF[@]}" -c pg_idgen.worker_id_source=default -c "pg_idgen.worker_id=$((100 + GROUP[$n]))" >/dev/null 2>&1 \
        || ko "$n did not restart in the default mode"
done
for n in $C $W1 $W2 $W3; do
    check "$n in the default mode: worker id $((100 + GROUP[$n])) from its own settings" \
        "$(q "$n" "SELECT worker_id FROM snowflake_worker()" 2>/dev/null)" -eq $((100 + GROUP[$n]))
done
cq $C "CREATE TABLE sl (id bigint PRIMARY KEY DEFAULT snowflake_next(), k int)" \
      "SELECT create_distributed_table('sl', 'id', shard_count => 8)" \
      "CREATE TABLE sls (id bigint PRIMARY KEY, k int)" "SELECT create_distributed_table('sls', 'id', shard_count => 8)" \
      "INSERT INTO sls SELECT g, g FROM generate_series(1, 20000) g" >/dev/null
expect_sql_error $C 22023 'cannot be set in a session where Citus is loaded' \
    "SET citus.propagate_set_commands = 'local'" "BEGIN" "SET LOCAL pg_idgen.worker_id = 7"
cq $C "SET citus.propagate_set_commands = 'local'" "BEGIN" "SET LOCAL pg_idgen.worker_id = 7" \
      "INSERT INTO sl (k) SELECT k FROM sls" "COMMIT" >/dev/null 2>&1 || true
check "the refused SET LOCAL's transaction wrote nothing (no worker generated with worker id 7)" \
    "$(q $C "SELECT count(*) FROM sl")" -eq 0
cq $C "SET citus.propagate_set_commands = 'local'" "BEGIN" "INSERT INTO sl (k) SELECT k FROM sls" "COMMIT" >/dev/null
check "INSERT ... SELECT of 20,000 rows under propagate_set_commands = 'local': every id once, none of worker id 7" \
    "$(q $C "SELECT count(*) || '/' || count(DISTINCT id) || '/' || count(*) FILTER (WHERE (uid_decode(id)).worker_id = 7) FROM sl")" == "20000/20000/0"
check "each id of that INSERT carries the worker id of a node's own settings (100 + its group)" \
    "$(q $C "SELECT count(*) FROM sl WHERE (uid_decode(id)).worker_id NOT IN ($((100 + GROUP[$C])), $((100 + GROUP[$W1])), $((100 + GROUP[$W2])), $((100 + GROUP[$W3])))")" -eq 0
log "D: $(secs "$t") s"
check "nothing was written into the given Citus installation ($CITUS_PG_CONFIG)" "$(citus_given_untouched)" -eq 0
finish
