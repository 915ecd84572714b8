#!/usr/bin/env bash
# security/008_worker_id_where_citus_loaded — where Citus is in shared_preload_libraries, a node's
# worker id comes only from its own postgresql.conf (or command line, ALTER SYSTEM) or from its
# Citus group: Citus carries settings made on one node to the others, where one worker id would
# then generate on every node. Every source a check hook of pg_idgen.worker_id sees:
#  * at connection, a value stored in pg_db_role_setting — ALTER ROLE ALL SET (source global),
#    ALTER DATABASE SET (database), ALTER ROLE SET (user), ALTER ROLE IN DATABASE SET
#    (database_user), stored before Citus was loaded: not applied, a WARNING whose HINT says what
#    to RESET, and the node keeps generating with its own worker id;
#  * ALTER DATABASE / ALTER ROLE [ALL] [IN DATABASE] ... SET (the validation, source test) while
#    Citus propagates DDL (citus.enable_ddl_propagation on, its default): refused (22023);
#  * the same with citus.enable_ddl_propagation off, as Citus sends the coordinator's stored
#    settings to a node it adds or activates (ALTER ROLE ALL [IN DATABASE d] SET, ALTER ROLE r
#    SET): accepted with a WARNING (stored on this node only, not applied) — refusing them made
#    citus_add_node and citus_activate_node fail;
#  * a session's SET, SET LOCAL, set_config() (source session) and a client's connection option
#    (source client): refused (22023) — Citus sends SET LOCAL to every worker a transaction reaches
#    (citus.propagate_set_commands = 'local'), which would generate with one worker id;
#  * ALTER SYSTEM (the node's own postgresql.auto.conf): accepted.
# Controls without Citus: role-, database-, role-in-database- and ALTER ROLE ALL-level worker ids
# apply, and so does a session's SET.
#
# Citus itself is not needed for what pg_idgen checks (whether a library named citus is
# preloaded, and Citus's setting citus.enable_ddl_propagation, here a placeholder): a library of
# that name with nothing but the module magic stands in for it, built with the server's headers
# (cc). tests/citus/run.sh checks the same with a Citus installation when one is given.
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
q "$C" "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" "CREATE ROLE r1 LOGIN" "CREATE ROLE r2 LOGIN" \
    "CREATE DATABASE d2" "ALTER ROLE r1 SET pg_idgen.worker_id = 9" >/dev/null
qdb "$C" d2 "SET client_min_messages = warning" "CREATE EXTENSION pg_idgen" >/dev/null
wid() {   # wid DB [psql options]: this connection's pg_idgen.worker_id and its source (stderr too)
    local db=$1; shift
    PGDATABASE=$db "$CLUSTER" psql "$C" -At "$@" -c "SELECT setting || ' ' || source FROM pg_settings WHERE name = 'pg_idgen.worker_id'" 2>&1
}
check "control without Citus: ALTER ROLE r1 SET pg_idgen.worker_id = 9 applies to r1's sessions" \
    "$(wid postgres -U r1)" == "9 user"
q "$C" "ALTER ROLE r1 RESET pg_idgen.worker_id" "ALTER ROLE ALL SET pg_idgen.worker_id = 7" \
    "ALTER DATABASE d2 SET pg_idgen.worker_id = 8" "ALTER ROLE r2 SET pg_idgen.worker_id = 9" \
    "ALTER ROLE r1 IN DATABASE d2 SET pg_idgen.worker_id = 10" >/dev/null
check "control without Citus: ALTER ROLE ALL SET pg_idgen.worker_id = 7 applies (source global)" \
    "$(wid postgres)" == "7 global"
check "control without Citus: ALTER DATABASE d2 SET pg_idgen.worker_id = 8 applies in d2" \
    "$(wid d2)" == "8 database"
check "control without Citus: ALTER ROLE r2 SET pg_idgen.worker_id = 9 applies to r2 (source user)" \
    "$(wid postgres -U r2)" == "9 user"
check "control without Citus: ALTER ROLE r1 IN DATABASE d2 SET pg_idgen.worker_id = 10 applies (source database_user)" \
    "$(wid d2 -U r1)" == "10 database user"
