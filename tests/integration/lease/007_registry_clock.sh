#!/usr/bin/env bash
# lease/007_registry_clock — a registry clock stepped FORWARD ends leases early in the registry;
# the holder still counts its lease valid (its own CLOCK_MONOTONIC). A taker must therefore see
# the holder's row unchanged (same token and renewed_at) for a full ttl on its own monotonic
# clock before it takes an expired lease. Three clusters on ports
# 29011-29013 (+ IT_PORT_OFFSET): R the registry under libfaketime, N1 and N2 in fixed mode for
# worker id 7 (ttl 6 s, margin 1 s).
#  1. N1 holds 7, N2 is refused.
#  2. N1 is cut off from the registry (reload to a closed port) and R's clock steps +35 s: N1's
#     lease is expired by R's clock at once, while N1 still generates for up to 5 s.
#  3. N2 takes 7 only once N1's local validity has ended (not within a second of the
#     step, while N1 still generates); no id of N1 is also one of N2.
#  4. N2 holds 7 with lease_ttl 20, N1 has 6: N2 cut off, R's clock forward again; N1 takes 7 only
#     once N2's validity has ended (it waits the holder's ttl, the longer one).
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_lkreg
N1=it_lkn1
N2=it_lkn2
PR=$(itport 29011)
REG="host=127.0.0.1 port=$PR user=postgres dbname=postgres connect_timeout=2"
DEAD="host=127.0.0.1 port=$(itport 29014) user=postgres dbname=postgres connect_timeout=2"
L0=(-c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=7 -c pg_idgen.lease_margin=1)
L=("${L0[@]}" -c pg_idgen.lease_ttl=6)

export FAKETIME_FILE=$TMP/r.faketime
echo "+0" > "$FAKETIME_FILE"
cluster_start "$R" 29011 -c pg_idgen.worker_id=-1
unset FAKETIME_FILE
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
cluster_start "$N1" 29012 "${L[@]}" -c pg_idgen.node_name=n1
q "$N1" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "ALTER SYSTEM SET pg_idgen.registry = '$REG'" "SELECT pg_reload_conf()" >/dev/null
wait_for "1: N1 holds worker id 7" state_is "$N1" held
# N2's lease_ttl and registry change by reload in part 4: set by ALTER SYSTEM, not on the command
# line (a -c option of the postmaster outranks postgresql.auto.conf: the reload would change nothing)
cluster_start "$N2" 29013 "${L0[@]}" -c pg_idgen.node_name=n2
q "$N2" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "ALTER SYSTEM SET pg_idgen.lease_ttl = 6" \
    "ALTER SYSTEM SET pg_idgen.registry = '$REG'" "SELECT pg_reload_conf()" >/dev/null
wait_for "1: N2 is refused while N1 holds 7" state_is "$N2" "held by another node"

# ---- 2. N1 cut off, the registry's clock steps forward ----
# N1 generates one id per statement until it is refused
( echo "SET pg_idgen.sequence_start = zero;"; yes 'SELECT snowflake_next();' | head -n 2000000 ) \
    | "$CLUSTER" psql "$N1" -At -q > "$TMP/n1.ids" 2>/dev/null &
GEN=$!
BG_PIDS+=("$GEN")
q "$N1" "ALTER SYSTEM SET pg_idgen.registry = '$DEAD'" "SELECT pg_reload_conf()" >/dev/null
"$CLUSTER" faketime "$R" +35s >/dev/null
check "2: by R's clock N1's lease has ended" "$(q "$R" "SELECT (lease_until < now())::text FROM pg_idgen_leases WHERE worker_id = 7")" == true

# ---- 3. N2 takes 7 only after N1 stopped ----
wait_for "3: N2 takes worker id 7" state_is "$N2" held
check "3: when N2 holds 7, N1's local validity has ended (ms left)" "$(lease "$N1" valid_for_ms)" -eq 0
q "$N2" "SET pg_idgen.sequence_start = zero" "SELECT snowflake_next() FROM generate_series(1, 100000)" > "$TMP/n2.ids"
kill "$GEN" 2>/dev/null || true
wait "$GEN" 2>/dev/null || true
n1=$(grep -cE '^[0-9]+$' "$TMP/n1.ids" || true)
check "3: N1 generated before it stopped" "$n1" -gt 0
check "3: ids issued by both" "$(grep -hE '^[0-9]+$' "$TMP/n1.ids" "$TMP/n2.ids" | sort | uniq -d | wc -l)" -eq 0

# ---- 4. nodes with different lease_ttl: the taker waits the holder's ttl, not its own ----
# N2 (the holder now) renews with lease_ttl 20 (valid 19 s after each renewal); N1 keeps 6. N2 is
# cut off and R's clock steps forward again: by R's clock N2's lease has ended. N1 must still
# watch N2's row unchanged for 20 s, not 6 (the longer of the two ttls: with its own 6 s it would
# take 7 while N2 was still valid for up to 13 s).
q "$N2" "ALTER SYSTEM SET pg_idgen.lease_ttl = 20" "SELECT pg_reload_conf()" >/dev/null
ttl_is_20() { [ "$(q "$R" "SELECT round(extract(epoch FROM lease_until - renewed_at)) FROM pg_idgen_leases WHERE worker_id = 7")" = 20 ]; }
wait_for "4: N2 renews with lease_ttl 20 (the registry row's lease is 20 s long)" ttl_is_20
q "$N1" "ALTER SYSTEM SET pg_idgen.registry = '$REG'" "SELECT pg_reload_conf()" >/dev/null
wait_for "4: N1 (lease_ttl 6), back on the registry, is refused while N2 holds 7" state_is "$N1" "held by another node"
q "$N2" "ALTER SYSTEM SET pg_idgen.registry = '$DEAD'" "SELECT pg_reload_conf()" >/dev/null
"$CLUSTER" faketime "$R" +95s >/dev/null
check "4: by R's clock N2's lease has ended" "$(q "$R" "SELECT (lease_until < now())::text FROM pg_idgen_leases WHERE worker_id = 7")" == true
wait_for "4: N1 takes worker id 7" state_is "$N1" held
check "4: when N1 holds 7, N2's local validity (19 s after its last renewal) has ended (ms left)" "$(lease "$N2" valid_for_ms)" -eq 0
check "4: N1 generates with 7" "$(q "$N1" "SELECT (uid_decode(snowflake_next())).worker_id")" -eq 7
finish
