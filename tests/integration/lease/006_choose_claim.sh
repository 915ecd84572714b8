#!/usr/bin/env bash
# lease/006_choose_claim — in auto mode the choice of a free worker id and its claim run in one
# registry transaction under a lock of pg_idgen_leases (a choice committed before its claim would
# release the lock, so two nodes could choose the same id and one lose the race). Three clusters on ports 29008-29010 (+ IT_PORT_OFFSET): R the registry, logging every
# statement with its virtual transaction id; A and B in auto mode, started together.
#  1. A and B hold distinct ids; neither had a claim refused (conflicts = 0).
#  2. In R's log, every choice (SELECT COALESCE …) and the claim (INSERT … pg_idgen_leases) that
#     follows it on the same connection ran in the same transaction (same virtual xid).
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

# ---- 2. choice and claim in one transaction ----
LOGF="$("$CLUSTER" pgdata "$R")/log/postgresql.log"
res=$(awk '
    /(statement|execute [^:]*): SELECT COALESCE\(/ { match($0, /\[[0-9]+\]/); p = substr($0, RSTART, RLENGTH);
                                     match($0, /vxid=[^ ]*/); chose[p] = substr($0, RSTART, RLENGTH); n++ }
    /(statement|execute [^:]*): INSERT INTO .*pg_idgen_leases/ { match($0, /\[[0-9]+\]/); p = substr($0, RSTART, RLENGTH);
                                     if (p in chose) { match($0, /vxid=[^ ]*/); v = substr($0, RSTART, RLENGTH);
                                                       if (v == chose[p]) same++; else other++; delete chose[p] } }
    END { printf "%d %d %d\n", n, same + 0, other + 0 }' "$LOGF")
read -r nchoices same other <<<"$res"
check "2: the registry logged the choices" "$nchoices" -ge 2
check "2: claims in the transaction of their choice" "$same" -eq "$nchoices"
check "2: claims in another transaction than their choice" "$other" -eq 0
finish
