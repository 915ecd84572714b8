#!/usr/bin/env bash
# tests/ha/run.sh — pg_idgen under Patroni (make test-ha; PostgreSQL 15 only): failovers under
# load, every value handed to a client recorded, no id handed out twice.
#
# A group of three PostgreSQL 15 nodes (scripts/ha.sh: etcd on loopback, Patroni 4.1.5, one
# worker id for the group) with clients running throughout (tests/ha/load.py: 3 inserting
# `DEFAULT snowflake_next()` / `DEFAULT segment_next('ha_ins')` through a multi-host connection
# string with target_session_attrs=read-write, 2 calling `SELECT snowflake_next(),
# segment_next('ha_sel')` alone; reconnecting after every error). Faults, each under load:
#   phase sync   (synchronous_mode: true)  the leader killed (Patroni and postmaster, kill -9)
#                three times in a row with lagging standbys, each old leader rejoining (pg_rewind
#                when its timeline diverged); then a patronictl switchover. Lagging: the standbys'
#                WAL receivers are stopped (SIGSTOP) while the leader hands out 600 more values,
#                and killed with the leader, so the WAL in flight never reaches them (a network
#                hiccup, then the primary gone; a receiver that was only paused would read the
#                kernel's socket buffer after SIGCONT and miss nothing)
#   phase async  (synchronous_mode: false, same group) the same faults
#   phase lease  (lease_mode = fixed, the registry outside the group; asynchronous) a lagging
#                kill, the rejoin, a switchover
# The layout has 1 sequence bit per 10 ms (200 ids/s) and pg_idgen.max_drift_ms = 30000: the
# clients ask for more, so the leader's ids run up to 30 s ahead of its clock — further than a
# Patroni failover takes, the burst a new user sees at once with a small layout. After a kill the
# dead leader's key is deleted in etcd at once (scripts/ha.sh expire-leader), as its TTL (20 s,
# Patroni's minimum) would later: the standbys elect within a second or two, so the new leader
# starts with its clock the furthest behind the old leader's ids.
# Asserted: in every phase no snowflake id handed out twice and no duplicate key (23505), and the
# ids of each new leader above every id of the leaders before it; in the sync phase also no segment
# value handed out twice and every acknowledged insert on the final leader; every rejoin streams.
# Reported, not asserted: failover time, time to the first id after it, client errors, rewinds,
# acknowledged inserts missing after an asynchronous failover.
# Env: HA_BASE_PORT (default 30450: ports 30450-30497; the lease group uses +24), HA_PHASES="sync async lease",
# HA_KILLS=3 (the lagging kills in a row of the sync and async phases; make test's layer: 2),
# HA_KEEP=DIR (keep the recorded values, and of a failed run every node's Patroni and server logs).
set -euo pipefail
ROOT=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=../integration/lib.bash
. "$ROOT/tests/integration/lib.bash" "$ROOT"
TEST_NAME=ha
HA=$ROOT/scripts/ha.sh
VENV=${PG_IDGEN_HA_VENV:-$PG_IDGEN_PG_HOME/patroni/venv}
BASE=${HA_BASE_PORT:-30450}
PHASES=${HA_PHASES:-sync async lease}
KILLS=${HA_KILLS:-3}   # lagging kills in a row in the sync and async phases
LAYOUT='time=41,worker=10,sequence=1,unit_ms=10,epoch=2026-01-01'
PARAMS=(pg_idgen.max_drift_ms=30000 "pg_idgen.layout=$LAYOUT")
GROUPS_STARTED=()
LOAD_PID=
[ "$PG" = 15 ] || { log "PostgreSQL 15 only (PG=$PG): nothing to do"; exit 0; }
[ -x "$VENV/bin/patroni" ] || { ko "no Patroni venv at $VENV (make deps)"; finish; }

