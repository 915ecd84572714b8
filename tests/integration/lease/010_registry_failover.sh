#!/usr/bin/env bash
# lease/010_registry_failover — a highly available registry (docs/high-availability.md, "A highly available
# registry"): a primary with a synchronous standby, the node's pg_idgen.registry naming both
# (host=127.0.0.1,127.0.0.1 port=P1,P2 target_session_attrs=read-write). Three clusters on ports
# 29030-29032 (+ IT_PORT_OFFSET): RP the registry primary, RS its synchronous standby, N in fixed mode.
#  1. N holds worker id 4 through RP; RS has the row (synchronous replication).
#  2. RP hangs (SIGSTOP of the postmaster and all its children: TCP connections are accepted by
#     the kernel, nothing answers; as a hung or blackholed primary) and RS is promoted: N renews
#     through RS: each host is tried within a bound of its own (one bound for the whole multi-host
#     attempt would be used up by the first host, the second never tried, N 'registry unreachable').
#  3. RS is the primary now: its row is N's (same token), and N generates with 4.
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

RP=it_lhap
RS=it_lhas
N=it_lhan
P1=$(itport 29030)
P2=$(itport 29031)
REG="host=127.0.0.1,127.0.0.1 port=$P1,$P2 user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2"
STOPPED=()
trap 'rc=$?; set +e; for p in ${STOPPED[@]+"${STOPPED[@]}"}; do kill -CONT "$p" 2>/dev/null; done; (exit $rc); cleanup' EXIT

cluster_start "$RP" 29030 -c pg_idgen.worker_id=-1
q "$RP" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
standby_start "$RS" "$RP" 29031 -c pg_idgen.worker_id=-1
q "$RP" "ALTER SYSTEM SET synchronous_standby_names = '*'" "SELECT pg_reload_conf()" >/dev/null
sync() { [ "$(q "$RP" "SELECT sync_state FROM pg_stat_replication")" = sync ]; }
wait_for "1: RS is RP's synchronous standby" sync

# ---- 1. N holds 4 through RP ----
cluster_start "$N" 29032 -c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=4 -c pg_idgen.lease_ttl=6 \
    -c pg_idgen.lease_margin=1 -c pg_idgen.node_name=n -c "pg_idgen.registry=$REG"
q "$N" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "1: N holds worker id 4" state_is "$N" held
TOKEN=$(q "$RP" "SELECT token FROM pg_idgen_leases WHERE worker_id = 4")
check "1: RS has N's row (synchronous)" "$(q "$RS" "SELECT token FROM pg_idgen_leases WHERE worker_id = 4")" == "$TOKEN"

# ---- 2. RP hangs, RS is promoted ----
PM=$(head -n 1 "$("$CLUSTER" pgdata "$RP")/postmaster.pid")
for p in "$PM" $(pgrep -P "$PM"); do kill -STOP "$p"; STOPPED+=("$p"); done
"$CLUSTER" promote "$RS" >/dev/null
check "2: RS promoted" "$(q "$RS" "SELECT pg_is_in_recovery()::text")" == false
R0=$(lease "$N" renewals)
renewed_via_rs() {
    state_is "$N" held && [ "$(lease "$N" renewals)" -gt "$((R0 + 1))" ] \
        && [ "$(q "$RS" "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg_idgen lease worker'")" -ge 1 ]
}
wait_for "2: with RP hung, N renews through RS (the second host of its registry string)" renewed_via_rs

# ---- 3. the new primary has N's lease ----
check "3: RS's row of 4 is N's (same token)" "$(q "$RS" "SELECT token FROM pg_idgen_leases WHERE worker_id = 4")" == "$TOKEN"
check "3: N generates with 4" "$(q "$N" "SELECT (uid_decode(snowflake_next())).worker_id")" -eq 4
finish
