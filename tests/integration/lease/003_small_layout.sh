#!/usr/bin/env bash
# lease/003_small_layout — a layout of fewer than 10 worker bits (0 .. 255) with the lease
# settings at their defaults (pg_idgen.lease_range = 0-1023 does not fit it). Two clusters on
# ports 28999-29000 (+ IT_PORT_OFFSET); R is the registry (leases off), N the node.
#  1. leases off: R starts with worker_id 3 and generates with it (lease_range is not read).
#  2. fixed mode, worker_id 3, default lease_range: N starts, holds the lease, generates with 3.
#  3. auto mode with the default lease_range: N refuses to start, the log says the range
#     exceeds the layout's 255.
#  4. auto mode with lease_range 0-255: N starts, holds an id of the range and generates with it.
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_lsreg
N=it_lsnode
PR=$(itport 28999)
PN=$(itport 29000)
LAYOUT=(-c "pg_idgen.layout=time=41,worker=8,sequence=14")
REG="host=127.0.0.1 port=$PR user=postgres dbname=reg"
TTL=(-c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1 -c "pg_idgen.registry=$REG" -c pg_idgen.node_name=n)

# ---- 1. leases off ----
cluster_start "$R" 28999 "${LAYOUT[@]}" -c pg_idgen.worker_id=3 \
    || ko "1: leases off, worker=8 layout, worker_id 3: the server did not start"
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE DATABASE reg" >/dev/null
qdb "$R" reg "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
check "1: leases off: the layout has 8 worker bits" "$(q "$R" "SHOW pg_idgen.layout")" == "time=41,worker=8,sequence=14"
check "1: leases off: generates with worker id 3" "$(q "$R" "SELECT worker_id FROM uid_decode(snowflake_next())")" == 3
check "1: leases off: snowflake_lease() says off" "$(lease "$R" mode)" == off

# ---- 2. fixed mode, default lease_range ----
cluster_start "$N" 29000 "${LAYOUT[@]}" -c pg_idgen.worker_id=3 -c pg_idgen.lease_mode=fixed "${TTL[@]}" \
    || ko "2: fixed mode, worker=8 layout, default lease_range: the server did not start"
q "$N" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "2: fixed mode: the lease of 3 is held" state_is "$N" held
check "2: fixed mode: generates with worker id 3" "$(q "$N" "SELECT worker_id FROM uid_decode(snowflake_next())")" == 3
"$CLUSTER" stop "$N" 2>/dev/null

# ---- 3. auto mode, default lease_range: refused at start ----
CD=$("$CLUSTER" sockdir "$N")
before=$(cat "$CD/startup.log" 2>/dev/null | wc -l)
if "$CLUSTER" start "$N" "$PN" "${LAYOUT[@]}" -c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto "${TTL[@]}" >/dev/null 2>&1; then
    ko "3: auto mode with lease_range 0-1023 and 8 worker bits: the server started"
    "$CLUSTER" stop "$N" 2>/dev/null
else
    why=$(tail -n +"$((before + 1))" "$CD/startup.log" | grep -E 'FATAL' | tr '\n' ' ' || true)
    check_match "3: auto mode with the default lease_range: refused, the log says why" "$why" \
        'FATAL: +invalid value for pg_idgen\.lease_range: .*hi <= 255'
fi

# ---- 4. auto mode, lease_range 0-255 ----
cluster_start "$N" 29000 "${LAYOUT[@]}" -c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto -c pg_idgen.lease_range=0-255 "${TTL[@]}" \
    || ko "4: auto mode with lease_range 0-255: the server did not start"
wait_for "4: auto mode, lease_range 0-255: a lease is held" state_is "$N" held
w=$(q "$N" "SELECT worker_id FROM uid_decode(snowflake_next())")
check "4: auto mode: generates with the leased id" "$w" == "$(lease "$N" worker_id)"
check "4: auto mode: the id is within the range" "$w" -le 255


finish
