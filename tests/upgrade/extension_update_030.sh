#!/usr/bin/env bash
# tests/upgrade/extension_update_030.sh MAJOR — ALTER EXTENSION pg_idgen UPDATE from 0.3.0 to this
# version on PostgreSQL MAJOR (part of `make test-extension-update PG=NN`, after the updates from
# 0.1.0 and 0.2.0).
#
# 0.3.0 is built from its git tag (v0.3.0; cached, see build_tagged in tests/upgrade/lib.bash) for
# MAJOR and installed in place of the test build:
#  1. PostgreSQL MAJOR with the 0.3.0 library, database app: the state of make_app_state (worker id
#     in the table, a custom layout, DEFAULT snowflake_next() and segment_next() tables, a stride,
#     a mask key and the masked form of every id), and a lease row in pg_idgen_leases (the table
#     of a registry).
#  2. The new library installed over 0.3.0, the server restarted.
#  3. Before the update: every function that reads the extension's tables refuses with the version
#     mismatch (55000, with the ALTER EXTENSION hint); the server does not crash.
#  4. ALTER EXTENSION pg_idgen UPDATE: the objects equal a fresh install's
#     (tests/upgrade/objects.sql); the state kept (check_app_state_kept), the lease row kept.
# The same update runs in a database whose owner, an ordinary role, planted shadows of every name
# the extension uses before the old version was installed there (tests/security/lib.bash): after
# it, the catalog audit finds nothing and no shadow runs when a superuser and that role call every
# function and read every view.
# At exit the test build is installed into PostgreSQL MAJOR again and 0.3.0's script removed.
set -euo pipefail
MAJOR=${1:-15}
. "$(dirname "$0")/../integration/lib.bash" "$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/tests/upgrade/lib.bash"
. "$ROOT/tests/security/lib.bash"
TEST_NAME=extension_update_030_pg$MAJOR
use "$MAJOR"
released_for v0.3.0 0.3.0 ec0314fa6fc4b89f40363d5027fd58f6bae67f81 "$MAJOR"   # the commit v0.3.0 names

C=eu030
db() { qdb "$C" app "$@"; }
OPTS=(-c pg_idgen.worker_id=-1)
LEASE_ROW="SELECT format('%s %s %s %s %s', worker_id, system_identifier, node_name, token, hwm_ms) FROM pg_idgen_leases ORDER BY worker_id"

# ---------------------------------------------------------------- 1. state made by 0.3.0
hostile_update_here && hostile_sites_of_new "${C}_sites" 28959
install_old
cluster_start "$C" 28950 "${OPTS[@]}"
q "$C" "CREATE DATABASE app" >/dev/null
make_app_state "$C"
hostile_before_update "$C" app
check "old: extension version" "$(db "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$OLD_VERSION"
check "old: 3000 ids of worker 9" "$(db "SELECT count(*) FROM orders WHERE (uid_decode(id)).worker_id = 9")" -eq 3000
db "INSERT INTO pg_idgen_leases (worker_id, system_identifier, node_name, host, port, token, since, renewed_at, lease_until, hwm_ms)
    VALUES (5, 7300000000000000001, 'node-a', '10.0.0.5', 5432, 42, now(), now(), now() + interval '10 s', 1700000000000)" >/dev/null
old_lease=$(db "$LEASE_ROW")
record_app_state "$C"

# ---------------------------------------------------------------- 2. the new library
switch_to_new_library "$C" "${OPTS[@]}"

# ---------------------------------------------------------------- 3. mismatch: clear errors, no crash
check_version_mismatch "$C" app "before the update: snowflake_next() with the worker id in the table" "SELECT snowflake_next()"
check_version_mismatch "$C" app "before the update: segment_next()" "SELECT segment_next('inv')"
check_version_mismatch "$C" app "before the update: uid_mask() with a key" "SELECT uid_mask(1, 'public')"
check_no_crash "$C" "before the update"

# ---------------------------------------------------------------- 4. ALTER EXTENSION UPDATE
update_app "$C"
check "snowflake_worker(): worker 9 from the table, confirmed, lease off" \
    "$(db "SELECT format('%s %s %s %s', worker_id, source, confirmed, lease) FROM snowflake_worker()")" == "9 table t off"
check "the lease row kept" "$(db "$LEASE_ROW")" == "$old_lease"
check_app_state_kept "$C"
check "the strided tag (nodes => 2, node_index => 1) is slot 1 of 2 stride slots, owned" \
    "$(db "SELECT format('%s %s %s', slot, slots, owned) FROM segment_slot_status WHERE tag = 'strided'")|$(db "SELECT owned_slots FROM segment_status WHERE tag = 'strided'")" == "1 2 t|{1}"
check_no_crash "$C" "after the update"
finish
