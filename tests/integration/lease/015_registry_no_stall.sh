#!/usr/bin/env bash
# lease/015_registry_no_stall — what a node's registry role calls holds no lock another node's
# claim or renewal waits for: its harm stays with its own worker ids. Clusters on ports
# 29096-29098 (+ IT_PORT_OFFSET): R the registry (leases off) with the node roles of
# docs/worker-ids.md ("Registry roles"): node_x (the attacker, worker id 1 only), node_b (worker
# id 2), node_c (worker ids 3-4), node_d (worker id 5, claimed first from psql) and node_big
# (worker ids 100-3,000,099); N2 a node in fixed mode for worker id 2 connecting as node_b
# (lease_ttl 6 s).
#  1. node_x runs BEGIN; SELECT * FROM pg_idgen_lease_claim(NULL, 1, 1, ...) (auto mode, its one
#     id) and keeps the transaction open. Meanwhile, each with lock_timeout = 500ms: node_d's
#     renewal of worker id 5 (granted), node_c's choice in 3-4 (granted, id 3), a second choice of
#     node_c under another node name (granted, id 4), and N2 renews 3 more times with 0 failures
#     and snowflake_next() working.
#  2. node_x's own id while it holds it: a claim of worker id 1 by another token of node_x waits
#     at most the registry's bound (55P03 or not granted, never the caller's statement_timeout of 5 s).
#  3. node_big chooses in its range of 3,000,000 ids in an open transaction, under a
#     statement_timeout of 5 s: it gets id 100 (the work is its leased rows, not the range);
#     node_d's renewal with lock_timeout = 500ms is granted meanwhile.
#  4. Two login roles mapped only through a group role they share (20-29): node_g1's first write
#     of marks of its system identifier in an open transaction; node_g2's first write of its own
#     with lock_timeout = 500ms works meanwhile (the group's mapping row is not locked).
# Pass/fail never depends on timing: waits poll for states (90 s bound); the bounds on the
# victims (lock_timeout 500 ms, statement_timeout 5 s) are what the rule promises.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_nsreg
N2=it_nsn2
PR=$(itport 29096)
cluster_start "$R" 29096 -c pg_idgen.worker_id=-1
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
for m in node_x:1:1 node_b:2:2 node_c:3:4 node_d:5:5 node_big:100:3000099; do
    IFS=: read -r role lo hi <<<"$m"
    q "$R" "CREATE ROLE $role LOGIN" >/dev/null
    "$CLUSTER" psql "$R" -v ON_ERROR_STOP=1 -q <<<"$(registry_node_sql "$role" "$lo" "$hi")" >/dev/null
done
as() { local role=$1; shift; "$CLUSTER" psql "$R" -U "$role" -Atq -v ON_ERROR_STOP=1 "${@/#/-c}" 2>&1 || true; }
# claim_sql WORKER_ID LO HI NODE_NAME TOKEN: a claim as a lease worker sends it (ttl 6 s, auto)
claim_sql() { echo "SELECT lease_worker_id || ' ' || granted FROM pg_idgen_lease_claim($1, $2, $3, '7300000000000000001', '$4', 'h', 5432, $5, 6, false, 0, 0, NULL, NULL, NULL)"; }

cluster_start "$N2" 29097 -c pg_idgen.lease_mode=fixed -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1 \
    -c pg_idgen.worker_id=2 -c pg_idgen.node_name=n2 \
    -c "pg_idgen.registry=host=127.0.0.1 port=$PR user=node_b dbname=postgres connect_timeout=2"
q "$N2" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "N2 holds worker id 2" state_is "$N2" held

# attacker ROLE SQL: ROLE runs SQL in a transaction it keeps open (pg_sleep after it) in the
# background; returns once the SQL ran (the session sleeps), its output in $TMP/attacker.out
attacker() {
    local role=$1 sql=$2
    "$CLUSTER" psql "$R" -U "$role" -Atq -v ON_ERROR_STOP=1 -c "BEGIN" -c "$sql" -c "SELECT pg_sleep(600)" \
        >"$TMP/attacker.out" 2>&1 &
    ATTACKER=$!
    BG_PIDS+=("$ATTACKER")
    sleeping() { is_t "$R" "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE usename = '$role' AND query LIKE '%pg_sleep%' AND state = 'active')"; }
    wait_for "$3: $role's transaction is open after its call" sleeping || true
}
attacker_stop() {
    q "$R" "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '$1'" >/dev/null
    wait "$ATTACKER" 2>/dev/null || true
}