# no_frames FILE: the lines of a Patroni log or error output without Python's traceback frames
no_frames() { grep -Ev '^ +(File |\^|[a-z_.]+\()' "$1" 2>/dev/null; }
# node_logs GROUP NODE: the end of its Patroni log (no traceback frames) and of its server's log
# (the data directory's, or the one Patroni set aside after a failed bootstrap)
node_logs() {
    local d; d=$("$CLUSTER" rundir)/$1/$2
    no_frames "$d/patroni.log" | tail -15 | sed "s/^/    $2 patroni: /"
    local l
    for l in "$d"/data/log/postgresql.log "$d"/data.failed*/log/postgresql.log; do
        [ -f "$l" ] && tail -10 "$l" | sed "s|^|    $2 $(basename "$(dirname "$(dirname "$l")")"): |"
    done
}
ha_cleanup() {
    set +e   # every group is destroyed, whatever fails before
    [ -z "$LOAD_PID" ] || kill "$LOAD_PID" 2>/dev/null || true
    local g
    for g in ${GROUPS_STARTED[@]+"${GROUPS_STARTED[@]}"}; do
        if [ "${FAILED:-0}" -gt 0 ]; then
            echo "--- Patroni log of $g (last 15 lines per node) ---"
            for n in 1 2 3; do node_logs "$g" "node$n"; done
            if [ -n "${HA_KEEP:-}" ]; then   # every node's Patroni and server logs, for a closer look
                mkdir -p "$HA_KEEP/$g"
                (cd "$("$CLUSTER" rundir)/$g" && find . -name '*.log' -exec cp --parents {} "$HA_KEEP/$g" \;) 2>/dev/null || true
            fi
        fi
        "$HA" destroy --name "$g" >/dev/null 2>&1 || true
    done
}
trap 'rc=$?; ha_cleanup; (exit $rc); cleanup' EXIT

now() { date +%s.%N; }
progress() { cut -d' ' -f"$1" "$OUT/progress" 2>/dev/null || echo 0; }
# values_from PORT N: the clients got N more values since MARK, the last one from PORT
more_values_from() { [ "$(progress 1)" -ge $((MARK + $2)) ] && [ "$(progress 2)" = "$1" ]; }
more_values() { [ "$(progress 1)" -ge $((MARK + $1)) ]; }

start_load() {   # start_load GROUP PHASE
    OUT=$TMP/$2; mkdir -p "$OUT"
    "$VENV/bin/python" "$ROOT/tests/ha/load.py" "$("$HA" dsn --name "$1")" "$OUT" --inserters 3 --selectors 2 &
    LOAD_PID=$!
    MARK=0
    wait_until 60 "the first 300 values" more_values 300
    printf 'start\t0\t-\t%s\t-\n' "$("$HA" port --name "$1" "$("$HA" leader --name "$1")")" > "$OUT/events.tsv"
}
stop_load() {
    touch "$OUT/stop"
    wait "$LOAD_PID" || ko "load.py exited with $?"
    LOAD_PID=
}

