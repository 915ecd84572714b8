#!/usr/bin/env bash
# tests/upgrade/extension_update.sh MAJOR — ALTER EXTENSION pg_idgen UPDATE from 0.1.0 to this
# version on PostgreSQL MAJOR (`make test-extension-update PG=NN`; a layer of `make test`).
#
# 0.1.0 is built from its git tag (v0.1.0; cached, see build_tagged in lib.bash). It was released for
# PostgreSQL 15 only (it does not compile for 16-18), so a 0.1.0 database on 16-18 can only come
# from pg_upgrade of a 15 cluster — which is what this test does for MAJOR != 15:
#
#  1. PostgreSQL 15 with the 0.1.0 library, database app: the worker id in the table
#     (set_worker_id(7)), a custom layout, a table with DEFAULT snowflake_next() (5,000 rows),
#     three segment tags (plain; nodes => 2 stride; adaptive step) with DEFAULT segment_next()
#     tables (1,000 rows each), and for MAJOR 15 a client inserting one row per transaction the
#     whole time (the ongoing generator).
#  2. The new library: MAJOR 15, installed over 0.1.0 and the server restarted; otherwise the
#     cluster pg_upgraded to MAJOR, where only the new library exists (pg_upgrade re-creates
#     0.1.0's C functions: every symbol they name must still be in the library).
#  3. Before the update: every 0.1.0 function called with valid arguments either works or gives
#     the version-mismatch error (55000, with the ALTER EXTENSION hint); the server never crashes
#     (same postmaster start time, no "terminated by signal" in the log).
#  4. ALTER EXTENSION pg_idgen UPDATE — refused in a SQL_ASCII database (0A000) and where a tag's
#     row names a relation that is not its sequence (22023, the tag named) and where a view uses
#     uid_decode (2BP01, the view named; dropped, updated, created again), a WARNING naming a
#     tag whose sequence was dropped by hand — and in database app: the objects (tests/upgrade/objects.sql: members, function
#     attributes, columns, constraints, indexes, triggers, views, grants, comments, config
#     tables) equal a fresh install's; rows, the worker id, the layout and the tags' settings
#     are kept; the tags' sequences are now owned by pg_idgen_segments.seq; new ids and values
#     are above every old one (strides kept); the client's ids increase across the whole
#     upgrade.
#  5. pg_dump -Fc / pg_restore of the updated database: same objects, same rows, the sequences'
#     values and their link restored, generation continues above; DROP EXTENSION refuses while
#     tables' DEFAULTs use it (2BP01), DROP EXTENSION ... CASCADE leaves no pg_idgen relation.
# The same update runs in a database whose owner, an ordinary role, planted shadows of every name
# the extension uses before the old version was installed there (tests/security/lib.bash): after
# it, the catalog audit finds nothing and no shadow runs when a superuser and that role call every
# function and read every view.
# At exit the test build is installed into PostgreSQL 15 again and 0.1.0's script removed.
set -euo pipefail
MAJOR=${1:-15}
. "$(dirname "$0")/../integration/lib.bash" "$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/tests/upgrade/lib.bash"
. "$ROOT/tests/security/lib.bash"
TEST_NAME=extension_update_pg$MAJOR
OLD_TAG=v0.1.0 OLD_VERSION=0.1.0
OLD_COMMIT=db7f0ff240aac5687ff1bc5a740eeb8cd99809d4   # what v0.1.0 names
NEW_VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
CFG15=$(pg_config_for 15)

EXT15=$("$CFG15" --sharedir)/extension

# ---------------------------------------------------------------- 0.1.0 from its tag, for 15
install_old() { cp -r --remove-destination "$RELEASED_TREE/." /; }
restore_new() {
    rm -f "$EXT15/pg_idgen--$OLD_VERSION.sql"
    make -C "$ROOT" --no-print-directory install-test PG=15 >/dev/null 2>&1 \
        || echo "[$TEST_NAME] could not reinstall the test build into PostgreSQL 15" >&2
}
trap 'rc=$?; restore_new; (exit $rc); cleanup' EXIT
build_tagged "$OLD_TAG" "$OLD_COMMIT" 15
ok "0.1.0 built from $OLD_TAG"

db() { qdb "$1" app "${@:2}"; }
OPTS=(-c pg_idgen.worker_id=-1)
OLD=eu_old NEW=eu_new
[ "$MAJOR" = 15 ] && NEW=$OLD

