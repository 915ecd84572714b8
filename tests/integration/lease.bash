# tests/integration/lease.bash — what the worker id lease tests (tests/integration/lease/) share; sourced after
# lib.bash.
#   lease NAME COLUMNS              snowflake_lease()'s COLUMNS on cluster NAME
#   state_is NAME STATE             its state is STATE
#   detail_matches NAME REGEX       its detail matches REGEX
#   registry_node_sql ROLE LO HI    the SQL that lets ROLE act as a node for worker ids LO..HI
#   wait_for DESC COMMAND...        polls COMMAND every 0.2 s until it succeeds (a PASS saying
#                                   how long at most) or 90 s have passed (a FAIL, returns 1).
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