# lag_for N: let the leader hand out N values while the standbys lag, or until the clients stall
# (with a synchronous standby a reservation waits for it: calls block once the confirmed ones are
# used up); a bounded wait for a state, not an assertion
lag_for() {
    local n last=-1 still=0 end=$((SECONDS + 30))
    while [ $SECONDS -lt $end ] && ! more_values "$1"; do
        n=$(progress 1)
        if [ "$n" = "$last" ]; then still=$((still + 1)); else still=0; last=$n; fi
        [ $still -lt 10 ] || break
        sleep 0.2
    done
    log "the standbys lag: $(( $(progress 1) - MARK )) values handed out meanwhile"
}
# receivers GROUP OLD: the WAL receivers of the standbys of leader OLD into RECEIVERS; true when each
# standby has one (a receiver restarts after a timeline switch or a reload of primary_conninfo)
receivers() {
    local n mp r
    RECEIVERS=()
    for n in node1 node2 node3; do
        [ "$n" = "$2" ] && continue
        mp=$("$HA" pid --name "$1" "$n" 2>/dev/null) || return 1
        r=$(pgrep -P "$mp" -f 'walreceiver' || true)
        [ -n "$r" ] || return 1
        RECEIVERS+=($r)
    done
}
# sync_named GROUP: Patroni's DCS names a streaming synchronous standby (its /sync key). In
# synchronous_mode Patroni promotes only the standby named there, and it names a newly chosen one
# only once that standby has caught up: a leader lost before that is, by design, not replaced
# (a receiver stopped then would never catch up, and the group would stay without a leader)
sync_named() { "$HA" members --name "$1" 2>/dev/null | grep -q '^node[0-9] sync_standby streaming '; }
# sync_named_first GROUP: in the phases with synchronous_mode, wait (bounded) for sync_named
sync_named_first() {
    [ "${MODE:-}" = sync ] || return 0
    wait_until 60 "Patroni naming a synchronous standby of $("$HA" leader --name "$1")" sync_named "$1" || true
}
# the standbys' WAL receivers: stop them, let the leader run ahead, kill it and them (each standby's
# postmaster restarts its processes and replays what reached its disk; Patroni then promotes one)
lagging_kill() {   # lagging_kill GROUP
    local g=$1 old new t0 seen pids=() n mp
    old=$("$HA" leader --name "$g")
    # both at the same moment: a receiver that restarts meanwhile can make Patroni drop the name
    ready_to_lag() { { [ "${MODE:-}" != sync ] || sync_named "$g"; } && receivers "$g" "$old"; }
    wait_until 60 "a WAL receiver on each standby of $old$([ "${MODE:-}" != sync ] || echo ', one of them named synchronous by Patroni')" ready_to_lag || true
    pids=(${RECEIVERS[@]+"${RECEIVERS[@]}"})
    [ ${#pids[@]} -gt 0 ] || ko "no WAL receiver found on the standbys of $old"
    kill -STOP "${pids[@]}" 2>/dev/null || true
    MARK=$(progress 1)
    lag_for 600
    t0=$(now)
    kill -KILL "$("$HA" patroni-pid --name "$g" "$old")" "$("$HA" pid --name "$g" "$old")" 2>/dev/null || true
    kill -KILL "${pids[@]}" 2>/dev/null || true
    # the leader key goes now rather than at the end of its TTL (Patroni's minimum, 20 s): the
    # standbys elect at once, the new leader's clock further behind the old one's ids
    expired() { "$HA" expire-leader --name "$g" >/dev/null; }   # its refusals go to the log
    wait_until 15 "the leader key of $old deleted in etcd" expired || true
    after_fault "$g" kill "$old" "$t0"
}
switchover() {   # switchover GROUP
    local g=$1 old t0
    old=$("$HA" leader --name "$g")
    t0=$(now)
    # patronictl prints a refusal (a candidate that answered its health check late, no synchronous
    # standby named yet) and exits 0: asked again, bounded, until the leader moves
    try_switchover() {
        local out
        sync_named_first "$g"
        out=$("$HA" patronictl --name "$g" switchover --leader "$old" --force "$g" 2>&1) || true
        if grep -qiE 'failed|not possible|no good candidates|error' <<<"$out" \
            && [ "$("$HA" leader --name "$g")" = "$old" ]; then
            log "patronictl switchover refused, asked again: $(tail -1 <<<"$out")"
            return 1
        fi
    }
    wait_until 90 "patronictl switchover from $old accepted" try_switchover || true
    after_fault "$g" switchover "$old" "$t0"
}
# why_no_leader GROUP OLD: one failed-check line per other node, so that the summary of a failed
# run says why Patroni promoted none: the member's role (sync_standby in synchronous mode), state,
# timeline and lag, and its Patroni's last words
why_no_leader() {
    local n m last members
    members=$("$HA" members --name "$1" 2>/dev/null || true)
    for n in node1 node2 node3; do
        [ "$n" = "$2" ] && continue
        m=$(awk -v n="$n" '$1 == n {print $2, $3, "timeline", $4, "lag", $5}' <<<"$members")
        last=$(no_frames "$("$CLUSTER" rundir)/$1/$n/patroni.log" | grep -Ev 'no action|Lock owner|heartbeat connection' | tail -2 \
            | sed -E 's/^[0-9-]+ [0-9:,]+ //' | tr '\n' ' ' | cut -c1-300)
        ko "no leader: $n ${m:-not a member}; Patroni: $last"
    done
}
# after_fault GROUP KIND OLD T0: wait for the new leader and its first values, record the event
after_fault() {
    local g=$1 kind=$2 old=$3 t0=$4 new="" seen
    newleader() { new=$("$HA" leader --name "$g"); [ -n "$new" ] && [ "$new" != "$old" ]; }
    wait_until 120 "a new leader after the $kind of $old" newleader || { why_no_leader "$g" "$old"; return 1; }
    seen=$(now)
    printf '%s %s %s %s %s\n' "$kind" "$t0" "$("$HA" port --name "$g" "$old")" "$("$HA" port --name "$g" "$new")" "$seen" \
        | tr ' ' '\t' >> "$OUT/events.tsv"
    MARK=$(progress 1)
    wait_until 90 "values from the new leader $new" more_values_from "$("$HA" port --name "$g" "$new")" 100 || true
    log "$kind: $old -> $new"
    LAST_OLD=$old
}
rejoin() {   # rejoin GROUP NODE: its Patroni again, it must stream; counts pg_rewind runs
    local g=$1 n=$2 plog before
    plog=$("$CLUSTER" rundir)/$g/$n/patroni.log
    before=$(grep -c 'pg_rewind exit code=0' "$plog" 2>/dev/null || true)
    if "$HA" rejoin --name "$g" "$n" 2>"$TMP/rejoin.err"; then
        ok "$n rejoined $g and streams from the new leader"
    else
        ko "$n did not rejoin $g: $(tail -3 "$TMP/rejoin.err" | tr '\n' ' ')"
    fi
    REWINDS=$((REWINDS + $(grep -c 'pg_rewind exit code=0' "$plog" 2>/dev/null || true) - before))
}
wait_healthy() { wait_until 120 "every node of $1 streaming" "$HA" status --name "$1" >/dev/null 2>&1; }
healthy_quiet() { "$HA" status --name "$1" >/dev/null 2>&1; }

# assert_phase GROUP PHASE MODE(sync|async)
assert_phase() {
    local g=$1 phase=$2 mode=$3 r
    "$HA" psql --name "$g" -At -c "COPY (SELECT id, seg FROM ha_ids) TO STDOUT" > "$OUT/final.tsv"
    [ -z "${HA_KEEP:-}" ] || { mkdir -p "$HA_KEEP"; cp -r "$OUT" "$HA_KEEP/"; }
    r=$("$VENV/bin/python" "$ROOT/tests/ha/check.py" "$OUT" "$OUT/final.tsv" 2>"$OUT/summary") || { cat "$OUT/summary"; ko "check.py failed: $r"; return; }
    sed "s|^|[$TEST_NAME] $phase: |" "$OUT/summary"
    get() { sed -n "s/^$1=//p" <<<"$r"; }
    log "$phase: $(get values) values recorded ($(get inserted) inserted, $(get selected) selected), $(get faults) faults, client errors $(get client_errors) ($(get error_codes)), pg_rewind runs $REWINDS, acknowledged inserts missing $(get acked_missing), segment values twice $(get segment_twice)"
    check "$phase: values recorded" "$(get values)" -gt 1000
    check "$phase: faults with values after them" "$(get faults)" -eq "$4"
    check "$phase: no snowflake id handed out twice" "$(get snowflake_twice)" -eq 0
    check "$phase: no duplicate key (23505)" "$(get duplicate_key_errors)" -eq 0
    check "$phase: every new leader's ids above the old leaders' ids" "$(get ids_at_or_below_old_leader)" -eq 0
    check "$phase: every value from a leader of its time" "$(get values_outside_epochs)" -eq 0
    if [ "$mode" = sync ]; then
        check "$phase: no segment value handed out twice" "$(get segment_twice)" -eq 0
        check "$phase: every acknowledged insert on the final leader" "$(get acked_missing)" -eq 0
    fi
    FIGURES+="$phase: $(grep -Eo 'fault[0-9]+_(failover|first_id)_s=[0-9.na]+' <<<"$r" | tr '\n' ' ')"$'\n'
}

run_faults() {   # run_faults GROUP PHASE MODE KILLS
    local g=$1 phase=$2 mode=$3 kills=$4 k
    REWINDS=0 MODE=$mode
    start_load "$g" "$phase"
    for k in $(seq 1 "$kills"); do
        lagging_kill "$g" || break
        rejoin "$g" "$LAST_OLD"
    done
    switchover "$g" || true
    wait_healthy "$g" && ok "$phase: $LAST_OLD rejoined after the switchover"
    MARK=$(progress 1); wait_until 30 "values after the rejoin" more_values 100 || true
    stop_load
    assert_phase "$g" "$phase" "$mode" $((kills + 1))
}

# bootstrap_failed GROUP: Patroni's bootstrap of node1 failed, and its server logged no crash and
# no error of its own (an extension that breaks the start is a failure, never retried)
bootstrap_failed() {
    local d; d=$("$CLUSTER" rundir)/$1/node1
    grep -q 'Failed to bootstrap cluster' "$d/patroni.log" 2>/dev/null || return 1
    ! cat "$d"/data*/log/postgresql.log 2>/dev/null | grep -E 'PANIC|FATAL|ERROR|terminated by signal' \
        | grep -qvE 'the database system is (starting up|shutting down)'
}
# start_group GROUP OPTIONS...: scripts/ha.sh start; a group whose bootstrap failed in Patroni
# itself (before any fault of the test, with no server error) is shown, destroyed and started once
# more; any other failure to start fails the run
start_group() {
    local g=$1 try; shift
    for try in 1 2; do
        "$HA" start --name "$g" "$@" -- "${PARAMS[@]}" >/dev/null 2>"$TMP/start.err" && return 0
        log "scripts/ha.sh start $* failed (attempt $try):"
        no_frames "$TMP/start.err" | tail -15 | sed 's/^/    /'
        node_logs "$g" node1
        if [ "$try" = 1 ] && bootstrap_failed "$g"; then
            log "Patroni's bootstrap failed with no server error: the group is started once more"
            "$HA" destroy --name "$g" >/dev/null 2>&1 || true
            continue
        fi
        break
    done
    ko "scripts/ha.sh start $*: the group did not start"
    return 1
}

create_table() {
    "$HA" psql --name "$1" -c "SET client_min_messages = warning" \
        -c "SELECT segment_create('ha_ins'), segment_create('ha_sel')" \
        -c "CREATE TABLE IF NOT EXISTS ha_ids (id bigint PRIMARY KEY DEFAULT snowflake_next(), seg bigint NOT NULL DEFAULT segment_next('ha_ins'), client text, at timestamptz DEFAULT clock_timestamp())" >/dev/null
}

FIGURES=""
G=hatest
if [[ " $PHASES " == *" sync "* || " $PHASES " == *" async "* ]]; then
    GROUPS_STARTED+=("$G"); "$HA" destroy --name "$G" >/dev/null 2>&1 || true
    first=sync; [[ " $PHASES " == *" sync "* ]] || first=async
    t=$SECONDS
    start_group "$G" --base-port "$BASE" --"$first" || finish
    ok "group $G: a leader and two streaming standbys ($((SECONDS - t)) s)"
    check "one worker id for the group" "$("$HA" psql --name "$G" -At -c "SELECT worker_id FROM snowflake_worker()")" == 1
    create_table "$G"
    if [[ " $PHASES " == *" sync "* ]]; then
        # Patroni names the synchronous standby a loop or two after the group is healthy
        wait_until 60 "Patroni naming a synchronous standby" sync_named "$G" || true
        check "sync phase: synchronous_standby_names set by Patroni" \
            "$("$HA" psql --name "$G" -At -c 'SHOW synchronous_standby_names' | tr -d ' ')" != ""
        run_faults "$G" sync sync "$KILLS"
    fi
    if [[ " $PHASES " == *" async "* ]]; then
        "$HA" patronictl --name "$G" edit-config --force -s synchronous_mode=false "$G" >/dev/null
        nosync() { local v; v=$("$HA" psql --name "$G" -At -c 'SHOW synchronous_standby_names' 2>/dev/null) && [ -z "$v" ]; }
        wait_until 60 "synchronous_standby_names empty" nosync && ok "async phase: no synchronous standby"
        run_faults "$G" async async "$KILLS"
    fi
    "$HA" destroy --name "$G" >/dev/null 2>&1
fi
if [[ " $PHASES " == *" lease "* ]]; then
    G=halease; GROUPS_STARTED+=("$G"); "$HA" destroy --name "$G" >/dev/null 2>&1 || true
    t=$SECONDS
    start_group "$G" --base-port $((BASE + 24)) --async --lease --lease-ttl 6 || finish
    ok "group $G: a leader and two streaming standbys ($((SECONDS - t)) s)"
    held() { [ "$("$HA" psql --name "$G" -At -c "SELECT state || ' ' || worker_id FROM snowflake_lease()")" = "held 1" ]; }
    wait_until 30 "the leader holding the lease of worker id 1" held && ok "lease phase: the leader holds worker id 1"
    create_table "$G"
    run_faults "$G" lease async 1
fi
log "figures:"; printf '%s' "$FIGURES" | sed "s|^|[$TEST_NAME]   |"
finish