check "control without Citus: a session's SET pg_idgen.worker_id = 5 gives ids of worker id 5" \
    "$(q "$C" "SET pg_idgen.worker_id = 5" "SELECT (uid_decode(snowflake_next())).worker_id" 2>&1)" == 5

# ---- Citus preloaded: the stored values stay, none is applied -------------------------------
"$CLUSTER" restart "$C" -c pg_idgen.worker_id=3 -c "shared_preload_libraries=$STUB/citus.so,pg_idgen" >/dev/null 2>&1
check "a library named citus is preloaded" \
    "$(q "$C" "SHOW shared_preload_libraries" 2>/dev/null)" == "$STUB/citus.so,pg_idgen"
STORED_RE="WARNING:.*pg_idgen.worker_id cannot be set for a database or a role.*HINT:.*ALTER DATABASE name RESET pg_idgen.worker_id.*ALTER ROLE ALL .*RESET pg_idgen.worker_id"
check_match "a stored ALTER ROLE ALL SET pg_idgen.worker_id = 7: WARNING at connection with the RESET to run, the node keeps its own worker id 3" \
    "$(wid postgres)" "$STORED_RE.*"$'\n'"3 command line\$"
check "snowflake ids of the node carry its own worker id 3, not the stored 7" \
    "$(q "$C" "SELECT worker_id FROM snowflake_worker()" 2>/dev/null)" -eq 3
check_match "a stored ALTER DATABASE d2 SET pg_idgen.worker_id = 8: WARNING at connection with the RESET to run, worker id 3" \
    "$(wid d2)" "$STORED_RE.*"$'\n'"3 command line\$"
check_match "a stored ALTER ROLE r2 SET pg_idgen.worker_id = 9 (source user): WARNING at connection, worker id 3" \
    "$(wid postgres -U r2)" "$STORED_RE.*"$'\n'"3 command line\$"
check_match "a stored ALTER ROLE r1 IN DATABASE d2 SET pg_idgen.worker_id = 10 (source database_user): WARNING at connection, worker id 3" \
    "$(wid d2 -U r1)" "$STORED_RE.*"$'\n'"3 command line\$"
check "with every level stored, snowflake_next() in d2 gives ids of the node's worker id 3" \
    "$(qdb "$C" d2 "SELECT (uid_decode(snowflake_next())).worker_id" 2>/dev/null)" -eq 3
q "$C" "ALTER ROLE ALL RESET pg_idgen.worker_id" "ALTER DATABASE d2 RESET pg_idgen.worker_id" \
    "ALTER ROLE r2 RESET pg_idgen.worker_id" "ALTER ROLE r1 IN DATABASE d2 RESET pg_idgen.worker_id" >/dev/null 2>&1
check "the RESETs of the HINT remove every stored worker id" \
    "$(q "$C" "SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ',') ~ 'pg_idgen'")" -eq 0

# ALTER ... SET while Citus would propagate it (citus.enable_ddl_propagation on, its default)
expect_sql_error "$C" 22023 'where Citus is loaded' "ALTER ROLE ALL SET pg_idgen.worker_id = 7"
expect_sql_error "$C" 22023 'where Citus is loaded' "ALTER ROLE r1 SET pg_idgen.worker_id = 9"
expect_sql_error "$C" 22023 'where Citus is loaded' "ALTER DATABASE d2 SET pg_idgen.worker_id = 8"
expect_sql_error "$C" 22023 'where Citus is loaded' "SET citus.enable_ddl_propagation = on" "ALTER ROLE r1 IN DATABASE d2 SET pg_idgen.worker_id = 10"
check "nothing of the refused settings was stored" \
    "$(q "$C" "SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ',') ~ 'pg_idgen'")" -eq 0

# the commands Citus sends to a node it adds or activates, with DDL propagation off: stored with a
# WARNING, the node keeps working with its own worker id
REPLAY=("SET citus.enable_ddl_propagation TO 'off'" "ALTER ROLE ALL SET pg_idgen.worker_id = 7"
        "ALTER ROLE ALL IN DATABASE d2 SET pg_idgen.worker_id = 8" "ALTER ROLE r2 SET pg_idgen.worker_id = 9"
        "ALTER DATABASE postgres SET pg_idgen.worker_id = 11" "SET citus.enable_ddl_propagation TO 'on'" "SELECT 'replayed'")
