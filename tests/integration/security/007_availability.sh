#!/usr/bin/env bash
# security/007_availability — the availability guards on a fresh install, generated from the
# catalog like the privilege guards of security/004: what a role short of superuser may call
# cannot make another role's documented operation wait, and what a database writes into a
# registry table is given back when the database goes away. Two clusters on ports 29101 and 29102
# (+ IT_PORT_OFFSET): R, the registry and a node with worker id 9 (leases off), databases
# postgres (the registry) and vic; P, a node of R (fixed lease of worker id 2 as node_p).
#  1. Lock waits (tests/security/availability.bash, avail_guard): every function of pg_idgen
#     that PUBLIC (role nobody), a keyed space's USAGE holder (user_u) or a registry node role
#     (node_x, worker id 1) may execute, enumerated from pg_proc by
#     tests/security/gen_avail_calls.sql and called in an open transaction (in auto mode also
#     over the longest range of worker ids): while it is open or runs, another node's claim,
#     renewal, slot calls and marks calls, and another database's snowflake_next, segment_next
#     and keyed_next answer as they do alone, under lock_timeout = 300ms. The number of calls ×
#     operations is logged.
#  2. Reclaim: every table of the extension keyed by a database oid (enumerated from the
#     catalog: a column "database" of type oid) has a writer below, or the check fails; for each,
#     a database of P that wrote a row and was dropped, and rows of 1023 more databases P does
#     not have: a new first write of P's database app works, and no row of a database P does not
#     have is left.
# Pass/fail never depends on timing: waits poll for states (bounded).
# (make test: on 15, the oldest major, beside 19's share; the longest script, its calls the same on every major)
# integration: major 15
set -euo pipefail
. "$(dirname "$0")/../lib.bash"
. "$(dirname "$0")/../lease.bash"
. "$ROOT/tests/security/lib.bash"
. "$ROOT/tests/security/availability.bash"

R=it_avreg
P=it_avp
PR=$(itport 29101)
cluster_start "$R" 29101 -c pg_idgen.worker_id=9
q "$R" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE DATABASE vic" >/dev/null

# ---- 1. lock waits ----
avail_setup "$R" postgres vic
avail_guard "$R" postgres vic "1: fresh install"

# ---- 2. reclaim ----
q "$R" "CREATE ROLE node_p LOGIN IN ROLE idgen_nodes" "INSERT INTO pg_idgen_registry_nodes VALUES ('node_p', 2, 2)" >/dev/null
cluster_start "$P" 29102 -c pg_idgen.lease_mode=fixed -c pg_idgen.lease_ttl=6 -c pg_idgen.lease_margin=1 \
    -c pg_idgen.worker_id=2 -c pg_idgen.node_name=np \
    -c "pg_idgen.registry=host=127.0.0.1 port=$PR user=node_p dbname=postgres connect_timeout=2"
q "$P" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE DATABASE app" >/dev/null
qdb "$P" app "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wait_for "2: P holds worker id 2" state_is "$P" held
SYSID=$(q "$P" "SELECT system_identifier FROM pg_control_system()")
# per table: the name column, the SQL that creates a name N in a database, and its first write
declare -A NAMECOL=([pg_idgen_keyed_marks]=space [pg_idgen_segment_marks]=tag)
declare -A CREATE=([pg_idgen_keyed_marks]="SELECT keyed_create('%s', registry => true)"
                   [pg_idgen_segment_marks]="SELECT segment_create('%s', 10, registry_marks => true)")
declare -A WRITE=([pg_idgen_keyed_marks]="SELECT keyed_next('%s', 1) > 0" [pg_idgen_segment_marks]="SELECT segment_next('%s') > 0")
TABLES=$(q "$R" "SELECT string_agg(c.relname, ' ' ORDER BY c.relname) FROM pg_class c
    JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_idgen'
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'database' AND a.atttypid = 'oid'::regtype AND NOT a.attisdropped
    WHERE c.relkind = 'r'")
check "2: the tables keyed by a database oid, from the catalog" "$(wc -w <<<"$TABLES")" -ge 2
k=0
for t in $TABLES; do
    k=$((k + 1))
    if [ -z "${WRITE[$t]:-}" ]; then ko "2: $t is keyed by a database oid and has no reclaim check here"; continue; fi
    col=${NAMECOL[$t]}
    q "$P" "CREATE DATABASE gone$k" >/dev/null
    qdb "$P" "gone$k" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "$(printf "${CREATE[$t]}" g)" "$(printf "${WRITE[$t]}" g)" >/dev/null
    GONE=$(q "$P" "SELECT oid FROM pg_database WHERE datname = 'gone$k'")
    check "2: $t: a row of database gone$k" "$(q "$R" "SELECT count(*) > 0 FROM $t WHERE system_identifier = $SYSID AND database = $GONE")" == t
    q "$P" "DROP DATABASE gone$k" >/dev/null
    q "$R" "INSERT INTO $t (system_identifier, database, $col, $( [ "$col" = tag ] && echo slot || echo bucket), bound)
        SELECT $SYSID, 4000000000 - g, 'g', 0, 10 FROM generate_series(1, 1024 - (SELECT count(DISTINCT (database, $col)) FROM $t WHERE system_identifier = $SYSID)) g" >/dev/null
    DBS=$(q "$P" "SELECT string_agg(oid::text, ',') FROM pg_database")
    out=$(qdb "$P" app "SET client_min_messages = warning" "$(printf "${CREATE[$t]}" "n$k")" "$(printf "${WRITE[$t]}" "n$k")" 2>&1 | { grep -v '^$' || true; } | tail -1 || true)
    check "2: $t: P's database app writes its first row of a new name with 1024 pairs named before" "$out" == t
    check "2: $t: rows of databases P does not have, left" \
        "$(q "$R" "SELECT count(*) FROM $t WHERE system_identifier = $SYSID AND database NOT IN ($DBS)")" -eq 0
done
finish
