# tests/integration/lib.bash — shared helpers for tests/integration/<feature>/NNN_*.sh.
# (Named .bash, not .sh, and outside the feature folders: `make test` runs every
# tests/integration/*/*.sh.)
#
# Source it from a test script:  . "$(dirname "$0")/../lib.bash"
#   cluster_start NAME PORT [postgres opts]   fresh cluster (destroyed first), registered for cleanup
#   standby_start NAME PRIMARY PORT [opts]    fresh streaming standby of PRIMARY (cluster.sh standby)
#   q NAME SQL...                             psql -At, one -c per SQL argument; prints the result
#   check DESC ACTUAL OP EXPECTED             OP: -eq -ne -gt -ge -lt -le (integers) or == != (strings)
#   check_match DESC TEXT REGEX               TEXT matches the (extended) regex
#   expect_sql_error NAME SQLSTATE REGEX SQL  SQL must fail with SQLSTATE and a message matching REGEX
#   finish                                    prints the summary; exits 1 if any check failed
#   poll TRIES COMMAND...                     COMMAND succeeds within TRIES x 50 ms (a status, no check)
#   is_t NAME SQL                             SQL on cluster NAME returns t
#   proc_state PID                            the state letter of process PID (T: stopped), empty if gone
# Every cluster started with cluster_start is destroyed on exit (trap), even on failure.
# IT_KEEP_LOGS=<dir>: copy each cluster's server log there (<test>.<cluster>.log) before it is destroyed.
# The PostgreSQL major is PG=NN / PG_CONFIG (scripts/pgenv.bash): PGBIN, PSQL, PG and
# PG_HAS_CONTRIB are set here for the scripts.
# Ports are 28941.. per script; IT_PORT_OFFSET=N shifts them all (with PG_IDGEN_RUN_DIR=<dir>,
# honoured by scripts/cluster.sh, two runs of the suite can share a machine).
set -euo pipefail

ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$ROOT"
CLUSTER=$ROOT/scripts/cluster.sh
# shellcheck source=../../scripts/pgenv.bash
. "$ROOT/scripts/pgenv.bash"
# feature/NNN_name (the script's folder and name); TEST_ID, the same with _ for /, names files
TEST_NAME=$(basename "$(dirname "$0")")/$(basename "$0" .sh)
TEST_ID=${TEST_NAME//\//_}
TMP=$(mktemp -d "/tmp/pg_idgen-${TEST_ID}.XXXXXX")
chmod 755 "$TMP"
T_START=$(date +%s.%N)
PASSED=0
FAILED=0
FAILS=()
STARTED_CLUSTERS=()
BG_PIDS=()

log() { printf '[%s] %s\n' "$TEST_NAME" "$*"; }

cleanup() {
    local rc=$?
    set +e
    local p
    for p in ${BG_PIDS[@]+"${BG_PIDS[@]}"}; do kill "$p" 2>/dev/null; done
    local c
    for c in ${STARTED_CLUSTERS[@]+"${STARTED_CLUSTERS[@]}"}; do
        if [ "$rc" -ne 0 ] || [ "$FAILED" -gt 0 ]; then
            echo "--- server log of $c (last 30 lines) ---"
            "$CLUSTER" log "$c" 30 2>/dev/null | sed 's/^/    /'
        fi
        if [ -n "${IT_KEEP_LOGS:-}" ]; then   # make test-assert scans them for TRAP: lines
            mkdir -p "$IT_KEEP_LOGS"
            cp "$("$CLUSTER" pgdata "$c")/log/postgresql.log" "$IT_KEEP_LOGS/$TEST_ID.$c.log" 2>/dev/null
        fi
        "$CLUSTER" destroy "$c" >/dev/null 2>&1
    done
    rm -rf "$TMP"
    if [ "$rc" -ne 0 ] && [ -z "${FINISHED:-}" ]; then
        echo "[$TEST_NAME] FAIL: aborted (exit $rc) after $PASSED passed / $FAILED failed checks${ABORTED_AT:+; the command that failed: $ABORTED_AT}"
    fi
    exit "$rc"
}
trap cleanup EXIT
# the command whose failure ends a script under set -e (a failing command the script does not
# test), with its file and line, for the abort message above; -E: also inside functions
set -E
trap 'ABORTED_AT="${BASH_SOURCE[0]##*/}:$LINENO: ${BASH_COMMAND:0:200} (exit $?)"' ERR
trap 'exit 130' INT TERM

# the synchronization errors of the row s of pg_stat_subscription_stats: the column sync_error_count
# on 15-18; 19 counts tables and sequences apart (sync_table_error_count, sync_seq_error_count)
SYNC_ERRORS="coalesce((pg_catalog.to_jsonb(s) ->> 'sync_error_count')::bigint, (pg_catalog.to_jsonb(s) ->> 'sync_table_error_count')::bigint + (pg_catalog.to_jsonb(s) ->> 'sync_seq_error_count')::bigint)"

itport() { echo $(( $1 + ${IT_PORT_OFFSET:-0} )); }

cluster_start() {
    local name=$1 port; port=$(itport "$2"); shift 2
    local known=0 c
    for c in ${STARTED_CLUSTERS[@]+"${STARTED_CLUSTERS[@]}"}; do [ "$c" = "$name" ] && known=1; done
    if [ "$known" = 0 ]; then
        "$CLUSTER" destroy "$name" >/dev/null 2>&1 || true   # every run starts fresh
        STARTED_CLUSTERS+=("$name")
    fi
    "$CLUSTER" start "$name" "$port" "$@" 2>/dev/null
}

# register NAME for cleanup and destroy what a previous run left (first use only)
register_cluster() {
    local name=$1 c
    for c in ${STARTED_CLUSTERS[@]+"${STARTED_CLUSTERS[@]}"}; do [ "$c" = "$name" ] && return 0; done
    "$CLUSTER" destroy "$name" >/dev/null 2>&1 || true
    STARTED_CLUSTERS+=("$name")
}

standby_start() {
    local name=$1 primary=$2 port; port=$(itport "$3"); shift 3
    register_cluster "$name"
    "$CLUSTER" destroy "$name" >/dev/null 2>&1 || true
    "$CLUSTER" standby "$name" "$primary" "$port" "$@" 2>"$TMP/standby.$name.err" \
        || { cat "$TMP/standby.$name.err" >&2; return 1; }
}

# q NAME SQL... : unaligned tuples-only psql; stderr passes through
q() {
    local name=$1; shift
    local args=() s
    for s in "$@"; do args+=(-c "$s"); done
    "$CLUSTER" psql "$name" -At "${args[@]}"
}

# qdb NAME DB SQL...
qdb() {
    local name=$1 db=$2; shift 2
    PGDATABASE=$db q "$name" "$@"
}

ok() { PASSED=$((PASSED + 1)); printf '[%s] PASS: %s\n' "$TEST_NAME" "$*"; }
ko() { FAILED=$((FAILED + 1)); FAILS+=("$*"); printf '[%s] FAIL: %s\n' "$TEST_NAME" "$*"; }
# wait_until SECONDS DESCRIPTION COMMAND...: poll a state (every 0.2 s) until COMMAND succeeds; a
# failed check naming DESCRIPTION when SECONDS pass first
wait_until() {
    local limit=$1 what=$2; shift 2
    local end=$((SECONDS + limit))
    until "$@"; do
        [ $SECONDS -lt $end ] || { ko "timeout after ${limit}s waiting for: $what"; return 1; }
        sleep 0.2
    done
}

check() {
    local desc=$1 actual=$2 op=$3 expected=$4 res=1
    case $op in
        ==) [ "$actual" == "$expected" ] && res=0 ;;
        !=) [ "$actual" != "$expected" ] && res=0 ;;
        -eq|-ne|-gt|-ge|-lt|-le)
            [[ $actual =~ ^-?[0-9]+$ ]] && [ "$actual" "$op" "$expected" ] && res=0 ;;
        *) echo "check: bad operator $op" >&2; exit 2 ;;
    esac
    if [ $res = 0 ]; then ok "$desc ($actual $op $expected)"; else ko "$desc: got '$(head -c 500 <<<"$actual" | tr '\n' ' ')', want $op '$expected'"; fi
}

