#!/usr/bin/env bash
# security/008_worker_id_where_citus_loaded — where Citus is in shared_preload_libraries, a worker
# id stored for a database or a role (pg_db_role_setting) is never applied: Citus propagates
# ALTER DATABASE / ALTER ROLE ... SET from the coordinator to every node, so every node would
# generate with one worker id. That includes ALTER ROLE ALL SET (stored with database 0 and role 0,
# applied at connection as the source "global"): a value stored before Citus was loaded is not
# applied (WARNING at connection), as a database- or a role-level one is not. Without Citus the
# same settings still apply as before (ALTER ROLE r SET gives the role's sessions its worker id).
#
# Citus itself is not needed for what pg_idgen checks (whether a library named citus is
# preloaded): a library of that name with nothing but the module magic stands in for it, built
# with the server's headers (cc). tests/citus/run.sh checks the same with Citus on 18.
# One cluster on port 29103 (+ IT_PORT_OFFSET), pg_idgen.worker_id = 3 on the command line.
set -euo pipefail
. "$(dirname "$0")/../lib.bash"

C=it_citus_wid
STUB=$TMP/stub
mkdir -p "$STUB"
printf '#include "postgres.h"\n#include "fmgr.h"\nPG_MODULE_MAGIC;\n' >"$STUB/citus.c"
cc -shared -fPIC -I"$("$("$CLUSTER" pgconfig)" --includedir-server)" -o "$STUB/citus.so" "$STUB/citus.c"
chmod 755 "$TMP" "$STUB"; chmod 644 "$STUB/citus.so"

# ---- without Citus: database-, role- and ALTER ROLE ALL-level worker ids apply ---------------
cluster_start "$C" 29103 -c pg_idgen.worker_id=3
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE ROLE r1 LOGIN" \
    "CREATE DATABASE d2" "ALTER ROLE r1 SET pg_idgen.worker_id = 9" >/dev/null
check "control without Citus: ALTER ROLE r1 SET pg_idgen.worker_id = 9 applies to r1's sessions" \
    "$("$CLUSTER" psql "$C" -At -U r1 -c "SELECT setting || ' ' || source FROM pg_settings WHERE name = 'pg_idgen.worker_id'")" == "9 user"
q "$C" "ALTER ROLE r1 RESET pg_idgen.worker_id" "ALTER ROLE ALL SET pg_idgen.worker_id = 7" \
    "ALTER DATABASE d2 SET pg_idgen.worker_id = 8" >/dev/null
check "control without Citus: ALTER ROLE ALL SET pg_idgen.worker_id = 7 applies (source global)" \
    "$(q "$C" "SELECT setting || ' ' || source FROM pg_settings WHERE name = 'pg_idgen.worker_id'")" == "7 global"
check "control without Citus: ALTER DATABASE d2 SET pg_idgen.worker_id = 8 applies in d2" \
    "$(qdb "$C" d2 "SELECT setting || ' ' || source FROM pg_settings WHERE name = 'pg_idgen.worker_id'")" == "8 database"

# ---- Citus preloaded: the stored values stay, none is applied -------------------------------
"$CLUSTER" restart "$C" -c pg_idgen.worker_id=3 -c "shared_preload_libraries=$STUB/citus.so,pg_idgen" >/dev/null 2>&1
check "a library named citus is preloaded" \
    "$(q "$C" "SHOW shared_preload_libraries" 2>/dev/null)" == "$STUB/citus.so,pg_idgen"
out=$(q "$C" "SELECT setting || ' ' || source FROM pg_settings WHERE name = 'pg_idgen.worker_id'" 2>&1)
check_match "a stored ALTER ROLE ALL SET pg_idgen.worker_id = 7: WARNING at connection, the node keeps its own worker id 3" \
    "$out" "WARNING:.*pg_idgen.worker_id cannot be set for a database or a role.*"$'\n'"3 command line\$"
check "snowflake ids of the node carry its own worker id 3, not the stored 7" \
    "$(q "$C" "SELECT worker_id FROM snowflake_worker()" 2>/dev/null)" -eq 3
out=$(qdb "$C" d2 "SELECT setting || ' ' || source FROM pg_settings WHERE name = 'pg_idgen.worker_id'" 2>&1)
check_match "a stored ALTER DATABASE d2 SET pg_idgen.worker_id = 8: WARNING at connection, worker id 3" \
    "$out" "WARNING:.*pg_idgen.worker_id cannot be set for a database or a role.*"$'\n'"3 command line\$"
q "$C" "ALTER ROLE ALL RESET pg_idgen.worker_id" "ALTER DATABASE d2 RESET pg_idgen.worker_id" >/dev/null 2>&1
expect_sql_error "$C" 22023 'where Citus is loaded' "ALTER ROLE ALL SET pg_idgen.worker_id = 7"
expect_sql_error "$C" 22023 'where Citus is loaded' "ALTER ROLE r1 SET pg_idgen.worker_id = 9"
expect_sql_error "$C" 22023 'where Citus is loaded' "ALTER DATABASE d2 SET pg_idgen.worker_id = 8"
check "nothing of the refused settings was stored" \
    "$(q "$C" "SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ',') ~ 'pg_idgen'")" -eq 0
check "ALTER SYSTEM SET pg_idgen.worker_id (the node's own postgresql.auto.conf) is still accepted" \
    "$(q "$C" "ALTER SYSTEM SET pg_idgen.worker_id = 4" "ALTER SYSTEM RESET pg_idgen.worker_id" "SELECT 'ok'")" == ok

finish
