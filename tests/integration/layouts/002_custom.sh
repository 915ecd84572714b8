#!/usr/bin/env bash
# layouts/002_custom — custom layouts across sessions and through pg_dump/pg_restore:
# a session that already decoded with a custom layout sees another session's drop and
# re-registration at its next statement (the catalog trigger's relcache invalidation), and a
# database restored from pg_dump keeps its custom layouts (pg_extension_config_dump).
# integration: cross-version
. "$(dirname "$0")/../lib.bash"

cluster_start lay 28948
q lay "CREATE DATABASE app" >/dev/null
qdb lay app "CREATE EXTENSION pg_idgen" \
    "SELECT uid_layout_register('legacy', '2016-09-20 00:00:00+08', 29, 21, 13, unit_ms => 1000)" >/dev/null
id=$(qdb lay app "SELECT uid_compose('2020-02-02 02:02:02+00', 12345, 67, 'legacy')")
check_match "compose with the custom layout" "$id" '^[0-9]+$'

# Session 1 decodes, waits (in a statement of its own) until session 2 has swapped the layout's
# epoch and said so in the table swapped, then decodes again.
qdb lay app "CREATE TABLE swapped ()" >/dev/null
PGDATABASE=app "$CLUSTER" psql lay -At \
    -c "SELECT ts FROM uid_decode($id, 'legacy')" \
    -c "DO \$\$ BEGIN FOR i IN 1..1200 LOOP EXIT WHEN EXISTS (SELECT FROM swapped); PERFORM pg_sleep(0.05); END LOOP; END \$\$" \
    -c "SELECT ts FROM uid_decode($id, 'legacy')" > "$TMP/session1.out" 2>&1 &
s1=$!
BG_PIDS+=("$s1")
for i in $(seq 1 1200); do [ -s "$TMP/session1.out" ] && break; sleep 0.05; done   # first decode done
qdb lay app "SELECT uid_layout_drop('legacy')" \
    "SELECT uid_layout_register('legacy', '2017-09-20 00:00:00+08', 29, 21, 13, unit_ms => 1000)" \
    "INSERT INTO swapped DEFAULT VALUES" >/dev/null
wait "$s1"
first=$(sed -n 1p "$TMP/session1.out")
second=$(tail -n 1 "$TMP/session1.out")
check "session 1 decoded with the original epoch first" "$first" == "2020-02-02 02:02:02+00"
check "session 1 sees the re-registered layout (epoch one year later) without reconnecting" \
    "$second" == "2021-02-01 02:02:02+00"

# pg_dump / pg_restore into a fresh database: the custom layout comes along.
as_dump=$TMP/app.dump
touch "$as_dump" && chown postgres "$as_dump"
sock=$("$CLUSTER" sockdir lay); port=$("$CLUSTER" port lay)
runuser -u postgres -- "$PGBIN/pg_dump" -h "$sock" -p "$port" -U postgres -Fc -f "$as_dump" app
q lay "CREATE DATABASE restored" >/dev/null
runuser -u postgres -- "$PGBIN/pg_restore" -h "$sock" -p "$port" -U postgres -d restored "$as_dump"
check "the restored database lists the custom layout" \
    "$(qdb lay restored "SELECT count(*) FROM uid_layouts() WHERE name = 'legacy' AND NOT builtin")" -eq 1
check "ids decode the same in the restored database" \
    "$(qdb lay restored "SELECT ts || ' ' || worker_id || ' ' || sequence FROM uid_decode($id, 'legacy')")" \
    == "2021-02-01 02:02:02+00 12345 67"
PGDATABASE=restored expect_sql_error lay 42710 'layout "legacy" already exists' \
    "SELECT uid_layout_register('legacy', '2016-09-20Z', 29, 21, 13)"

finish
