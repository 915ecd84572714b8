#!/usr/bin/env bash
# keyed/006_registry_marks_snapshot — the bound of 1024 (database, name) pairs per system
# identifier of the registry marks (pg_idgen_keyed_marks and pg_idgen_segment_marks, checked by
# pg_idgen_marks_admit) holds for a node role whatever the isolation level of its sessions. One
# cluster on port 29187 (+ IT_PORT_OFFSET): R the registry, node role node_a (worker id 1).
# For each kind (keyed, segment), two sessions of node_a write marks of one system identifier:
#   B opens a transaction (READ COMMITTED, then REPEATABLE READ) and takes its snapshot when the
#   marks name 1 pair; A then writes 1023 more pairs (1024: the bound) and commits; B then writes
#   1023 pairs of its own. B must be refused (53400 in READ COMMITTED, whose next statement sees
#   A's pairs; 40001 in REPEATABLE READ, whose snapshot cannot): the system identifier's marks
#   never name more than 1024 pairs. (Counting the pairs in B's snapshot alone let REPEATABLE READ
#   through: 2047 pairs, and k such sessions k x 1023 + 1.)
# Then the bound on system identifiers: node_a (1 worker id) owns the marks of at most 2. Five
# sessions of node_a, each in an open transaction, write the first marks of five new system
# identifiers at once: at most 2 own marks after all commit, the others refused with 53400 (their
# first writes wait for each other on node_a's own rows of pg_idgen_registry_nodes; without that
# each counted the others' new identifiers out and all five took one). And a system identifier is
# an integer from 1 to 2^64 - 1 (22023 otherwise).
# Pass/fail never depends on timing: B waits for a file A's side creates (bounded), and A starts
# once B has said it holds its snapshot (bounded); the five sessions are let go once each has
# either written or is waiting for a lock (bounded).
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"

R=it_kmsnap
rq() { q "$R" "$@"; }
cluster_start "$R" 29187 -c pg_idgen.worker_id=-1
rq "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE ROLE node_a LOGIN" >/dev/null
"$CLUSTER" psql "$R" -v ON_ERROR_STOP=1 -q <<<"$(registry_node_sql node_a 1 1);
    GRANT EXECUTE ON FUNCTION pg_idgen_keyed_marks(text, oid, text, int[], bigint[]),
                              pg_idgen_segment_marks(text, oid, text, int[], bigint[]) TO node_a;" >/dev/null

# pairs KIND SYSID: how many (database, name) pairs the marks of SYSID name (as the superuser)
pairs() {
    local name=space; [ "$1" = keyed ] || name=tag
    rq "SELECT count(DISTINCT (database, $name)) FROM pg_idgen_$1_marks WHERE system_identifier = $2"
}
# as_node SQL...: SQL as node_a; prints the SQLSTATE of its first error (empty: none)
as_node() {
    local args=() s; for s in "$@"; do args+=(-c "$s"); done
    "$CLUSTER" psql "$R" -U node_a -At -v ON_ERROR_STOP=0 -c '\set VERBOSITY verbose' "${args[@]}" 2>&1 \
        | grep -oE 'ERROR: +[0-9A-Z]{5}' | head -1 | grep -oE '[0-9A-Z]{5}$' || true
}

