#!/usr/bin/env bash
# lease/008_registry_switch — a node keeps the registry that granted its lease until a restart
# (a reload of pg_idgen.registry to another registry must not keep the lease's validity and
# token, since the other registry could grant the id to another node). Three
# clusters on ports 29015-29017 (+ IT_PORT_OFFSET): R1 and R2 two registries, N in fixed mode.
#  1. N holds worker id 7 in R1.
#  2. N reloaded to R2: 'misconfigured' naming the other registry, its validity ends at once
#     (snowflake_next() 55000), nothing is claimed in R2.
#  3. N reloaded back to R1: held again (the same registry).
#  4. N restarted with R2: held in R2 (a restart may change registries).
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R1=it_lsw1
R2=it_lsw2
N=it_lswn
REG1="host=127.0.0.1 port=$(itport 29015) user=postgres dbname=postgres connect_timeout=2"
REG2="host=127.0.0.1 port=$(itport 29016) user=postgres dbname=postgres connect_timeout=2"
L=(-c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=7 -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1 -c pg_idgen.node_name=n)
registry() { q "$N" "ALTER SYSTEM SET pg_idgen.registry = '$1'" "SELECT pg_reload_conf()" >/dev/null; }
rows() { q "$1" "SELECT count(*) FROM pg_idgen_leases WHERE released_at IS NULL"; }

for r in "$R1:29015" "$R2:29016"; do
    cluster_start "${r%%:*}" "${r##*:}" -c pg_idgen.worker_id=-1
    q "${r%%:*}" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
done
cluster_start "$N" 29017 "${L[@]}"
q "$N" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
registry "$REG1"

# ---- 1. ----
wait_for "1: N holds 7 in R1" state_is "$N" held
check "1: R1 has N's lease" "$(rows "$R1")" -eq 1

# ---- 2. ----
registry "$REG2"
wait_for "2: reloaded to R2: 'misconfigured'" state_is "$N" misconfigured
check_match "2: the detail names the other registry and says to restart" "$(lease "$N" detail)" \
    'names another registry .* restart the server'
check "2: the validity ended at once" "$(lease "$N" valid_for_ms)" -eq 0
expect_sql_error "$N" 55000 'pg_idgen cannot generate' "SELECT snowflake_next()"
check "2: nothing was claimed in R2" "$(rows "$R2")" -eq 0

# ---- 3. ----
registry "$REG1"
wait_for "3: back to R1: held again" state_is "$N" held
check "3: N generates with 7" "$(q "$N" "SELECT worker_id FROM uid_decode(snowflake_next())")" == 7

# ---- 4. ----
registry "$REG2"
"$CLUSTER" stop "$N" 2>/dev/null
cluster_start "$N" 29017 "${L[@]}"
wait_for "4: restarted with R2: held" state_is "$N" held
check "4: R2 has N's lease" "$(rows "$R2")" -eq 1
finish