# ---------------------------------------------------------------- 1. state made by 0.1.0
use 15
hostile_update_here && hostile_sites_of_new "${OLD}_sites" 28962
install_old
cluster_start "$OLD" 28993 "${OPTS[@]}"
q "$OLD" "CREATE DATABASE app" >/dev/null
db "$OLD" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "SELECT set_worker_id(7)" \
    "SELECT uid_layout_register('legacy', '2016-05-20 00:00:00+08', 28, 22, 13, unit_ms => 1000)" \
    "CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(), n int NOT NULL)" \
    "INSERT INTO orders (n) SELECT g FROM generate_series(1, 5000) g" \
    "SELECT segment_create('inv', step => 100)" \
    "SELECT segment_create('strided', step => 50, nodes => 2, node_index => 1)" \
    "SELECT segment_create('adaptive', step => 100, min_step => 50, max_step => 400, target_interval => '1 minute')" \
    "CREATE TABLE invoices (no bigint PRIMARY KEY DEFAULT segment_next('inv'), n int NOT NULL)" \
    "CREATE TABLE strided (no bigint PRIMARY KEY DEFAULT segment_next('strided'), n int NOT NULL)" \
    "CREATE TABLE adaptive (no bigint PRIMARY KEY DEFAULT segment_next('adaptive'), n int NOT NULL)" \
    "INSERT INTO invoices (n) SELECT g FROM generate_series(1, 1000) g" \
    "INSERT INTO strided (n) SELECT g FROM generate_series(1, 1000) g" \
    "INSERT INTO adaptive (n) SELECT g FROM generate_series(1, 1000) g" \
    "CREATE TABLE stream (id bigint PRIMARY KEY DEFAULT snowflake_next(), n int UNIQUE NOT NULL)" >/dev/null
hostile_before_update "$OLD" app
# databases the update must refuse, or warn about, with the tags named
q "$OLD" "CREATE DATABASE ascii ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'" \
      "CREATE DATABASE edited" "CREATE DATABASE dangling" "CREATE DATABASE viewdb" >/dev/null
qdb "$OLD" viewdb "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "CREATE VIEW decoded AS SELECT d.ts, d.worker_id FROM uid_decode(117809695279812608) d" >/dev/null
qdb "$OLD" ascii "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
qdb "$OLD" edited "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT segment_create('e', 10)" \
    "CREATE TABLE not_a_sequence (x int)" "UPDATE pg_idgen_segments SET seq = 'not_a_sequence'::regclass" >/dev/null
qdb "$OLD" dangling "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT segment_create('a', 10)" \
    "SELECT segment_create('b', 10)" "DROP SEQUENCE pg_idgen_seg_2" >/dev/null
check "old: extension version" "$(db "$OLD" "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$OLD_VERSION"
check "old: 5000 ids of worker 7" "$(db "$OLD" "SELECT count(*) FROM orders, uid_decode(orders.id) d WHERE d.worker_id = 7")" -eq 5000
old_max=$(db "$OLD" "SELECT max(id) FROM orders")
tags_sql="SELECT string_agg(format('%s %s %s %s %s %s %s %s %s', tag, step, unit, start, nodes, node_index, min_step, max_step, target_interval), '; ' ORDER BY tag) FROM pg_idgen_segments"
old_tags=$(db "$OLD" "$tags_sql")
old_seg_max=$(db "$OLD" "SELECT (SELECT max(no) FROM invoices) || ' ' || (SELECT max(no) FROM strided) || ' ' || (SELECT max(no) FROM adaptive)")
old_decode=$(db "$OLD" "SELECT md5(string_agg(format('%s %s', d.ts, d.worker_id), ',' ORDER BY o.id)) FROM orders o, uid_decode(o.id, 'legacy') d")
log "0.1.0 state: max id $old_max, max segment values (inv strided adaptive) $old_seg_max"

# the ongoing generator (15: the same server throughout): one INSERT per transaction, counted
STREAM_DONE=$TMP/stream.stop
if [ "$MAJOR" = 15 ]; then
    (
        i=0
        while [ ! -e "$STREAM_DONE" ]; do
            if db "$OLD" "INSERT INTO stream (n) VALUES ($((i + 1)))" >/dev/null 2>&1; then i=$((i + 1)); fi
        done
    ) &
    BG_PIDS+=($!)
    STREAM_PID=$!
    for _ in $(seq 1 300); do [ "$(db "$OLD" "SELECT count(*) FROM stream")" -ge 50 ] && break; sleep 0.1; done
fi