# race KIND SYSID ISOLATION EXPECTED
race() {
    local kind=$1 sysid=$2 iso=$3 expected=$4 fn="pg_idgen_$1_marks" b ready=$TMP/ready.$1 go=$TMP/go.$1
    rm -f "$ready" "$go"
    rq "DELETE FROM pg_idgen_keyed_marks" "DELETE FROM pg_idgen_segment_marks" >/dev/null
    check "$kind/$iso: A's first pair is written" "$(as_node "SELECT * FROM $fn('$sysid', 1, 'first', '{0}', '{1}')")" == ""
    "$CLUSTER" psql "$R" -U node_a -At -v ON_ERROR_STOP=1 >"$TMP/b.$kind.out" 2>&1 <<EOF &
\set VERBOSITY verbose
BEGIN ISOLATION LEVEL $iso;
SELECT 1;
\! touch $ready; for i in \$(seq 1 1200); do [ -e $go ] && break; sleep 0.05; done
SELECT count(*) FROM generate_series(1, 1023) g, LATERAL $fn('$sysid', 1, 'b' || g, '{0}', '{1}');
COMMIT;
EOF
    b=$!
    BG_PIDS+=("$b")
    wait_until 60 "$kind/$iso: B holding its snapshot" test -e "$ready" || true
    check "$kind/$iso: A writes 1023 pairs more (1024, the bound)" \
        "$(as_node "SELECT count(*) FROM generate_series(2, 1024) g, LATERAL $fn('$sysid', 1, 'a' || g, '{0}', '{1}')")" == ""
    check "$kind/$iso: the marks of $sysid name 1024 pairs" "$(pairs "$kind" "$sysid")" -eq 1024
    touch "$go"
    wait "$b" || true
    check "$kind/$iso: B's 1023 pairs more are refused" \
        "$(grep -oE 'ERROR: +[0-9A-Z]{5}' "$TMP/b.$kind.out" | head -1 | grep -oE '[0-9A-Z]{5}$' || true)" == "$expected"
    check "$kind/$iso: the marks of $sysid still name 1024 pairs" "$(pairs "$kind" "$sysid")" -eq 1024
}

# ---- the bound on system identifiers under concurrent first writes
rq "DELETE FROM pg_idgen_keyed_marks" "DELETE FROM pg_idgen_segment_marks" "DELETE FROM pg_idgen_keyed_mark_owners" >/dev/null
GO=$TMP/go.owners
SESS=()
for i in 1 2 3 4 5; do
    "$CLUSTER" psql "$R" -U node_a -At -v ON_ERROR_STOP=1 >"$TMP/own.$i.out" 2>&1 <<EOF &
\set VERBOSITY verbose
BEGIN;
SELECT count(*) FROM pg_idgen_keyed_marks('90$i', 1, 'first', '{0}', '{1}');
\! touch $TMP/own.$i.done; for i in \$(seq 1 1200); do [ -e $GO ] && break; sleep 0.05; done
COMMIT;
EOF
    SESS+=($!); BG_PIDS+=($!)
done
# written or waiting: each session has either made its call or waits for a lock in it
settled() {
    local done waiting
    done=$(ls "$TMP"/own.*.done 2>/dev/null | wc -l)
    waiting=$(rq "SELECT count(*) FROM pg_stat_activity WHERE usename = 'node_a' AND wait_event_type = 'Lock'")
    [ $((done + waiting)) -ge 5 ]
}
wait_until 60 "the five sessions each written or waiting" settled || true
log "sessions that wrote before any commit: $(ls "$TMP"/own.*.done 2>/dev/null | wc -l) of 5"
touch "$GO"
for b in "${SESS[@]}"; do wait "$b" || true; done
refused=0; for i in 1 2 3 4 5; do grep -qE 'ERROR: +53400' "$TMP/own.$i.out" && refused=$((refused + 1)); done
check "five concurrent first writes: node_a owns the marks of 2 system identifiers (twice its 1 worker id)" \
    "$(rq "SELECT count(*) FROM pg_idgen_keyed_mark_owners WHERE role_name = 'node_a'")" -eq 2
check "five concurrent first writes: 3 refused with 53400" "$refused" -eq 3
rq "DELETE FROM pg_idgen_keyed_marks" "DELETE FROM pg_idgen_keyed_mark_owners" >/dev/null

# ---- a system identifier is an integer from 1 to 2^64 - 1
for bad in NaN -1 1.5 0 18446744073709551616 ' 7' ''; do
    check "system identifier '$bad' refused (22023)" "$(as_node "SELECT * FROM pg_idgen_keyed_marks('$bad', 1, 'x', '{0}', '{1}')")" == 22023
done
check "system identifier 18446744073709551615 (2^64 - 1) taken" "$(as_node "SELECT * FROM pg_idgen_segment_marks('18446744073709551615', 1, 'x', '{0}', '{1}')")" == ""
rq "DELETE FROM pg_idgen_keyed_marks" "DELETE FROM pg_idgen_segment_marks" "DELETE FROM pg_idgen_keyed_mark_owners" >/dev/null

race keyed 100 "READ COMMITTED" 53400
race segment 200 "READ COMMITTED" 53400
race keyed 100 "REPEATABLE READ" 40001
race segment 200 "REPEATABLE READ" 40001
finish
