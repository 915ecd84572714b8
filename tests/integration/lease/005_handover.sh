#!/usr/bin/env bash
# lease/005_handover — when a worker id passes from one node to another, the new holder continues
# above every id of the old one, whatever their clocks say (the registry row carries a high-water mark, hwm_ms: the holder's bound, raised at each claim
# and renewal, set to its exact bound at a release; a taker raises its generator to it). Three
# clusters on ports 29005-29007 (+ IT_PORT_OFFSET): R the registry (leases off), N1 and N2 in
# fixed mode for worker id 7 (ttl 10 s, margin 4 s, max_drift_ms 10 s), both under libfaketime.
#  1. N2's clock is 3 s behind N1's (less than the margin). N1 generates, stops cleanly (its
#     release is taken at once); N2 takes 7 and generates: every id of N2 is above every id of
#     N1, no id twice (N2's clock is 3 s behind N1's).
#  2. N2's generator runs 5 s ahead of the real time (its clock stepped +5 s, then back to -3 s):
#     N2 stops cleanly; N1 (real clock) takes 7: its ids are above N2's, no id twice (before the
#     fix N1 issued ids within N2's).
#  3. The registry's hwm_ms is above every id issued.
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_lhreg
N1=it_lhn1
N2=it_lhn2
PR=$(itport 29005)
REG="host=127.0.0.1 port=$PR user=postgres dbname=postgres connect_timeout=2"
L=(-c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=7 -c pg_idgen.lease_ttl=10 -c pg_idgen.lease_margin=4
   -c pg_idgen.max_drift_ms=10000 -c pg_idgen.max_wait_ms=20000 -c "pg_idgen.registry=$REG")
gen() { q "$1" "SET pg_idgen.sequence_start = zero" "SELECT snowflake_next() FROM generate_series(1, $2)" | grep -E '^[0-9]+$'; }
above() {   # DESC LOWER_FILE UPPER_FILE: every id of UPPER is above every id of LOWER
    local lo_max hi_min
    lo_max=$(sort -n "$2" | tail -n 1); hi_min=$(sort -n "$3" | sed -n 1p)
    if [ "$hi_min" -gt "$lo_max" ]; then ok "$1 ($hi_min > $lo_max)"; else ko "$1: lowest new id $hi_min <= highest old id $lo_max ($(( (lo_max >> 22) - (hi_min >> 22) )) ms of time below)"; fi
}

cluster_start "$R" 29005 -c pg_idgen.worker_id=-1
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
export FAKETIME_FILE=$TMP/n1.faketime
echo "+0" > "$FAKETIME_FILE"
cluster_start "$N1" 29006 "${L[@]}" -c pg_idgen.node_name=n1
export FAKETIME_FILE=$TMP/n2.faketime
echo "-3s" > "$FAKETIME_FILE"
cluster_start "$N2" 29007 "${L[@]}" -c pg_idgen.node_name=n2
unset FAKETIME_FILE
for n in "$N1" "$N2"; do q "$n" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null; done

# ---- 1. clean release, the taker's clock 3 s behind ----
wait_for "1: N1 holds worker id 7" state_is "$N1" held
check "1: N2 is refused (N1 holds 7)" "$(lease "$N2" state)" == "held by another node"
gen "$N1" 200000 > "$TMP/n1.a"
"$CLUSTER" stop "$N1" 2>/dev/null
wait_for "1: N2 takes 7 after N1's release" state_is "$N2" held
gen "$N2" 200000 > "$TMP/n2.a"
check "1: N1 and N2 issued 200000 ids each" "$(cat "$TMP/n1.a" "$TMP/n2.a" | wc -l)" -eq 400000
above "1: every id N2 issued after the handover is above every id of N1" "$TMP/n1.a" "$TMP/n2.a"
check "1: ids issued by both" "$(sort "$TMP/n1.a" "$TMP/n2.a" | uniq -d | wc -l)" -eq 0

# ---- 2. the old holder's generator ran ahead of its clock ----
"$CLUSTER" faketime "$N2" +5s >/dev/null
gen "$N2" 100000 > "$TMP/n2.b"
"$CLUSTER" faketime "$N2" -3s >/dev/null
gen "$N2" 100000 >> "$TMP/n2.b"
"$CLUSTER" stop "$N2" 2>/dev/null
FAKETIME_FILE=$TMP/n1.faketime cluster_start "$N1" 29006 "${L[@]}" -c pg_idgen.node_name=n1
wait_for "2: N1 (real clock) takes 7 after N2's release" state_is "$N1" held
gen "$N1" 200000 > "$TMP/n1.b"
check "2: N2 and N1 issued 200000 ids each" "$(cat "$TMP/n2.b" "$TMP/n1.b" | wc -l)" -eq 400000
above "2: every id N1 issued after the handover is above every id of N2" "$TMP/n2.b" "$TMP/n1.b"
check "2: ids issued by both" "$(sort "$TMP/n2.b" "$TMP/n1.b" | uniq -d | wc -l)" -eq 0
check "2: ids issued twice over both handovers" "$(cat "$TMP"/n1.* "$TMP"/n2.* | sort | uniq -d | wc -l)" -eq 0

# ---- 3. the registry's high-water mark ----
hwm=$(q "$R" "SELECT hwm_ms FROM pg_idgen_leases WHERE worker_id = 7")
top=$(q "$N1" "SELECT (extract(epoch FROM ts) * 1000)::bigint FROM uid_decode($(sort -n "$TMP/n1.b" | tail -n 1))")
check "3: hwm_ms is above N1's last id (ms)" "$hwm" -gt "$top"
check "3: N1 recorded the floor it took over (N2's bound at its release, above N2's last id)" \
    "$(q "$R" "SELECT floor_ms FROM pg_idgen_leases WHERE worker_id = 7")" -gt \
    "$(q "$N1" "SELECT (extract(epoch FROM ts) * 1000)::bigint FROM uid_decode($(sort -n "$TMP/n2.b" | tail -n 1))")"
finish
