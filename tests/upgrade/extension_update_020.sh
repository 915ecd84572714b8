#!/usr/bin/env bash
# tests/upgrade/extension_update_020.sh MAJOR — ALTER EXTENSION pg_idgen UPDATE from 0.2.0 to this
# version on PostgreSQL MAJOR (part of `make test-extension-update PG=NN`, after the update from
# 0.1.0 in extension_update.sh).
#
# 0.2.0 is built from its git tag (v0.2.0; cached, see build_tagged in tests/upgrade/lib.bash) for MAJOR — it
# supports 15-18 — and installed in place of the test build:
#
#  1. PostgreSQL MAJOR with the 0.2.0 library, database app: the worker id in the table
#     (set_worker_id(9)), a custom layout, a table with DEFAULT snowflake_next() (3,000 rows), two
#     segment tags (plain; nodes => 2 stride) with DEFAULT segment_next() tables, a mask key and the
#     masked form of every id; database viewdb: a view over snowflake_worker().
#  2. The new library installed over 0.2.0, the server restarted.
#  3. Before the update: 0.2.0's snowflake_worker() (its symbol is a shim now) and every function
#     that reads the extension's tables refuse with the version mismatch (55000, with the ALTER
#     EXTENSION hint); the server does not crash.
#  4. ALTER EXTENSION pg_idgen UPDATE — in viewdb refused (2BP01, the view named), done after the
#     view is dropped, the view created again; in app: the objects equal a fresh install's
#     (tests/upgrade/objects.sql); rows, worker id, layout, tags and mask key kept (the same masked
#     values); snowflake_worker() has its column lease ('off'), snowflake_lease() says 'off'; new
#     ids and segment values above every old one, none twice.
# The same update runs in a database whose owner, an ordinary role, planted shadows of every name
# the extension uses before the old version was installed there (tests/security/lib.bash): after
# it, the catalog audit finds nothing and no shadow runs when a superuser and that role call every
# function and read every view.
# At exit the test build is installed into PostgreSQL MAJOR again and 0.2.0's script removed.
set -euo pipefail
MAJOR=${1:-15}
. "$(dirname "$0")/../integration/lib.bash" "$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/tests/upgrade/lib.bash"
. "$ROOT/tests/security/lib.bash"
TEST_NAME=extension_update_020_pg$MAJOR
use "$MAJOR"
released_for v0.2.0 0.2.0 2b5590ab96c6d0c3f1cbeb950d7f94e3b865c09c "$MAJOR"   # the commit v0.2.0 names

C=eu020
db() { qdb "$C" app "${@:2}"; }
OPTS=(-c pg_idgen.worker_id=-1)

# ---------------------------------------------------------------- 1. state made by 0.2.0
hostile_update_here && hostile_sites_of_new "${C}_sites" 28960
install_old
cluster_start "$C" 28949 "${OPTS[@]}"
q "$C" "CREATE DATABASE app" "CREATE DATABASE viewdb" >/dev/null
make_app_state "$C"
hostile_before_update "$C" app
qdb "$C" viewdb "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" \
    "CREATE VIEW worker_source AS SELECT worker_id, source FROM snowflake_worker()" >/dev/null
check "old: extension version" "$(db "$C" "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$OLD_VERSION"
check "old: snowflake_worker() has four columns" \
    "$(db "$C" "SELECT array_length(proallargtypes, 1) FROM pg_proc WHERE proname = 'snowflake_worker'")" -eq 4
check "old: 3000 ids of worker 9" "$(db "$C" "SELECT count(*) FROM orders WHERE (uid_decode(id)).worker_id = 9")" -eq 3000
record_app_state "$C"

# ---------------------------------------------------------------- 2. the new library
switch_to_new_library "$C" "${OPTS[@]}"

# ---------------------------------------------------------------- 3. mismatch: clear errors, no crash
check_version_mismatch "$C" app "before the update: 0.2.0's snowflake_worker() (symbol snowflake_worker_wrapper, a shim)" "SELECT * FROM snowflake_worker()"
check_version_mismatch "$C" viewdb "before the update: the view over it" "SELECT * FROM worker_source"
check_version_mismatch "$C" app "before the update: snowflake_next() with the worker id in the table" "SELECT snowflake_next()"
check_version_mismatch "$C" app "before the update: segment_next()" "SELECT segment_next('inv')"
check_version_mismatch "$C" app "before the update: uid_mask() with a key" "SELECT uid_mask(1, 'public')"
check "before the update: a built-in layout still decodes" "$(db "$C" "SELECT (uid_decode(117809695279812608, 'twitter')).worker_id")" -ge 0
check_no_crash "$C" "before the update"

# ---------------------------------------------------------------- 4. ALTER EXTENSION UPDATE
expect_sql_error "$C" 2BP01 "replaces snowflake_worker\\(\\) .*these objects use it: view worker_source" "\\c viewdb" "ALTER EXTENSION pg_idgen UPDATE"
check "the refused update left viewdb at $OLD_VERSION" "$(qdb "$C" viewdb "SELECT extversion FROM pg_extension WHERE extname = 'pg_idgen'")" == "$OLD_VERSION"
check "the view dropped, the update done, the view created again (source NULL, lease off)" \
    "$(qdb "$C" viewdb "SET client_min_messages = warning" "DROP VIEW worker_source" "ALTER EXTENSION pg_idgen UPDATE" \
        "CREATE VIEW worker_source AS SELECT worker_id, source, lease FROM snowflake_worker()" \
        "SELECT extversion || ' ' || (SELECT coalesce(source, 'none') || ' ' || lease FROM worker_source) FROM pg_extension WHERE extname = 'pg_idgen'" | tail -1)" \
    == "$NEW_VERSION none off"
update_app "$C"
check "the lease objects are there: pg_idgen_leases (empty), snowflake_lease() off" \
    "$(db "$C" "SELECT (SELECT count(*) FROM pg_idgen_leases) || ' ' || (SELECT mode FROM snowflake_lease())")" == "0 off"
check "snowflake_worker(): worker 9 from the table, confirmed, lease off" \
    "$(db "$C" "SELECT format('%s %s %s %s', worker_id, source, confirmed, lease) FROM snowflake_worker()")" == "9 table t off"
check_app_state_kept "$C"
check_no_crash "$C" "after the update"
finish
