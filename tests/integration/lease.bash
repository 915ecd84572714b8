# tests/integration/lease.bash — what the worker id lease tests (tests/integration/lease/) share; sourced after
# lib.bash.
#   lease NAME COLUMNS              snowflake_lease()'s COLUMNS on cluster NAME
#   state_is NAME STATE             its state is STATE
#   detail_matches NAME REGEX       its detail matches REGEX
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