# ---------------------------------------------------------------- 2. the new library
if [ "$MAJOR" = 15 ]; then
    restore_new
    "$CLUSTER" restart "$OLD" "${OPTS[@]}" >/dev/null 2>&1
else
    strip_pg_attver "$OLD" "$MAJOR"
    "$CLUSTER" stop "$OLD" fast >/dev/null
    restore_new   # PostgreSQL 15 has the new library again; MAJOR has only the new one
    use "$MAJOR"
    register_cluster "$NEW"
    INITDB_OPTS=$([ "$MAJOR" -ge 18 ] && echo --no-data-checksums || true) "$CLUSTER" init "$NEW" >/dev/null
    run_pg_upgrade 15 "$MAJOR" "$OLD" "$NEW" || finish
    cluster_start "$NEW" 28994 "${OPTS[@]}"
fi
check "new server: PostgreSQL major" "$(q "$NEW" "SHOW server_version_num" | cut -c1-2)" -eq "$MAJOR"
check "before the update: the database still has $OLD_VERSION" "$(db "$NEW" "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$OLD_VERSION"

# ---------------------------------------------------------------- 3. mismatch: clear errors, no crash
started=$(q "$NEW" "SELECT pg_postmaster_start_time()")
calls=(
    "SELECT snowflake_next()" "SELECT count(*) FROM snowflake_stats()" "SELECT * FROM snowflake_layout()"
    "SELECT * FROM snowflake_worker()" "SELECT * FROM uid_decode($old_max)" "SELECT * FROM uid_decode($old_max, 'legacy')"
    "SELECT * FROM uid_decode($old_max, 'twitter')" "SELECT uid_compose(now(), 7, 1)" "SELECT uid_compose(now(), 7, 1, 'legacy')"
    "SELECT snowflake_at(now())" "SELECT snowflake_at(now(), 7, 'legacy')" "SELECT count(*) FROM uid_layouts()"
    "SELECT segment_next('inv')" "SELECT count(*) FROM segment_status" "SELECT count(*) FROM segment_persisted()"
    "SELECT count(*) FROM segment_status_shmem()" "SELECT segment_create('mismatch', 10)" "SELECT segment_set('inv', 1000000)"
    "SELECT segment_drop('strided')" "SELECT uid_layout_register('mismatch', now(), 41, 10, 12)"
    "SELECT uid_layout_drop('legacy')" "SELECT set_worker_id(7)" "SELECT snowflake_accept_layout()"
    "BEGIN; SELECT clear_worker_id(); ROLLBACK"
    "INSERT INTO orders (n) VALUES (-1)" "UPDATE pg_idgen_layouts SET unit_ms = unit_ms WHERE name = 'legacy'"
)
worked=0 refused=0 other=() worked_calls=()
for c in "${calls[@]}"; do
    out=$(db "$NEW" '\set VERBOSITY verbose' "$c" 2>&1) && { worked=$((worked + 1)); worked_calls+=("$c"); continue; }
    if [[ $out =~ ERROR:\ +55000:\ pg_idgen\ $OLD_VERSION\ is\ installed\ in\ this\ database,\ but\ the\ loaded\ library\ is\ $NEW_VERSION ]] \
        && [[ $out =~ HINT:\ +Run\ ALTER\ EXTENSION\ pg_idgen\ UPDATE ]]; then
        refused=$((refused + 1))
    else
        other+=("$c => $(grep -m1 ERROR <<<"$out")")
    fi