out=$(q "$C" "${REPLAY[@]}" 2>&1) || true
check "Citus's replay (ALTER ROLE ALL [IN DATABASE] SET, ALTER ROLE r SET, ALTER DATABASE SET with citus.enable_ddl_propagation off): no ERROR" \
    "$(grep -c 'ERROR:' <<<"$out")" -eq 0
check "each replayed worker id was accepted with a WARNING that it is stored on this node only and not applied" \
    "$(grep -c 'WARNING:.*stored on this node only.*not applied where Citus is loaded' <<<"$out")" -eq 4
check "the replayed values are stored (as Citus stores them on the node it activates)" \
    "$(q "$C" "SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ',') ~ 'pg_idgen.worker_id'")" -eq 4
check_match "after the replay: WARNING at connection, the node keeps its own worker id 3 (postgres)" \
    "$(wid postgres)" "$STORED_RE.*"$'\n'"3 command line\$"
check_match "after the replay: WARNING at connection, the node keeps its own worker id 3 (d2, role r2)" \
    "$(wid d2 -U r2)" "$STORED_RE.*"$'\n'"3 command line\$"
check "after the replay, snowflake_next() gives ids of worker id 3 in both databases" \
    "$(q "$C" "SELECT (uid_decode(snowflake_next())).worker_id" 2>/dev/null) $(qdb "$C" d2 "SELECT (uid_decode(snowflake_next())).worker_id" 2>/dev/null)" == "3 3"
q "$C" "ALTER ROLE ALL RESET pg_idgen.worker_id" "ALTER ROLE ALL IN DATABASE d2 RESET pg_idgen.worker_id" \
    "ALTER ROLE r2 RESET pg_idgen.worker_id" "ALTER DATABASE postgres RESET pg_idgen.worker_id" >/dev/null 2>&1

# a session's worker id: SET, SET LOCAL (what citus.propagate_set_commands = 'local' sends to every
# worker of the transaction), set_config(), a connection option
expect_sql_error "$C" 22023 'cannot be set in a session where Citus is loaded' "SET pg_idgen.worker_id = 7"
expect_sql_error "$C" 22023 'cannot be set in a session where Citus is loaded.*propagate_set_commands' \
    "SET citus.propagate_set_commands = 'local'" "BEGIN" "SET LOCAL pg_idgen.worker_id = 7"
expect_sql_error "$C" 22023 'cannot be set in a session where Citus is loaded' "SELECT set_config('pg_idgen.worker_id', '7', true)"
out=$(PGOPTIONS="-c pg_idgen.worker_id=7" q "$C" "SELECT 'connected'" 2>&1) || true
check_match "a connection option -c pg_idgen.worker_id=7 is refused (the connection fails, saying why)" \
    "$out" "FATAL:.*pg_idgen.worker_id cannot be set in a session where Citus is loaded"
check "after the refused SET LOCAL, the transaction's ids carry the node's worker id 3" \
    "$(q "$C" "BEGIN" "SELECT (uid_decode(snowflake_next())).worker_id" "COMMIT" 2>/dev/null | grep -Ev '^(BEGIN|COMMIT)$')" -eq 3
check "RESET and SET pg_idgen.worker_id = -1 (not set) still work in a session" \
    "$(q "$C" "RESET pg_idgen.worker_id" "SET pg_idgen.worker_id = -1" "RESET pg_idgen.worker_id" "SELECT current_setting('pg_idgen.worker_id')" 2>&1 | grep -Ev '^(RESET|SET)$')" == 3
check "ALTER SYSTEM SET pg_idgen.worker_id (the node's own postgresql.auto.conf) is still accepted" \
    "$(q "$C" "ALTER SYSTEM SET pg_idgen.worker_id = 4" "ALTER SYSTEM RESET pg_idgen.worker_id" "SELECT 'ok'")" == ok

finish
