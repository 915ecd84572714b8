# tests/integration/lease.bash — what the tests of the worker id leases and the lease registry
# (tests/integration/lease/, and the registry tests of keyed/ and segment/) share; sourced after
# lib.bash.
#   lease NAME COLUMNS              snowflake_lease()'s COLUMNS on cluster NAME
#   state_is NAME STATE             its state is STATE
#   detail_matches NAME REGEX       its detail matches REGEX
#   registry_node_sql ROLE LO HI    the SQL that lets ROLE act as a node for worker ids LO..HI
#   wait_for DESC COMMAND...        polls COMMAND every 0.2 s until it succeeds (a PASS saying
#                                   how long at most) or 90 s have passed (a FAIL, returns 1).
#   async_pair_start / async_pair_cut_and_promote   a registry, a primary using it and an
#                                   asynchronous standby promoted at once: see their comment below.
# Pass/fail never depends on timing: the bound is generous, and the waits are for states.

lease() { q "$1" "SELECT $2 FROM snowflake_lease()"; }
state_is() { [ "$(lease "$1" state 2>/dev/null)" = "$2" ]; }
detail_matches() { [[ "$(lease "$1" detail 2>/dev/null)" =~ $2 ]]; }
wait_for() {
    local desc=$1 i; shift
    for i in $(seq 1 450); do
        if "$@" >/dev/null 2>&1; then ok "$desc (after $(awk -v n="$i" 'BEGIN { printf "%.1f", n * 0.2 }') s at most)"; return 0; fi
        sleep 0.2
    done
    ko "$desc: not reached within 90 s"
    return 1
}
# registry_node_sql ROLE LO HI: SQL that lets ROLE act as a node for worker ids LO..HI in a
# registry database (docs/worker-ids.md, "Registry roles"): EXECUTE on the node functions (granted
# to ROLE directly here; the docs use a group role) and a row of pg_idgen_registry_nodes.
registry_node_sql() {
    echo "GRANT EXECUTE ON FUNCTION
      pg_idgen_lease_claim(int, int, int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint),
      pg_idgen_lease_release(int, bigint, bigint), pg_idgen_slot_rows(int, bigint), pg_idgen_slot_take(text, int, int, bigint),
      pg_idgen_slot_raise(text, int, int, bigint, bigint), pg_idgen_slot_release(text, int, int, bigint, bigint) TO $1;
    INSERT INTO pg_idgen_registry_nodes (role_name, first_worker, last_worker) VALUES ('$1', $2, $3)"
}

# ---- an asynchronous standby promoted at once, before it received the primary's last WAL ----
# async_pair_start R P S PORT MARKS_FUNCTION [ON_R...]
#   R: the registry on PORT (worker_id -1) with the node roles node_a (worker id 1) and node_b
#   (worker id 2) set up as docs/worker-ids.md says, both granted EXECUTE on
#   MARKS_FUNCTION(text, oid, text, int[], bigint[]), and plain_login, a login role without the
#   grant; then ON_R (a command, optional) runs, before P exists (what P finds in the registry at
#   its start can change its figures: slots assigned before or after it claimed its lease).
#   P: the primary on PORT + 1 with PAIR_OPTS: a fixed lease of worker id 1 (ttl 6 s),
#   node name n1, connecting to R as node_a. S (PORT + 2) is started by
#   async_pair_cut_and_promote, with PAIR_OPTS too (a restart of P or S passes them again).
# async_pair_cut_and_promote STEP LOAD...
#   S: an asynchronous streaming standby of P; once S replayed all of P's WAL, P's WAL sender is
#   stopped (SIGSTOP); LOAD (a command) runs on P: nothing it writes reaches S. Then P is killed
#   (-9), S must lag behind P's last flushed WAL, and S is promoted at once. Its checks are named
#   "STEP: ..." and call the clusters P and S.
# The rule: what P writes after the cut must never leave P, so the cut stops P's WAL sender, not
# S's WAL receiver. A stopped receiver has to be continued for its shutdown when the promotion
# ends it, and could first read what the sender had already put in its socket: S would then not
# lag, and the test would not see the hole it is about (one run saw a control with 0 repeats).
# The stopped sender is killed after P: stopped, it would not notice its postmaster's death.
async_pair_start() {
    PAIR_R=$1 PAIR_P=$2 PAIR_S=$3 PAIR_PORT=$4
    local fn=$5 role; shift 5
    PAIR_OPTS=(-c pg_idgen.lease_mode=fixed -c pg_idgen.worker_id=1 -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1
               -c pg_idgen.node_name=n1
               -c "pg_idgen.registry=host=127.0.0.1 port=$(itport "$PAIR_PORT") user=node_a dbname=postgres connect_timeout=2")
    cluster_start "$PAIR_R" "$PAIR_PORT" -c pg_idgen.worker_id=-1
    q "$PAIR_R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
    for role in node_a:1 node_b:2; do
        q "$PAIR_R" "CREATE ROLE ${role%:*} LOGIN" >/dev/null
        "$CLUSTER" psql "$PAIR_R" -v ON_ERROR_STOP=1 -q <<<"$(registry_node_sql "${role%:*}" "${role#*:}" "${role#*:}");
            GRANT EXECUTE ON FUNCTION $fn(text, oid, text, int[], bigint[]) TO ${role%:*};" >/dev/null
    done
    q "$PAIR_R" "CREATE ROLE plain_login LOGIN" >/dev/null
    [ $# -eq 0 ] || "$@"
    cluster_start "$PAIR_P" $((PAIR_PORT + 1)) "${PAIR_OPTS[@]}"
}
async_pair_cut_and_promote() {
    local step=$1 lsn plsn; shift
    standby_start "$PAIR_S" "$PAIR_P" $((PAIR_PORT + 2)) "${PAIR_OPTS[@]}"
    lsn=$(q "$PAIR_P" "SELECT pg_current_wal_lsn()")
    if poll 600 is_t "$PAIR_S" "SELECT pg_last_wal_replay_lsn() >= '$lsn'"; then ok "$step: S replayed up to $lsn"; else ko "$step: S did not replay up to $lsn"; fi
    PAIR_SENDER=
    poll 400 eval 'PAIR_SENDER=$(q "$PAIR_P" "SELECT pid FROM pg_stat_replication WHERE state = '"'"'streaming'"'"'"); [ -n "$PAIR_SENDER" ]' || true
    check "$step: P's WAL sender streams" "${PAIR_SENDER:-0}" -gt 0
    kill -STOP "$PAIR_SENDER"
    poll 100 eval '[ "$(proc_state "$PAIR_SENDER")" = T ]' || true
    check "$step: P's WAL sender is stopped" "$(proc_state "$PAIR_SENDER")" == T
    "$@"
    plsn=$(q "$PAIR_P" "SELECT pg_current_wal_flush_lsn()")
    "$CLUSTER" crash "$PAIR_P" >/dev/null 2>&1
    kill -KILL "$PAIR_SENDER" 2>/dev/null || true
    check "$step: S lags (received before the old primary's flushed $plsn)" \
        "$(q "$PAIR_S" "SELECT coalesce(pg_last_wal_receive_lsn(), '0/0') < '$plsn'")" == t
    "$CLUSTER" promote "$PAIR_S" >/dev/null 2>&1 || true
    if poll 600 is_t "$PAIR_S" "SELECT NOT pg_is_in_recovery()"; then ok "$step: S promoted"; else ko "$step: S not promoted"; fi
}