# ---- 1. node_x's auto claim of its one id, transaction kept open ----
check "1: node_d holds worker id 5 before" "$(as node_d "$(claim_sql 5 NULL NULL nd 55)")" == "5 true"
attacker node_x "$(claim_sql NULL 1 1 nx 11)" 1
check "1: node_x's claim granted it worker id 1" "$(head -1 "$TMP/attacker.out")" == "1 true"
check "1: node_d renews worker id 5 meanwhile (lock_timeout 500ms)" \
    "$(as node_d "SET lock_timeout = '500ms'" "$(claim_sql 5 NULL NULL nd 55)")" == "5 true"
check "1: node_c chooses in 3-4 meanwhile: worker id 3" \
    "$(as node_c "SET lock_timeout = '500ms'" "$(claim_sql NULL 3 4 nc 33)")" == "3 true"
check "1: another node of node_c chooses in 3-4 meanwhile: worker id 4" \
    "$(as node_c "SET lock_timeout = '500ms'" "$(claim_sql NULL 3 4 nc2 34)")" == "4 true"
R0=$(lease "$N2" renewals)
renewed() { [ "$(lease "$N2" renewals)" -ge $((R0 + 3)) ]; }
wait_for "1: N2 renews 3 more times meanwhile" renewed
check "1: N2's failures" "$(lease "$N2" failures)" -eq 0
check "1: N2's snowflake_next() works meanwhile" "$(q "$N2" "SELECT count(DISTINCT snowflake_next()) FROM generate_series(1, 1000)")" -eq 1000

# ---- 2. node_x's own id: another claim of it waits at most the registry's bound ----
out=$(as node_x "SET lock_timeout = '5s'" "SET statement_timeout = '5s'" '\set VERBOSITY verbose' "$(claim_sql 1 NULL NULL nx 12)")
check_match "2: a claim of node_x's id 1 (held in the open transaction) ends within the registry's bound, not the caller's 5 s" \
    "$out" "55P03|^1 false$"
attacker_stop node_x

# ---- 3. a choice over 3,000,000 ids ----
attacker node_big "SET statement_timeout = '5s'; $(claim_sql NULL 100 3000099 nbig 44)" 3
check "3: node_big's choice over 3,000,000 ids ends within its statement_timeout (5 s): worker id 100" \
    "$(head -1 "$TMP/attacker.out")" == "100 true"
check "3: node_d renews worker id 5 meanwhile (lock_timeout 500ms)" \
    "$(as node_d "SET lock_timeout = '500ms'" "$(claim_sql 5 NULL NULL nd 55)")" == "5 true"
attacker_stop node_big

# ---- 4. a group role the nodes share: one node's first write of marks stalls no other's ----
q "$R" "CREATE ROLE grp NOLOGIN" "INSERT INTO pg_idgen_registry_nodes VALUES ('grp', 20, 29)" \
    "GRANT EXECUTE ON FUNCTION pg_idgen_segment_marks(text, oid, text, int[], bigint[]) TO grp" \
    "CREATE ROLE node_g1 LOGIN IN ROLE grp" "CREATE ROLE node_g2 LOGIN IN ROLE grp" >/dev/null
attacker node_g1 "SELECT count(*) FROM pg_idgen_segment_marks('7300000000000000021', 1, 'x', '{0}', '{1}')" 4
check "4: node_g1's first write of its marks (its transaction kept open)" "$(head -1 "$TMP/attacker.out")" == 1
check "4: node_g2's first write of its own marks meanwhile (lock_timeout 500ms)" \
    "$(as node_g2 "SET lock_timeout = '500ms'" "SELECT count(*) FROM pg_idgen_segment_marks('7300000000000000022', 1, 'y', '{0}', '{1}')")" == 1
attacker_stop node_g1
finish
