#!/usr/bin/env bash
# scripts/run-integration.sh — run tests/integration/*/*.sh (one folder per feature,
# tests/README.md), two at a time.
#
# Usage: scripts/run-integration.sh [SCRIPT...]     (make test-integration)
#   Each script is run as `bash SCRIPT <repo root>` from the repo root; it starts its own clusters
#   with scripts/cluster.sh (unique names, ports of its own). All scripts run even if one fails; the
#   exit status is non-zero if any failed. Clusters that were not running before and are still
#   running at the end are stopped (clusters you had running, e.g. demo, are left alone).
#
# Env:
#   INTEGRATION_JOBS=N    scripts run at once (default 2). Each lane k (0..N-1) adds 200·k to
#                         IT_PORT_OFFSET, so two scripts that use the same port numbers never meet
#                         (the scripts' own ports lie in 28941-29140).
#                         A script whose header has the line `# integration: alone` runs with no
#                         other script beside it (it measures something a neighbour would disturb).
#   INTEGRATION_LIST=1    print the scripts that would run, one per line, and run none.
#   INTEGRATION_SCOPE=all (default) every script; =cross-version only the scripts whose header
#                         has `# integration: cross-version` — the ones that exercise the code that
#                         differs between PostgreSQL majors (WAL and its redo, crash recovery,
#                         standbys and promotion, pg_dump, shared memory at start, the background
#                         worker). `make test` uses it on 16 and 17; `make test-all` never does.
#                         =share with INTEGRATION_SHARE="15 18" (PG one of them): the majors of the
#                         list run every script between them: each runs the cross-version ones,
#                         and the others are dealt out in turn (sorted by path), except that a
#                         header line `# integration: major NN` gives a script to NN when NN is in
#                         the list (a script with a part only that major runs, or placed to even out the
#                         majors' times). `make test` shares
#                         15 and 18 so; `make test-all` runs every script on every major.
#
# Output: a script's output is printed whole when it ends (never interleaved), followed by
# `--- SCRIPT: ok (N s)` or `--- SCRIPT: FAILED (N s)`; at the end one line per script with its
# time, slowest first, and the wall time of the layer.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
CL=$ROOT/scripts/cluster.sh
JOBS=${INTEGRATION_JOBS:-2}
SCOPE=${INTEGRATION_SCOPE:-all}
BASE_OFFSET=${IT_PORT_OFFSET:-0}
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "INTEGRATION_JOBS must be a positive integer" >&2; exit 2; }
case $SCOPE in all|cross-version|share) ;; *) echo "INTEGRATION_SCOPE must be all, cross-version or share" >&2; exit 2 ;; esac
if [ "$SCOPE" = share ]; then
    read -ra SHARE <<<"${INTEGRATION_SHARE:-}"
    [[ " ${SHARE[*]} " == *" ${PG:-} "* ]] || { echo "INTEGRATION_SCOPE=share: PG (${PG:-unset}) must be one of INTEGRATION_SHARE (${SHARE[*]})" >&2; exit 2; }
fi


header_has() { grep -qxF "# integration: $2" "$1"; }

