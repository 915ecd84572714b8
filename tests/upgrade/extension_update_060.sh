#!/usr/bin/env bash
# tests/upgrade/extension_update_060.sh MAJOR — ALTER EXTENSION pg_idgen UPDATE from 0.6.0 to this
# version on PostgreSQL MAJOR (part of `make test-extension-update PG=NN`, after the updates from
# 0.1.0 to 0.5.0).
#
# 0.6.0 is built from its git tag (v0.6.0; cached, see build_tagged in tests/upgrade/lib.bash) for
# MAJOR and installed in place of the test build:
#  1. PostgreSQL MAJOR with the 0.6.0 library, database app: the state of make_app_state, a keyed
#     space with values, a slotted tag, and a lease row in pg_idgen_leases.
#  2. The new library installed over 0.6.0, the server restarted. 0.6.0 was never built for
#     PostgreSQL 19 (its pgrx, 0.18, has no pg19): on 19 the 0.6.0 database is made on 18 and
#     brought to 19 by pg_upgrade, where only the new library exists, as it would come in the
#     field (pg_upgrade re-creates 0.6.0's C functions: every symbol they name must still be in
#     the library); the worker id is confirmed again there (a new system identifier).
#  3. Before the update: functions that read the extension's tables refuse with the version
#     mismatch (55000, with the ALTER EXTENSION hint); the server does not crash.
#  4. ALTER EXTENSION pg_idgen UPDATE: the objects equal a fresh install's
#     (tests/upgrade/objects.sql), the state kept, keyed values continue above the old, the
#     slotted tag above its old values in its own slots.
#  5. The availability guard (tests/security/availability.bash) with app, updated, as the registry:
#     no call a non-superuser may make, in an open transaction, makes another role's documented
#     operation wait (lock_timeout 300ms).
#  The same update in a database whose owner, an ordinary role, planted shadows before 0.6.0 was
#  installed there (tests/security/lib.bash): the audit finds nothing before or after it, and no
#  shadow runs when a superuser and that role call every function and read every view.
# At exit the test build is installed into PostgreSQL MAJOR again and 0.6.0's script removed.
set -euo pipefail
MAJOR=${1:-15}
. "$(dirname "$0")/../integration/lib.bash" "$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/tests/upgrade/lib.bash"
. "$ROOT/tests/security/lib.bash"
. "$ROOT/tests/security/availability.bash"
TEST_NAME=extension_update_060_pg$MAJOR
# the major 0.6.0 runs on: MAJOR, or 18 for a major its pgrx cannot build for
OLD_MAJOR=$MAJOR
[ "$MAJOR" -lt 19 ] || OLD_MAJOR=18
use "$OLD_MAJOR"
released_for v0.6.0 0.6.0 26a50b233ae8abe09fd4f25ba69551efb8ca265e "$OLD_MAJOR"   # the commit v0.6.0 names

C=eu060
db() { qdb "$C" app "$@"; }
OPTS=(-c pg_idgen.worker_id=-1)
LEASE_ROW="SELECT format('%s %s %s %s %s', worker_id, system_identifier, node_name, token, hwm_ms) FROM pg_idgen_leases ORDER BY worker_id"
KEYED_SQL="SELECT string_agg(format('%s:%s', k, keyed_last('chat', k)), ' ' ORDER BY k) FROM generate_series(1, 5) k"

# ---------------------------------------------------------------- 1. state made by 0.5.0
hostile_update_here && hostile_sites_of_new "${C}_sites" 28938
install_old
cluster_start "$C" 28937 "${OPTS[@]}"
q "$C" "CREATE DATABASE app" >/dev/null
make_app_state "$C"
hostile_before_update "$C" app
if hostile_update_here; then
    check_sql_binds_inside "$C" hostile "0.6.0 in mallory's database, before the update"
fi
db "SELECT keyed_create('chat', step => 1000)" \
   "SELECT keyed_next('chat', k) FROM generate_series(1, 5) k, generate_series(1, 3) r" \
   "SELECT segment_create('slotted', step => 10, slots => 4, owned => ARRAY[1, 3])" \
   "CREATE TABLE slotted (no bigint PRIMARY KEY DEFAULT segment_next('slotted'), n int NOT NULL)" \
   "INSERT INTO slotted (n) SELECT g FROM generate_series(1, 200) g" >/dev/null
