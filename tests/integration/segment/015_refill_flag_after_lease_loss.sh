#!/usr/bin/env bash
# segment/015_refill_flag_after_lease_loss — a call of segment_next() refused because the node
# lost its lease (55000) must not leave the tag's shared entry marked "a reservation is in
# flight". The call that takes the first value of a segment is the one that reserves the next
# segment ahead; if the lease is gone at that moment, it fails before reserving — and the entry
# must not keep saying a reservation is in flight: once the lease is back, the next calls reserve
# ahead again, and no caller finds both buffers empty and waits for a reservation nobody makes
# (it would wait pg_idgen's 100 ms, then reserve synchronously: a sync refill in segment_status).
#
# A fleet of one node with a leased worker id (scripts/fleet.sh start --lease, ttl 6 s); the
# aggregator is the registry. Ports 29094-29095 (+ IT_PORT_OFFSET).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

FLEET=$ROOT/scripts/fleet.sh
F=it_srf
DB=app
BASE=$(itport 29094)
RUN_DIR=$("$CLUSTER" rundir)
for c in ${F}agg ${F}1; do register_cluster "$c"; done
trap 'rc=$?; set +e; rm -f "$RUN_DIR/$F.fleet"; (exit $rc); cleanup' EXIT
"$FLEET" start --name "$F" --nodes 1 --base-port "$BASE" --lease --lease-ttl 6 --db "$DB" >"$TMP/fleet.out" 2>&1 \
    || { cat "$TMP/fleet.out"; exit 1; }
nq() { qdb "${F}1" "$DB" "$@"; }
reg() { qdb "${F}agg" "$DB" "$@"; }
lease_held() { [ "$(nq "SELECT state FROM snowflake_lease()")" = held ]; }
lease_gone() { [ "$(nq "SELECT valid_for_ms FROM snowflake_lease()")" = 0 ]; }
wait_for "the node holds a worker id lease" lease_held
W=$(reg "SELECT worker_id FROM pg_idgen_leases WHERE node_name = 'node1'")

nq "SET client_min_messages = warning" "SELECT segment_create('r', 10, slots => 4, registry => true)" >/dev/null
check "the registry assigns the 4 slots to the node" "$(reg "SELECT segment_registry_assign('r', 4, ARRAY[$W])")" -eq 4
serves_all() { [ "$(nq "SELECT owned_slots::text FROM segment_status WHERE tag = 'r'")" = "{0,1,2,3}" ]; }
wait_for "the node serves slots 0-3" serves_all

# 10 values: the first segment (10 values) used up, the second reserved ahead at the first call
check "10 values while the lease is valid" "$(nq "SELECT count(DISTINCT v) FROM (SELECT segment_next('r') AS v FROM generate_series(1, 10)) s")" -eq 10

"$CLUSTER" stop ${F}agg immediate >/dev/null 2>&1
wait_for "the lease ran out (the registry is down)" lease_gone
# the 11th call takes the first value of the second segment — the call that reserves ahead
PGDATABASE=$DB expect_sql_error "${F}1" 55000 "does not hold the slots of segment tag \"r\" now" "SELECT segment_next('r')"

"$FLEET" start-node agg --name "$F" >/dev/null 2>&1
wait_for "the lease is renewed (the registry is back)" lease_held
wait_for "the node serves slots 0-3 again" serves_all

sync0=$(nq "SELECT sync_refills FROM segment_status WHERE tag = 'r'")
# 30 values: the rest of the second segment, then the segments reserved ahead of each
got=$(nq "SELECT count(DISTINCT v) FROM (SELECT segment_next('r') AS v FROM generate_series(1, 30)) s")
check "30 values once the lease is back" "$got" -eq 30
sync1=$(nq "SELECT sync_refills FROM segment_status WHERE tag = 'r'")
check "no caller found both buffers empty: every segment after the refused call was reserved ahead (sync refills before and after)" \
    "$((sync1 - sync0))" -eq 0
finish