if [ $# -gt 0 ]; then all=("$@"); else
    shopt -s nullglob
    all=(tests/integration/*/*.sh)
fi
# pinned_major SCRIPT: NN of its header line `# integration: major NN`, if any. With scope share,
# the scripts that are not cross-version go to their pinned major when it shares, the others in turn
pinned_major() { sed -n 's/^# integration: major \([0-9][0-9]*\)$/\1/p' "$1" | head -1; }
scripts=() turn=0
for t in "${all[@]}"; do
    if [ "$SCOPE" = all ] || header_has "$t" cross-version; then scripts+=("$t"); continue; fi
    [ "$SCOPE" = share ] || continue
    pin=$(pinned_major "$t")
    if [ -n "$pin" ] && [[ " ${SHARE[*]} " == *" $pin "* ]]; then
        [ "$pin" = "$PG" ] && scripts+=("$t")
    else
        [ "${SHARE[$((turn % ${#SHARE[@]}))]}" = "$PG" ] && scripts+=("$t")
        turn=$((turn + 1))
    fi
done
[ ${#scripts[@]} -gt 0 ] || { echo "integration: no scripts to run" >&2; exit 0; }
case $SCOPE in
    cross-version) echo "integration: scope cross-version: ${#scripts[@]} of ${#all[@]} scripts (INTEGRATION_SCOPE=all runs every one)" >&2 ;;
    share) echo "integration: scope share with ${SHARE[*]}: ${#scripts[@]} of ${#all[@]} scripts on $PG (the cross-version ones and this major's share of the others; INTEGRATION_SCOPE=all runs every one)" >&2 ;;
esac
if [ "${INTEGRATION_LIST:-0}" = 1 ]; then printf '%s\n' "${scripts[@]}"; exit 0; fi

running() { "$CL" list | awk '$2 == "running" { print $1 }'; }
before=$(running)
OUT=$(mktemp -d /tmp/pg_idgen-integration.XXXXXX)
stop_new() {
    local c
    for c in $(running); do
        grep -qxF "$c" <<<"$before" || "$CL" stop "$c" fast || true
    done
}
on_exit() {
    local p
    for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    stop_new
    rm -rf "$OUT"
}
trap on_exit EXIT

declare -A LANE_PID=() LANE_SCRIPT=() LANE_START=()
failed=() times=()
T0=$SECONDS

# reap LANE: wait for the script in LANE, print its output and result
reap() {
    local lane=$1 t=${LANE_SCRIPT[$1]} rc
    wait "${LANE_PID[$lane]}" 2>/dev/null || true
    rc=$(cat "$OUT/$lane.rc" 2>/dev/null || echo 1)
    local secs=$((SECONDS - LANE_START[$lane]))
    cat "$OUT/$lane.log"
    if [ $rc -eq 0 ]; then echo "--- $t: ok ($secs s)"; else echo "--- $t: FAILED ($secs s)"; failed+=("$t"); fi
    times+=("$secs $t")
    unset "LANE_PID[$lane]" "LANE_SCRIPT[$lane]"
}
# wait_any: block until the script of some lane has ended (its .rc file written), then reap it
wait_any() {
    local lane
    while :; do
        for lane in "${!LANE_PID[@]}"; do
            if [ -e "$OUT/$lane.rc" ]; then reap "$lane"; return; fi
        done
        wait -n 2>/dev/null || sleep 0.2   # wakes when a job ends (its status is in the .rc file)
    done
}
free_lane() {   # prints the lowest free lane number
    local k
    for ((k = 0; k < JOBS; k++)); do [ -n "${LANE_PID[$k]:-}" ] || { echo "$k"; return; }; done
}

for t in "${scripts[@]}"; do
    alone=0; header_has "$t" alone && alone=1
    if [ $alone = 1 ]; then
        while [ ${#LANE_PID[@]} -gt 0 ]; do wait_any; done
    else
        while [ ${#LANE_PID[@]} -ge "$JOBS" ]; do wait_any; done
    fi
    lane=$(free_lane)
    echo "--- $t (started, lane $lane)"
    LANE_SCRIPT[$lane]=$t LANE_START[$lane]=$SECONDS
    rm -f "$OUT/$lane.rc"
    { rc=0; IT_PORT_OFFSET=$((BASE_OFFSET + 200 * lane)) bash "$t" "$ROOT" >"$OUT/$lane.log" 2>&1 || rc=$?
      echo "$rc" > "$OUT/$lane.rc"; } &
    LANE_PID[$lane]=$!
    if [ $alone = 1 ]; then wait_any; fi
done
while [ ${#LANE_PID[@]} -gt 0 ]; do wait_any; done

echo "integration: time per script, slowest first (wall time of the layer $((SECONDS - T0)) s, $JOBS at a time):"
printf '%s\n' "${times[@]}" | sort -rn | awk '{ printf "    %4d s  %s\n", $1, $2 }'
if [ ${#failed[@]} -gt 0 ]; then
    echo "integration: ${#failed[@]} of ${#scripts[@]} failed: ${failed[*]}"
    exit 1
fi
echo "integration: all ${#scripts[@]} script(s) passed"