check "old: extension version" "$(db "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$OLD_VERSION"
check "old: keyed values 3 per key" "$(db "$KEYED_SQL")" == "1:3 2:3 3:3 4:3 5:3"
db "INSERT INTO pg_idgen_leases (worker_id, system_identifier, node_name, host, port, token, since, renewed_at, lease_until, hwm_ms)
    VALUES (5, 7300000000000000001, 'node-a', '10.0.0.5', 5432, 42, now(), now(), now() + interval '10 s', 1700000000000)" >/dev/null
old_lease=$(db "$LEASE_ROW")
slotted_max=$(db "SELECT max(no) FROM slotted")
record_app_state "$C"

# ---------------------------------------------------------------- 2. the new library
if [ "$OLD_MAJOR" = "$MAJOR" ]; then
    switch_to_new_library "$C" "${OPTS[@]}"
else
    restore_new   # OLD_MAJOR has the new library again; MAJOR has only the new one
    "$CLUSTER" stop "$C" fast >/dev/null
    use "$MAJOR"
    register_cluster "${C}n"
    "$CLUSTER" init "${C}n" >/dev/null
    run_pg_upgrade "$OLD_MAJOR" "$MAJOR" "$C" "${C}n" || finish
    C=${C}n
    cluster_start "$C" 28936 "${OPTS[@]}"
    check "pg_upgrade $OLD_MAJOR -> $MAJOR: the server is $MAJOR, the database still has $OLD_VERSION" \
        "$(q "$C" "SHOW server_version_num" | cut -c1-2) $(db "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$MAJOR $OLD_VERSION"
    STARTED=$(q "$C" "SELECT pg_postmaster_start_time()")
fi

# ---------------------------------------------------------------- 3. mismatch: clear errors, no crash
check_version_mismatch "$C" app "before the update: snowflake_next() with the worker id in the table" "SELECT snowflake_next()"
check_version_mismatch "$C" app "before the update: segment_next()" "SELECT segment_next('inv')"
check_no_crash "$C" "before the update"

# ---------------------------------------------------------------- 4. ALTER EXTENSION UPDATE
update_app "$C"
if [ "$OLD_MAJOR" != "$MAJOR" ]; then
    # pg_upgrade gives the cluster a new system identifier: the worker id must be confirmed
    expect_sql_error "$C" 55000 "set on another cluster" "\\c app" "SELECT snowflake_next()"
    db "SELECT set_worker_id(9)" >/dev/null
fi
check "snowflake_worker(): worker 9 from the table, confirmed, lease off" \
    "$(db "SELECT format('%s %s %s %s', worker_id, source, confirmed, lease) FROM snowflake_worker()")" == "9 table t off"
check "the lease row kept" "$(db "$LEASE_ROW")" == "$old_lease"
check_app_state_kept "$C"
db "SELECT keyed_next('chat', k) FROM generate_series(1, 5) k" >/dev/null
check "keyed values continue above the old ones after a restart (each key > 3)" \
    "$(db "SELECT count(*) FROM generate_series(1, 5) k WHERE keyed_last('chat', k) > 3")" -eq 5
db "INSERT INTO slotted (n) SELECT 200 + g FROM generate_series(1, 200) g" >/dev/null
check "the slotted tag continues above its old values, in its own slots only" \
    "$(db "SELECT count(*) FROM slotted WHERE n > 200 AND no > $slotted_max")|$(db "SELECT count(*) FROM slotted WHERE ((no - 1) / 10) % 4 NOT IN (1, 3)")" == "200|0"
check_no_crash "$C" "after the update"

# ---------------------------------------------------------------- 5. availability guard
# app, updated, is the registry; vic a database beside it (tests/security/availability.bash)
q "$C" "CREATE DATABASE vic" >/dev/null
qdb "$C" vic "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "SELECT set_worker_id(7)" >/dev/null
avail_setup "$C" app vic
avail_guard "$C" app vic "after the update from 0.6.0"
finish
