#!/usr/bin/env bash
# lease/004_fence — a snowflake_next() call that passed the lease check and then blocked must not
# issue an id once the lease is lost (the lease is checked again after the id's time is
# fixed, immediately before the id is issued). Three clusters on ports
# 29001-29003 (+ IT_PORT_OFFSET): R the registry (leases off), N1 and N2 in fixed mode for worker
# id 7, N1 under libfaketime.
#  1. N1 holds 7 and generates. Its clock steps back 55 s; a session (max_wait_ms 60 s) calls
#     snowflake_next(): the lease is valid, the call waits for the clock (lead > max_drift_ms).
#  2. N1 is cut off from the registry (reload to a closed port): its lease runs out locally; N2
#     takes 7 once the registry's lease expired, and generates.
#  3. N1's clock is restored and the waiting call woken (reload): it fails with 55000 "ended while
#     this call was generating" — it must not issue an id of worker 7 after N2 took 7.
#  4. No id of N1 is also an id of N2; N1 refuses new calls.
# Pass/fail never depends on timing: every wait polls for a state, with a generous bound (90 s).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_lfreg
N1=it_lfn1
N2=it_lfn2
PR=$(itport 29001)
REG="host=127.0.0.1 port=$PR user=postgres dbname=postgres connect_timeout=2"
DEAD="host=127.0.0.1 port=$(itport 29004) user=postgres dbname=postgres connect_timeout=2"
L=(-c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=7 -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1)
not_valid() { [ "$(lease "$1" valid_for_ms 2>/dev/null)" = 0 ]; }
call_waits() { [ "$(q "$N1" "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Extension' AND query = 'SELECT snowflake_next()'")" = 1 ]; }
call_done() { ! kill -0 "$BGPID" 2>/dev/null; }

cluster_start "$R" 29001 -c pg_idgen.worker_id=-1
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null

# ---- 1. N1 holds 7; a call waits for its clock ----
export FAKETIME_FILE=$TMP/n1.faketime
echo "+0" > "$FAKETIME_FILE"
cluster_start "$N1" 29002 "${L[@]}" -c pg_idgen.node_name=n1
unset FAKETIME_FILE
# by ALTER SYSTEM, not -c: a command-line setting would win over the reload of part 2
q "$N1" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "ALTER SYSTEM SET pg_idgen.registry = '$REG'" "SELECT pg_reload_conf()" >/dev/null
wait_for "1: N1 holds worker id 7" state_is "$N1" held
q "$N1" "SELECT snowflake_next() FROM generate_series(1, 1000)" > "$TMP/n1.ids"
check "1: N1 generates with worker 7" "$(q "$N1" "SELECT worker_id FROM uid_decode(snowflake_next())")" == 7
"$CLUSTER" faketime "$N1" -55s >/dev/null
"$CLUSTER" psql "$N1" -At -v VERBOSITY=verbose -c "SET pg_idgen.max_wait_ms = 60000" -c "SELECT snowflake_next()" \
    > "$TMP/blocked.out" 2>&1 &
BGPID=$!
BG_PIDS+=("$BGPID")
wait_for "1: the call passed the lease check and waits for N1's clock (55 s behind its ids)" call_waits

# ---- 2. N1 loses the lease, N2 takes 7 ----
q "$N1" "ALTER SYSTEM SET pg_idgen.registry = '$DEAD'" "SELECT pg_reload_conf()" >/dev/null
wait_for "2: N1's lease ran out locally" not_valid "$N1"
cluster_start "$N2" 29003 "${L[@]}" -c "pg_idgen.registry=$REG" -c pg_idgen.node_name=n2
q "$N2" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "2: N2 takes worker id 7 after the registry's lease expired" state_is "$N2" held
q "$N2" "SELECT snowflake_next() FROM generate_series(1, 20000)" > "$TMP/n2.ids"
check "2: the call on N1 is still waiting" "$(call_waits && echo yes || echo no)" == yes

# ---- 3. the waiting call wakes up ----
"$CLUSTER" faketime "$N1" +0 >/dev/null
q "$N1" "SELECT pg_reload_conf()" >/dev/null   # sets the latch of every backend
wait_for "3: the waiting call returned" call_done
wait "$BGPID" || true
out=$(cat "$TMP/blocked.out")
check_match "3: it failed with 55000: the lease ended while it was generating, no id issued" "$out" \
    'ERROR: +55000: pg_idgen cannot generate: the lease of worker id 7 ended while this call was generating; no id was issued'
grep -E '^[0-9]+$' <<<"$out" >> "$TMP/n1.ids" || true
q "$N2" "SELECT snowflake_next() FROM generate_series(1, 1000)" >> "$TMP/n2.ids"

# ---- 4. no duplicates ----
check "4: ids of N1 that N2 also issued" "$(sort "$TMP/n1.ids" "$TMP/n2.ids" | uniq -d | wc -l)" -eq 0
expect_sql_error "$N1" 55000 'pg_idgen cannot generate' "SELECT snowflake_next()"
finish
