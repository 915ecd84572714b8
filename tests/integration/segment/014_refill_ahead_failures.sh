#!/usr/bin/env bash
# segment/014_refill_ahead_failures — a reservation *ahead* (the caller already took its value)
# that fails for a reason of the tag's state costs the caller nothing: it gets its value, the rest
# of the segment is served, and the error comes only when nothing is left. Two such states that
# reach PostgreSQL as an ERROR of its own unless the reservation checks them first:
#
# A. bigint used up: a tag whose last chunk ends exactly at the largest bigint. The reservation
#    ahead while that chunk is served asks nextval for the chunk after it, past the backing
#    sequence's MAXVALUE (2200H from nextval). Every one of the 800 values must be served, then
#    2200H (as for a tag whose last chunk would cross the maximum: segment/006 D).
# B. the tag dropped (segment_drop) while a reservation ahead waits for its backing sequence:
#    the sequence is gone when nextval gets its lock ("could not open relation with OID", XX000).
#    The caller keeps the value it took; never XX000. C: the same for a caller left with no value
#    (a first call): the tag's own error (55000 or 42704), never XX000.
#
# One cluster on port 29093 (+ IT_PORT_OFFSET).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_segahead
cluster_start "$C" 29093 -c pg_idgen.worker_id=3
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null

# ---- A: the last chunk ends at 9223372036854775807 ----
q "$C" "SELECT segment_create('edge', 100, 9223372036854775008)" >/dev/null
out=$(q "$C" '\set VERBOSITY verbose' \
        "SELECT count(*), min(v), max(v) FROM (SELECT segment_next('edge') AS v FROM generate_series(1, 800)) s" 2>&1 || true)
check "A: all 800 values up to the largest bigint are served in one statement" \
    "$out" == "800|9223372036854775008|9223372036854775807"
expect_sql_error "$C" 2200H "" "SELECT segment_next('edge')"

# drop_while_reserving TAG OUT: calls segment_next(TAG) in a session of its own (its output, at
# VERBOSITY verbose, into OUT) while another transaction holds TAG's backing sequence (ALTER
# SEQUENCE: a lock nextval waits for, the read of the sequence's state before it does not); once
# the call waits for that lock, the transaction drops the tag (segment_drop) and commits.
drop_while_reserving() {
    local tag=$1 out=$2 seq w pid
    seq=$(q "$C" "SELECT seq FROM pg_idgen_segments WHERE tag = '$tag'")
    rm -f "$TMP/drop.fifo"
    mkfifo "$TMP/drop.fifo"
    "$CLUSTER" psql "$C" -At -v ON_ERROR_STOP=1 <"$TMP/drop.fifo" >"$TMP/drop.out" 2>&1 &
    BG_PIDS+=("$!")
    exec {w}>"$TMP/drop.fifo"
    echo "BEGIN; ALTER SEQUENCE $seq NO CYCLE;" >&"$w"
    wait_until 30 "the dropping transaction holds the sequence of $tag" \
        is_t "$C" "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE granted AND mode = 'ShareRowExclusiveLock' AND relation = '$seq'::regclass)"
    "$CLUSTER" psql "$C" -At -c '\set VERBOSITY verbose' -c "SELECT segment_next('$tag')" >"$out" 2>&1 &
    pid=$!
    BG_PIDS+=("$pid")
    wait_until 30 "the reservation of $tag waits for the sequence's lock" \
        is_t "$C" "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE NOT granted AND relation = '$seq'::regclass)"
    echo "SELECT segment_drop('$tag'); COMMIT;" >&"$w"
    wait_until 30 "$tag is dropped" is_t "$C" "SELECT NOT EXISTS (SELECT 1 FROM pg_idgen_segments WHERE tag = '$tag')"
    exec {w}>&-
    wait "$pid" || true
}

# ---- B: the tag dropped while a reservation ahead waits for its sequence ----
q "$C" "SELECT segment_create('gone', 10)" >/dev/null
# values 1..10: the shared buffer holds 1..10 and 11..20 (reserved ahead at the first call); the
# next call takes 11, the first value of the next segment, and reserves ahead
q "$C" "SELECT count(segment_next('gone')) FROM generate_series(1, 10)" >/dev/null
drop_while_reserving gone "$TMP/b.out"
b=$(cat "$TMP/b.out")
check_match "B: the caller that reserved ahead keeps its value (11)" "$b" '^11$'
check "B: never XX000" "$(grep -c XX000 <<<"$b" || true)" -eq 0

# ---- C: the same, for a caller with no value (both buffers empty): the tag's error, not XX000 ----
q "$C" "SELECT segment_create('gone2', 10)" >/dev/null
drop_while_reserving gone2 "$TMP/c.out"
c=$(cat "$TMP/c.out")
check_match "C: a caller left with no value gets the tag's error (55000 or 42704), never XX000" "$c" \
    'ERROR: +(55000: the backing sequence \(OID [0-9]+\) of a segment tag does not exist|42704: segment tag "gone2" does not exist)'
finish