done
log "before the update: ${#calls[@]} calls of 0.1.0's functions: $worked worked, $refused refused with the version-mismatch error"
log "worked: $(printf '[%s] ' "${worked_calls[@]}")"
check "before the update: every call works or gives the version-mismatch error" "${#other[@]}" -eq 0
[ ${#other[@]} -eq 0 ] || printf '    %s\n' "${other[@]}"
check "before the update: the functions that read the extension's tables refuse" "$refused" -ge 10
check "before the update: the server did not restart (no crash)" "$(q "$NEW" "SELECT pg_postmaster_start_time()")" == "$started"
check "before the update: no backend terminated by a signal" \
    "$(grep -c 'terminated by signal' "$("$CLUSTER" pgdata "$NEW")/log/postgresql.log" || true)" -eq 0
check "the mismatch changed nothing: tags as before" "$(db "$NEW" "$tags_sql")" == "$old_tags"

# ---------------------------------------------------------------- 4. ALTER EXTENSION UPDATE
if out=$(db "$NEW" "ALTER EXTENSION pg_idgen UPDATE" 2>&1); then ok "ALTER EXTENSION pg_idgen UPDATE: $out"; else ko "ALTER EXTENSION pg_idgen UPDATE: $out"; finish; fi
hostile_after_update "$NEW" "after the update from $OLD_VERSION"
check "after the update: version" "$(db "$NEW" "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$NEW_VERSION"
expect_sql_error "$NEW" 0A000 "needs a UTF8 database" "\\c ascii" "ALTER EXTENSION pg_idgen UPDATE"
check "a SQL_ASCII database stays at $OLD_VERSION" "$(qdb "$NEW" ascii "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$OLD_VERSION"
expect_sql_error "$NEW" 22023 "segment tags 'e' \\(not_a_sequence\\) are not backed by a pg_idgen_seg_<n> sequence" "\\c edited" "ALTER EXTENSION pg_idgen UPDATE"
expect_sql_error "$NEW" 2BP01 "replaces uid_decode .*these objects use it: view decoded" "\\c viewdb" "ALTER EXTENSION pg_idgen UPDATE"
check "a view using uid_decode: dropped, update, created again (the same row)" \
    "$(qdb "$NEW" viewdb "SET client_min_messages = warning" "DROP VIEW decoded" "ALTER EXTENSION pg_idgen UPDATE" \
        "CREATE VIEW decoded AS SELECT d.ts, d.worker_id FROM uid_decode(117809695279812608) d" \
        "SELECT extversion || ' ' || (SELECT worker_id FROM decoded) FROM pg_extension WHERE extname = 'pg_idgen'" | tail -1)" == "$NEW_VERSION 1"
out=$(qdb "$NEW" dangling "ALTER EXTENSION pg_idgen UPDATE" 2>&1) || true
check_match "a tag whose sequence was dropped by hand: the update warns, naming it" "$out" 'WARNING: +pg_idgen: the backing sequence \(OID [0-9]+\) of segment tag "b" does not exist'
check "... and the update is done, the other tag linked" \
    "$(qdb "$NEW" dangling "SELECT extversion || ' ' || (SELECT count(*) FROM pg_depend d JOIN pg_idgen_segments s ON d.objid = s.seq
                              WHERE d.classid = 'pg_class'::regclass AND d.refobjid = 'pg_idgen_segments'::regclass AND d.deptype = 'a')
                            FROM pg_extension WHERE extname = 'pg_idgen'")" == "$NEW_VERSION 1"
check_like_fresh "$NEW" app "updated database has exactly the objects of a fresh $NEW_VERSION install"
if [ "$MAJOR" != 15 ]; then
    # pg_upgrade gives the cluster a new system identifier: the worker id must be confirmed
    expect_sql_error "$NEW" 55000 "set on another cluster" "\\c app" "SELECT snowflake_next()"
    db "$NEW" "SELECT set_worker_id(7)" >/dev/null
fi
check "the worker id row kept (7)" "$(db "$NEW" "SELECT worker_id FROM pg_idgen_worker")" -eq 7
check "the custom layout kept: old ids decode as before" \
    "$(db "$NEW" "SELECT md5(string_agg(format('%s %s', d.ts, d.worker_id), ',' ORDER BY o.id)) FROM orders o, uid_decode(o.id, 'legacy') d")" == "$old_decode"
check "the tags' settings kept" "$(db "$NEW" "$tags_sql")" == "$old_tags"
owned_sql="SELECT count(*) FROM pg_idgen_segments s JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.seq
           AND d.refobjid = 'pg_idgen_segments'::regclass AND d.deptype = 'a'"
check "the 3 tags' sequences are owned by pg_idgen_segments.seq" "$(db "$NEW" "$owned_sql")" -eq 3
if [ "$MAJOR" = 15 ]; then
    for _ in $(seq 1 300); do [ "$(db "$NEW" "SELECT count(*) FROM stream WHERE id > (SELECT max(id) FROM orders)")" -ge 50 ] && break; sleep 0.1; done
    touch "$STREAM_DONE"; wait "$STREAM_PID" 2>/dev/null || true
    check "the client's rows increase with their number across restart and update (rows: $(db "$NEW" "SELECT count(*) FROM stream"))" \
        "$(db "$NEW" "SELECT count(*) FROM (SELECT id < lag(id) OVER (ORDER BY n) AS down FROM stream) s WHERE down")" -eq 0
    check "the client inserted after the update" "$(db "$NEW" "SELECT count(*) FROM stream WHERE id > (SELECT max(id) FROM orders)")" -ge 50
fi
db "$NEW" "INSERT INTO orders (n) SELECT 5000 + g FROM generate_series(1, 5000) g" \
    "INSERT INTO invoices (n) SELECT 1000 + g FROM generate_series(1, 1000) g" \
    "INSERT INTO strided (n) SELECT 1000 + g FROM generate_series(1, 1000) g" \
    "INSERT INTO adaptive (n) SELECT 1000 + g FROM generate_series(1, 1000) g" >/dev/null
check "new ids: above every old id, worker 7" \
    "$(db "$NEW" "SELECT count(*) FROM orders o, uid_decode(o.id) d WHERE o.n > 5000 AND o.id > $old_max AND d.worker_id = 7")" -eq 5000
read -r inv_max str_max ada_max <<<"$old_seg_max"
check "new segment values above the old ones (inv, strided, adaptive)" \
    "$(db "$NEW" "SELECT (SELECT min(no) FROM invoices WHERE n > 1000) > $inv_max AND (SELECT min(no) FROM strided WHERE n > 1000) > $str_max AND (SELECT min(no) FROM adaptive WHERE n > 1000) > $ada_max")" == t
check "the stride kept: every strided value in node 1's chunks of 50" \
    "$(db "$NEW" "SELECT count(*) FROM strided WHERE ((no - 1) / 50) % 2 <> 1")" -eq 0
check "no value twice" "$(db "$NEW" "SELECT (SELECT count(DISTINCT no) FROM invoices) + (SELECT count(DISTINCT no) FROM strided) + (SELECT count(DISTINCT no) FROM adaptive)")" -eq 6000

# ---------------------------------------------------------------- 5. pg_dump / pg_restore
S=$("$CLUSTER" sockdir "$NEW") P=$("$CLUSTER" port "$NEW")
hwm_sql="SELECT string_agg(tag || '=' || persisted_hwm, ' ' ORDER BY tag) FROM segment_status"
hwm=$(db "$NEW" "$hwm_sql")
mkdir -p "$TMP/dump" && chown postgres "$TMP/dump"
runuser -u postgres -- "$PGBIN/pg_dump" -h "$S" -p "$P" -U postgres -Fc -f "$TMP/dump/app.dump" app
q "$NEW" "CREATE DATABASE restored" >/dev/null
if out=$(runuser -u postgres -- "$PGBIN/pg_restore" -h "$S" -p "$P" -U postgres -d restored "$TMP/dump/app.dump" 2>&1); then ok "pg_restore of the updated database"; else ko "pg_restore: $out"; fi
check_like_fresh "$NEW" restored "restored database: the objects of a fresh install"
r() { qdb "$NEW" restored "$@"; }
check "restored: rows" "$(r "SELECT (SELECT count(*) FROM orders) || ' ' || (SELECT count(*) FROM invoices) || ' ' || (SELECT count(*) FROM strided)")" == "10000 2000 2000"
check "restored: the tags' high-water marks (sequence values dumped)" "$(r "$hwm_sql")" == "$hwm"
check "restored: the sequences are linked to pg_idgen_segments.seq again" "$(r "$owned_sql")" -eq 3
check "restored: segment values continue above" \
    "$(r "SELECT segment_next('inv') > (SELECT max(no) FROM invoices) AND segment_next('strided') > (SELECT max(no) FROM strided)")" == t
expect_sql_error "$NEW" 2BP01 "other objects depend on it" "\\c restored" "DROP EXTENSION pg_idgen"
r "SET client_min_messages = warning" "DROP EXTENSION pg_idgen CASCADE" >/dev/null
check "DROP EXTENSION ... CASCADE: no pg_idgen relation left (tables, sequences, view)" \
    "$(r "SELECT count(*) FROM pg_class WHERE relname LIKE 'pg\_idgen%' OR relname IN ('segment_status', 'uid_mask_keys')")" -eq 0
check "DROP EXTENSION ... CASCADE: no function, type or trigger left" \
    "$(r "SELECT (SELECT count(*) FROM pg_proc WHERE proname ~ '^(pg_idgen|uid_|snowflake_|segment_)') + (SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'pg\_idgen%') + (SELECT count(*) FROM pg_type WHERE typname LIKE 'pg\_idgen%')")" -eq 0
check "DROP EXTENSION ... CASCADE: the tables' DEFAULTs went with it, the rows stayed" \
    "$(r "SELECT count(*) FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid WHERE c.relname IN ('orders', 'invoices')") $(r "SELECT count(*) FROM orders")" == "0 10000"
finish
