#!/usr/bin/env bash
# lease/016_refused_claim_no_lock — a claim the registry refuses locks nothing: in the shared-range
# set-up (one pg_idgen_registry_nodes row for a group role, docs/worker-ids.md "Registry roles"),
# a member role's refused claim of the id another node holds, in a transaction it keeps open,
# never stalls the holder. Clusters on ports 29132-29133 (+ IT_PORT_OFFSET): R the registry
# (leases off) with the group role grp (worker ids 2-3) and its login members node_a (N's role,
# and the holder of worker id 3 from psql) and node_m (the other member); N a node in fixed mode
# for worker id 2 connecting as node_a (lease_ttl 6 s, margin 1 s).
#  1. node_m runs BEGIN; SELECT * FROM pg_idgen_lease_claim(2, …, fixed => true, …) for N's id:
#     refused (granted = false), and keeps the transaction open. Its session holds no lock of the
#     lease row (a superuser's SELECT … FOR UPDATE NOWAIT of it works), and while the transaction
#     stays open for more than two ttls (by its xact_start, as the registry sees it) N renews
#     (renewals grow, 0 failures), stays held, and snowflake_next() on N works at every call of a
#     loop over the whole time.
#  2. A claim that looked grantable and is refused under the row lock keeps no lock: worker id 3
#     released; node_a claims it in a transaction held open (until the test lets it commit); node_m
#     claims it meanwhile (fixed: a released id is free by its snapshot) and waits for the row
#     lock; node_a commits; node_m's claim is decided under the lock: refused (3 false). node_m
#     keeps its transaction open: node_a's renewal of 3 is granted, and the row is not locked.
#     (the gate opens as soon as node_m waits for a lock; node_m's wait is bounded by the
#     registry's lock_timeout of 1 s: if it ran out before the commit, the step is tried again, at
#     most 3 times.)
#  3. A lock wait is reported as such: a superuser holds N's lease row locked (SELECT … FOR
#     UPDATE, kept open): N's state becomes 'registry lock wait', its detail and the log name the
#     lock wait and SQLSTATE 55P03, never 'registry unreachable'; once the validity ran out,
#     snowflake_next() fails 55000 saying its renewal waited for a lock in the registry. The lock
#     released, N holds its id again.
# Pass/fail never depends on timing: waits poll for states (90 s bound).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_rcreg
N=it_rcn
PR=$(itport 29132)
TTL=6
cluster_start "$R" 29132 -c pg_idgen.worker_id=-1
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE ROLE grp NOLOGIN" >/dev/null
"$CLUSTER" psql "$R" -v ON_ERROR_STOP=1 -q <<<"$(registry_node_sql grp 2 3)" >/dev/null
q "$R" "CREATE ROLE node_a LOGIN IN ROLE grp" "CREATE ROLE node_m LOGIN IN ROLE grp" >/dev/null
as() { local role=$1; shift; "$CLUSTER" psql "$R" -U "$role" -Atq -v ON_ERROR_STOP=1 "${@/#/-c}" 2>&1 || true; }
# claim_sql WORKER_ID SYSID NODE_NAME TOKEN: a fixed-mode claim (ttl 6 s)
claim_sql() { echo "SELECT lease_worker_id || ' ' || granted FROM pg_idgen_lease_claim($1, NULL, NULL, '$2', '$3', 'h', 1, $4, $TTL, true, 0, 0, NULL, NULL, NULL)"; }
row_unlocked() { q "$R" "BEGIN" "SELECT worker_id FROM pg_idgen_leases WHERE worker_id = $1 FOR UPDATE NOWAIT" "ROLLBACK" 2>&1 | grep -qx "$1"; }

cluster_start "$N" 29133 -c pg_idgen.lease_mode=fixed -c pg_idgen.lease_ttl=$TTL -c pg_idgen.lease_margin=1 \
    -c pg_idgen.worker_id=2 -c pg_idgen.node_name=n \
    -c "pg_idgen.registry=host=127.0.0.1 port=$PR user=node_a dbname=postgres connect_timeout=2"
q "$N" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "N holds worker id 2" state_is "$N" held

# session ROLE NAME SQL...: ROLE runs SQL in one session in the background (output in
# $TMP/NAME.out); its pid in SESSION_PID
session() {
    local role=$1 name=$2; shift 2
    "$CLUSTER" psql "$R" -U "$role" -Atq -v ON_ERROR_STOP=1 "${@/#/-c}" >"$TMP/$name.out" 2>&1 &
    SESSION_PID=$!
    BG_PIDS+=("$SESSION_PID")
}
sleeping() { is_t "$R" "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE usename = '$1' AND query LIKE '%pg_sleep(600)%' AND state = 'active' AND pid <> pg_backend_pid())"; }
waiting_for_lock() { is_t "$R" "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE usename = '$1' AND wait_event_type = 'Lock')"; }
end_sessions_of() { q "$R" "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = '$1' AND backend_type = 'client backend' AND pid <> pg_backend_pid()" >/dev/null; }

# ---- 1. node_m's refused claim of N's id, its transaction kept open past two ttls ----
session node_m m1 "BEGIN" "$(claim_sql 2 7300000000000000999 attacker 4242)" "SELECT pg_sleep(600)"
wait_for "1: node_m's transaction is open after its claim" sleeping node_m
check "1: node_m's claim of worker id 2 is refused" "$(head -1 "$TMP/m1.out")" == "2 false"
check "1: node_m's open transaction holds no lock of the lease row (FOR UPDATE NOWAIT works)" \
    "$(row_unlocked 2 && echo yes || echo no)" == yes
