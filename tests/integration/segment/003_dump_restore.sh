#!/usr/bin/env bash
# segment/003_dump_restore: pg_dump of a database using segment tags, pg_restore into a fresh
# database (same instance, and a second instance): the tags and their backing sequences come
# back (pg_idgen_segments is a pg_extension_config_dump table; the sequences are dumped with
# their current value), and values continue above everything dumped; pg_restore --clean into the
# same database never serves values cached for the dropped tag.
# integration: cross-version
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_seg_dump
C2=it_seg_dump2
cluster_start "$C" 28973
cluster_start "$C2" 28974
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
      "SELECT segment_create('inv', 100)" \
      "SELECT segment_create('striped', 50, nodes => 3, node_index => 2)" \
      "CREATE TABLE invoices (no bigint PRIMARY KEY DEFAULT segment_next('inv'), s bigint DEFAULT segment_next('striped'))" \
      "INSERT INTO invoices SELECT FROM generate_series(1, 1234)" >/dev/null
# values handed out but not stored anywhere must not come back either
q "$C" "SELECT segment_next('inv') FROM generate_series(1, 77)" >/dev/null
read -r max_inv max_s <<<"$(q "$C" "SELECT max(no), max(s) FROM invoices" | tr '|' ' ')"
seen_inv=$(q "$C" "SELECT segment_next('inv')")
log "dumped: max(no) $max_inv, max(s) $max_s, last inv handed out $seen_inv"

SOCK=$("$CLUSTER" sockdir "$C"); PORT=$("$CLUSTER" port "$C")
"$PGBIN/pg_dump" -h "$SOCK" -p "$PORT" -U postgres -Fc -f "$TMP/db.dump" postgres
check_match "the dump holds the backing sequences' values" \
    "$("$PGBIN/pg_restore" -f - "$TMP/db.dump" | grep -E "setval\('public.pg_idgen_seg_[0-9]+'" | tr '\n' ' ')" "pg_idgen_seg_1.*pg_idgen_seg_2"
check_match "the dump holds the tag metadata (config table data)" \
    "$("$PGBIN/pg_restore" -f - "$TMP/db.dump" | grep -A3 "COPY public.pg_idgen_segments" | tr '\n' ' ')" "inv"

restore_into() {
    local cl=$1 db=$2 sock port
    sock=$("$CLUSTER" sockdir "$cl"); port=$("$CLUSTER" port "$cl")
    q "$cl" "CREATE DATABASE $db" >/dev/null
    "$PGBIN/pg_restore" -h "$sock" -p "$port" -U postgres -d "$db" --exit-on-error "$TMP/db.dump"
}

for target in "$C:restored" "$C2:postgres"; do
    cl=${target%%:*}; db=${target#*:}
    if [ "$db" = postgres ]; then
        # fresh instance: its postgres database is empty
        sock=$("$CLUSTER" sockdir "$cl"); port=$("$CLUSTER" port "$cl")
        "$PGBIN/pg_restore" -h "$sock" -p "$port" -U postgres -d postgres --exit-on-error "$TMP/db.dump"
    else
        restore_into "$cl" "$db"
    fi
    tags=$(qdb "$cl" "$db" "SELECT string_agg(tag, ',' ORDER BY tag) FROM segment_status")
    check "[$cl/$db] tags restored" "$tags" == "inv,striped"
    qdb "$cl" "$db" "INSERT INTO invoices SELECT FROM generate_series(1, 10)" >/dev/null
    read -r new_inv new_s <<<"$(qdb "$cl" "$db" "SELECT min(no), min(s) FROM invoices WHERE no > $max_inv OR s > $max_s" | tr '|' ' ')"
    cnt=$(qdb "$cl" "$db" "SELECT count(*) FROM invoices")
    check "[$cl/$db] rows after restore + 10 inserts" "$cnt" -eq 1244
    check "[$cl/$db] new inv values continue above every value handed out before the dump" "$new_inv" -gt "$seen_inv"
    check "[$cl/$db] new striped values continue above the dumped ones" "$new_s" -gt "$max_s"
    check "[$cl/$db] striped values stay on node 2 of 3 (chunks of 50 from 101)" \
        "$(qdb "$cl" "$db" "SELECT count(*) FROM invoices WHERE ((s - 1) / 50) % 3 <> 2")" -eq 0
    dup=$(qdb "$cl" "$db" "SELECT count(*) - count(DISTINCT no) FROM invoices")
    check "[$cl/$db] no duplicate keys" "$dup" -eq 0
done
# the shared table is keyed by (database, tag): the original database's "inv" was not disturbed
# by the restored copy's "inv" on the same instance (YugabyteDB TA-22935)
check "the original database's tag continues its own sequence" "$(q "$C" "SELECT segment_next('inv')")" -eq $((seen_inv + 1))

# pg_restore --clean into the same database (roll it back to the dump) while a backend keeps the
# tag's segment cached in shared memory: DROP EXTENSION ran no segment_drop, so that entry still
# holds values of the dropped sequence; the restored tag must never serve them (they would come
# out twice), only values of the restored sequence, each once.
q "$C" "SELECT segment_next('inv') FROM generate_series(1, 200)" >/dev/null   # past the dump: segments cached above it
cached=$(q "$C" "SELECT cursor FROM segment_status WHERE tag = 'inv'")
"$PGBIN/pg_restore" -h "$SOCK" -p "$PORT" -U postgres --clean --if-exists -d postgres "$TMP/db.dump" 2>"$TMP/clean.err" \
    || { ko "pg_restore --clean: $(head -5 "$TMP/clean.err")"; }
q "$C" "CREATE TABLE after_clean (v bigint)" "INSERT INTO after_clean SELECT segment_next('inv') FROM generate_series(1, 250)" >/dev/null
check "after pg_restore --clean: 250 values, all distinct" "$(q "$C" "SELECT count(DISTINCT v) FROM after_clean")" -eq 250
check "after pg_restore --clean: values increase in the order handed out (none from the old cache)" \
    "$(q "$C" "SELECT count(*) FROM (SELECT v < lag(v) OVER (ORDER BY ctid) AS down FROM after_clean) s WHERE down")" -eq 0
check "after pg_restore --clean: values come from the restored sequence, above what was dumped (cache was at $cached)" \
    "$(q "$C" "SELECT min(v) > $max_inv FROM after_clean")" == t
finish
