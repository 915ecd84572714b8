#!/usr/bin/env bash
# lease/006_choose_claim — in auto mode the choice of a free worker id and its claim run in one
# registry statement: the registry's pg_idgen_lease_claim claims each candidate with INSERT ... ON
# CONFLICT, without a table lock, and passes over one another node claims meanwhile (so two nodes
# starting together never both lose, and none waits for another's open transaction). Three clusters on ports 29008-29010 (+ IT_PORT_OFFSET): R the registry, logging every
# statement with its virtual transaction id; A and B in auto mode, started together.
#  1. A and B hold distinct ids; neither had a claim refused (conflicts = 0).
#  2. In R's log, every choice is one statement, a call of the registry's pg_idgen_lease_claim
#     (which chooses and claims), never a transaction of several
#     statements (no BEGIN, no INSERT, UPDATE or LOCK of pg_idgen_leases of the nodes' own).
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_lcreg
A=it_lca
B=it_lcb
PR=$(itport 29008)
REG="host=127.0.0.1 port=$PR user=postgres dbname=postgres connect_timeout=2"
L=(-c pg_idgen.worker_id=-1 -c pg_idgen.lease_mode=auto -c pg_idgen.lease_range=0-9 -c pg_idgen.lease_ttl=6
   -c pg_idgen.lease_margin=1 -c "pg_idgen.registry=$REG")

cluster_start "$R" 29008 -c pg_idgen.worker_id=-1 -c log_statement=all -c "log_line_prefix=%m [%p] vxid=%v "
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
register_cluster "$A"; register_cluster "$B"
"$CLUSTER" start "$A" "$(itport 29009)" "${L[@]}" -c pg_idgen.node_name=a 2>/dev/null &
"$CLUSTER" start "$B" "$(itport 29010)" "${L[@]}" -c pg_idgen.node_name=b 2>/dev/null &
wait
for n in "$A" "$B"; do q "$n" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null; done

# ---- 1. distinct ids, no conflict ----
wait_for "1: A holds a lease" state_is "$A" held
wait_for "1: B holds a lease" state_is "$B" held
a=$(lease "$A" worker_id); b=$(lease "$B" worker_id)
check "1: A and B hold distinct ids" "$a" != "$b"
check "1: no claim of A or B was refused (conflicts)" "$(( $(lease "$A" conflicts) + $(lease "$B" conflicts) ))" -eq 0

# ---- 2. choice and claim in one statement ----
LOGF="$("$CLUSTER" pgdata "$R")/log/postgresql.log"
calls=$(grep -cE '(statement|execute [^:]*): SELECT .*pg_idgen_lease_claim\(' "$LOGF" || true)
check "2: the registry logged the nodes' claims, each one call of pg_idgen_lease_claim" "$calls" -ge 2
check "2: no node opened a transaction of several statements (BEGIN)" "$(grep -cE '(statement|execute [^:]*): BEGIN' "$LOGF" || true)" -eq 0
check "2: no node wrote or locked pg_idgen_leases with a statement of its own" \
    "$(grep -E '(statement|execute [^:]*): ' "$LOGF" | grep -cE '(INSERT INTO|UPDATE|LOCK TABLE) [^ ]*pg_idgen_leases' || true)" -eq 0
finish