check_match() {
    local desc=$1 text=$2 re=$3
    if [[ $text =~ $re ]]; then ok "$desc"; else ko "$desc: '$(head -c 500 <<<"$text" | tr '\n' ' ')' does not match /$re/"; fi
}

# expect_sql_error NAME SQLSTATE REGEX SQL... : runs with VERBOSITY verbose; sets LAST_ERR
expect_sql_error() {
    local name=$1 state=$2 re=$3; shift 3
    local out rc=0
    out=$(q "$name" '\set VERBOSITY verbose' "$@" 2>&1) || rc=$?
    LAST_ERR=$out
    local first
    first=$(grep -m1 -E '^(psql:[^ ]* )?ERROR:' <<<"$out" || true)
    if [ "$rc" -eq 0 ]; then
        ko "expected ERROR $state for [$*], but it succeeded: $(head -c 300 <<<"$out" | tr '\n' ' ')"
    elif [[ $first =~ ERROR:\ +$state: ]] && [[ $out =~ $re ]]; then
        ok "[$*] -> ERROR $state: ${first#*ERROR:  $state: }"
    else
        ko "expected ERROR $state matching /$re/ for [$*], got: $(head -c 500 <<<"$out" | tr '\n' ' ')"
    fi
}

poll() { local n=$1 i; shift; for i in $(seq 1 "$n"); do "$@" && return 0; sleep 0.05; done; return 1; }
is_t() { [ "$(q "$1" "$2" 2>/dev/null)" = t ]; }
proc_state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null; }

elapsed() { awk -v a="$T_START" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

finish() {
    FINISHED=1
    if [ "$FAILED" -gt 0 ]; then
        echo "[$TEST_NAME] FAIL: $FAILED of $((PASSED + FAILED)) checks failed in $(elapsed) s:"
        local f; for f in "${FAILS[@]}"; do echo "    - $f"; done
        exit 1
    fi
    echo "[$TEST_NAME] PASS: all $PASSED checks passed in $(elapsed) s"
    exit 0
}