R0=$(lease "$N" renewals)
F0=$(lease "$N" failures)
calls=0
refused=0
open_for() { q "$R" "SELECT coalesce(max(extract(epoch FROM clock_timestamp() - xact_start)), 0) FROM pg_stat_activity WHERE usename = 'node_m'"; }
while awk -v s="$(open_for)" -v t="$TTL" 'BEGIN { exit !(s < 2 * t + 1) }'; do
    calls=$((calls + 1))
    q "$N" "SELECT snowflake_next() > 0" >/dev/null 2>&1 || refused=$((refused + 1))
    sleep 0.1
done
log "1: node_m's transaction open for $(open_for) s (ttl $TTL s): $calls calls of snowflake_next() on N"
check "1: snowflake_next() on N refused meanwhile (of $calls calls)" "$refused" -eq 0
check "1: N renewed meanwhile (renewals before: $R0)" "$(lease "$N" renewals)" -ge $((R0 + 2))
check "1: N's registry failures meanwhile" "$(lease "$N" failures)" -eq "$F0"
check "1: N's state" "$(lease "$N" state)" == held
check "1: node_m's transaction is still open" "$(sleeping node_m && echo yes || echo no)" == yes
end_sessions_of node_m

# ---- 2. a claim refused under the row lock keeps none ----
check "2: node_a holds worker id 3 (token 30)" "$(as node_a "$(claim_sql 3 7300000000000000001 na 30)")" == "3 true"
check "2: ... and releases it" "$(as node_a "SELECT pg_idgen_lease_release(3, 30, 0)")" == t
decided=
gate_closed() { is_t "$R" "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objid = 1016 AND granted)"; }
m2_done() { sleeping node_m || grep -q . "$TMP/m2.out"; }
for attempt in 1 2 3; do
    q "$R" "SELECT pg_idgen_lease_release(3, 33, 0)" >/dev/null   # a released row again (a retry)
    # the gate: an advisory lock a superuser session holds until node_m waits for a lock; node_a's
    # claim transaction waits for the gate before it commits
    session postgres gate "SELECT pg_advisory_lock(1016)" \
        "DO \$\$ BEGIN FOR i IN 1 .. 60000 LOOP PERFORM pg_stat_clear_snapshot();
            EXIT WHEN EXISTS (SELECT FROM pg_stat_activity WHERE usename = 'node_m' AND wait_event_type = 'Lock');
            PERFORM pg_sleep(0.005); END LOOP; END \$\$" "SELECT pg_advisory_unlock(1016)" "SELECT pg_sleep(600)"
    wait_for "2: the gate is closed (attempt $attempt)" gate_closed
    session node_a a2 "BEGIN" "$(claim_sql 3 7300000000000000001 na 33)" "SELECT pg_advisory_lock(1016)" "COMMIT"
    wait_for "2: node_a's claim of 3 waits at the gate, its row lock held (attempt $attempt)" waiting_for_lock node_a
    session node_m m2 "BEGIN" "$(claim_sql 3 7300000000000000999 attacker 4242)" "SELECT pg_sleep(600)"
    wait_for "2: node_m's claim of 3 has answered (attempt $attempt)" m2_done
    if grep -q 55P03 "$TMP/m2.out" || ! grep -qE '^3 (true|false)$' "$TMP/m2.out"; then
        log "2: attempt $attempt: node_m's wait ended before node_a's commit ($(head -c 200 "$TMP/m2.out" | tr '\n' ' ')): again"
        end_sessions_of node_m; end_sessions_of postgres
        continue
    fi
    decided=$(head -1 "$TMP/m2.out")
    break
done
check "2: node_a's claim of the released id 3 was granted" "$(head -1 "$TMP/a2.out")" == "3 true"
check "2: node_m's claim, which waited for node_a's row lock, is refused under it" "$decided" == "3 false"
check "2: node_m's transaction is still open" "$(sleeping node_m && echo yes || echo no)" == yes
check "2: it holds no lock of the lease row (FOR UPDATE NOWAIT works)" "$(row_unlocked 3 && echo yes || echo no)" == yes
check "2: node_a renews worker id 3 meanwhile" "$(as node_a "$(claim_sql 3 7300000000000000001 na 33)")" == "3 true"
end_sessions_of node_m
end_sessions_of postgres

# ---- 3. a lock wait is reported as one ----
U0=$("$CLUSTER" log "$N" 100000 | grep -c 'registry unreachable' || true)
session postgres lk "BEGIN" "SELECT worker_id FROM pg_idgen_leases WHERE worker_id = 2 FOR UPDATE" "SELECT pg_sleep(600)"
wait_for "3: a superuser's transaction holds N's lease row locked" sleeping postgres
wait_for "3: N's state: 'registry lock wait'" state_is "$N" "registry lock wait"
check_match "3: its detail names the lock wait and 55P03" "$(lease "$N" detail)" 'waited for a lock .*lock_timeout.*SQLSTATE 55P03'
check_match "3: the log names it" "$("$CLUSTER" log "$N" 200)" 'WARNING: +pg_idgen lease: registry lock wait: .*SQLSTATE 55P03'
check "3: the log does not say 'registry unreachable' meanwhile" "$("$CLUSTER" log "$N" 100000 | grep -c 'registry unreachable' || true)" -eq "$U0"
ran_out() { ! q "$N" "SELECT snowflake_next()" >/dev/null 2>&1; }
wait_for "3: N's validity runs out" ran_out
expect_sql_error "$N" 55000 'its renewal waited for a lock in the registry' "SELECT snowflake_next()"
end_sessions_of postgres
wait_for "3: the row unlocked, N holds worker id 2 again" state_is "$N" held
check "3: snowflake_next() on N works again" "$(q "$N" "SELECT snowflake_next() > 0")" == t
finish
