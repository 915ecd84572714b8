#!/usr/bin/env bash
# segment/013_no_subtransactions — no path of segment_next, keyed_next or snowflake_next opens a
# subtransaction in the caller's transaction. Each subtransaction is a SAVEPOINT that Citus sends
# over its worker connections — which a COPY keeps busy, so the session died ("another command is
# already in progress") — and past 64 in one transaction PostgreSQL's snapshots overflow their
# subxid cache. One cluster on port 29092 (+ IT_PORT_OFFSET).
#
# What is counted: with client_min_messages = debug5 the server reports every start of a
# subtransaction to the client ("StartSubTransaction", ShowTransactionState in xact.c). The
# control, a PL/pgSQL block with an EXCEPTION clause (one subtransaction per run), shows the count
# works (each start prints one line per level of the nest; the outermost, level 1, is counted).
# Then bulk loads that cross many refills of a tag (INSERT ... SELECT, COPY, multi-row
# VALUES) of a plain, a strided and a slotted tag, and keyed_next / snowflake_next: none may start
# one (0.5.0 started one per refill: 200 for 2,000 values of a tag of step 10). The values are
# still durable before they are handed out (below the backing sequence's high-water mark), none
# twice after a restart, and a refill that the tag's state refuses still reaches the caller as its
# error (a tag whose backing sequence was dropped by hand: 55000).
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_segsub
cluster_start "$C" 29092 -c pg_idgen.worker_id=3
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT segment_create('plain', 10)" \
    "SELECT segment_create('strided', 10, nodes => 3, node_index => 2)" \
    "SELECT segment_create('slotted', 10, slots => 4, owned => ARRAY[0, 2])" \
    "SELECT keyed_create('chat', step => 10)" \
    "CREATE TABLE inv (no bigint PRIMARY KEY DEFAULT segment_next('plain'), v int)" \
    "CREATE TABLE seen (tag text, v bigint)" \
    "CREATE TABLE ids (id bigint PRIMARY KEY DEFAULT snowflake_next(), v int)" \
    "CREATE TABLE msgs (k int, v bigint)" >/dev/null

# subtx SQL...: the statements in one session at debug5; prints how many subtransactions started
subtx() {
    local args=(-c "SET client_min_messages = debug5") s
    for s in "$@"; do args+=(-c "$s"); done
    "$CLUSTER" psql "$C" -At -v ON_ERROR_STOP=1 "${args[@]}" 2>&1 >/dev/null | grep -c 'StartSubTransaction(1)' || true
}

n=$(subtx "DO \$\$ BEGIN PERFORM 1 / 0; EXCEPTION WHEN division_by_zero THEN NULL; END \$\$")
check "control: a PL/pgSQL exception block is counted as one subtransaction" "$n" -eq 1

n=$(subtx "INSERT INTO inv (v) SELECT g FROM generate_series(1, 2000) g")
check "INSERT ... SELECT of 2,000 rows with DEFAULT segment_next() (step 10): no subtransaction" "$n" -eq 0
n=$(subtx "COPY inv (v) FROM PROGRAM 'seq 2001 4000'")
check "COPY of 2,000 rows with DEFAULT segment_next(): no subtransaction" "$n" -eq 0
n=$(subtx "INSERT INTO inv (v) VALUES $(seq -s, -f '(%g)' 4001 4300)")
check "a multi-row VALUES of 300 rows: no subtransaction" "$n" -eq 0
n=$(subtx "BEGIN" "INSERT INTO inv (v) SELECT g FROM generate_series(4301, 5300) g" \
          "INSERT INTO seen SELECT t, segment_next(t) FROM unnest('{strided,slotted}'::text[]) t, generate_series(1, 1000)" "COMMIT")
check "one transaction over 300 refills of three tags: no subtransaction" "$n" -eq 0
check "the refills happened (segment_status.refills of the plain tag >= 400)" \
    "$(q "$C" "SELECT refills FROM segment_status WHERE tag = 'plain'")" -ge 400
n=$(subtx "INSERT INTO msgs SELECT k, keyed_next('chat', k) FROM generate_series(1, 50) k, generate_series(1, 40)")
check "keyed_next over many bounds (50 keys x 40, step 10): no subtransaction" "$n" -eq 0
n=$(subtx "INSERT INTO ids (v) SELECT g FROM generate_series(1, 5000) g")
check "snowflake_next for 5,000 rows: no subtransaction" "$n" -eq 0

check "5,300 invoice numbers, all distinct" "$(q "$C" "SELECT count(DISTINCT no) FROM inv")" -eq 5300
check "every value handed out lies at or below the tag's durable high-water mark" \
    "$(q "$C" "SELECT max(no) <= (SELECT persisted_hwm FROM segment_status WHERE tag = 'plain') FROM inv")" == t
check "strided values are in node 2's class of 3 (chunks of 10)" \
    "$(q "$C" "SELECT count(*) FROM seen WHERE tag = 'strided' AND ((v - 1) / 10) % 3 <> 2")" -eq 0
check "slotted values are in the owned slots 0 and 2 only" \
    "$(q "$C" "SELECT count(*) FROM seen WHERE tag = 'slotted' AND ((v - 1) / 10) % 4 NOT IN (0, 2)")" -eq 0
"$CLUSTER" stop "$C" immediate >/dev/null 2>&1 || true
cluster_start "$C" 29092 -c pg_idgen.worker_id=3
q "$C" "INSERT INTO inv (v) SELECT g FROM generate_series(5301, 6300) g" \
    "INSERT INTO seen SELECT t, segment_next(t) FROM unnest('{strided,slotted}'::text[]) t, generate_series(1, 500)" >/dev/null
check "after an immediate stop: no value of a tag handed out twice" \
    "$(q "$C" "SELECT (SELECT count(*) - count(DISTINCT no) FROM inv) + (SELECT count(*) - count(DISTINCT (tag, v)) FROM seen)")" -eq 0

# a refusal of the tag's state still reaches the caller as its error
seq=$(q "$C" "SELECT seq FROM pg_idgen_segments WHERE tag = 'strided'")
q "$C" "DROP SEQUENCE $seq" >/dev/null
out=$("$CLUSTER" psql "$C" -At -v ON_ERROR_STOP=0 -c '\set VERBOSITY verbose' \
      -c "SELECT count(segment_next('strided')) FROM generate_series(1, 100)" 2>&1 || true)
check_match "a tag whose backing sequence was dropped: 55000 reaches the caller" "$out" 'ERROR: +55000: the backing sequence \(OID [0-9]+\) of a segment tag does not exist'
finish
